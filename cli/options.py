"""Options shared by several commands (typer annotations), so each is declared once."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

Current = typer.Argument(..., help="Current assignment: reassignment JSON, --generate output or kafka-topics --describe text.",
                         show_default=False)
BrokersOpt = typer.Option(None, "--brokers", help="Broker file: JSON or CSV id,rack[,weight][,capacity_bytes].")
SizesOpt = typer.Option(None, "--sizes", help="kafka-log-dirs --describe output (partition sizes).")
RemoveOpt = typer.Option(None, "--remove", help="Brokers to remove, e.g. 19 or 3,4,5.")
FormatOpt = typer.Option(None, "--format", help="Force the CURRENT format: json, generate or describe.")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of tables.")
NoRackOpt = typer.Option(False, "--disable-rack-aware", help="Ignore racks (needed when only some brokers have one).")

PathOpt = Optional[Path]
