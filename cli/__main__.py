"""``python -m flowbalance_cli`` runs the command line."""
from .app import main

main()
