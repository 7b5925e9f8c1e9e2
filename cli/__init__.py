"""The flowbalance command line (typer). Installed as the package ``flowbalance_cli``."""
