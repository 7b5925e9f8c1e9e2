"""Options shared by several commands (typer annotations), so each is declared once."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from flowbalance.request import FLAGS

Current = typer.Argument(..., help="Current assignment: reassignment JSON, --generate output or kafka-topics --describe text.",
                         show_default=False)
BrokersOpt = typer.Option(None, "--brokers", help="Broker file: JSON or CSV id,rack[,weight][,capacity_bytes].")
SizesOpt = typer.Option(None, "--sizes", help="kafka-log-dirs --describe output (partition sizes).")
RemoveOpt = typer.Option(None, "--remove", help="Brokers to remove, e.g. 19 or 3,4,5.")
FormatOpt = typer.Option(None, "--format", help="Force the CURRENT format: json, generate or describe.")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of tables.")
NoRackOpt = typer.Option(False, "--disable-rack-aware", help="Ignore racks (needed when only some brokers have one).")

PathOpt = Optional[Path]
AllRowsOpt = typer.Option(False, "--all", help="Show every row of the tables (by default: one screen, the least and "
                                               "most loaded brokers and the worst failures).")

# the planning request, shared by plan and compare
AddOpt = typer.Option(None, "--add", help="New brokers to fill, e.g. 20,21.")
ReplaceOpt = typer.Option(None, "--replace", help="Replace brokers one for one, e.g. 7:31,8:32.")
RFOpt = typer.Option(None, "--replication-factor", help="New RF for every selected topic.")
TopicRFOpt = typer.Option(None, "--topic-rf", help="New RF for one topic, TOPIC=N (repeatable).")
TopicsOpt = typer.Option(None, "--topics", help="Only plan topics whose name matches this regex.")
ExcludeOpt = typer.Option(None, "--exclude-topics", help="Leave topics matching this regex alone.")
FromTargetOpt = typer.Option(False, "--from-target",
                             help="CURRENT is a describe taken while a reassignment runs: plan those partitions from "
                                  "its target (Replicas minus Removing Replicas) instead of refusing.")
MoveUnhealthyOpt = typer.Option(False, "--move-unhealthy",
                                help="Also plan leaderless, offline and under-replicated partitions (left in place "
                                     "by default: their moves cannot complete until they are back).")
NoPerTopicOpt = typer.Option(False, "--no-per-topic", help="Balance cluster totals only, not each topic.")
PerTopicOpt = typer.Option("spread", "--per-topic", metavar="spread|strict",
                           help="spread (default): the fewest moves for count balance first, then the most even "
                                "topics among those plans; strict: every topic within its share first, then the "
                                "fewest moves (can cost many times the minimum on Kafka-placed clusters).")
ExtraMovesOpt = typer.Option("0", "--extra-moves", metavar="N|P%",
                             help="Move budget beyond the fewest moves, spent where it most lowers the per-topic "
                                  "spread, then the failover spread: a number of moves, or a percentage of the "
                                  "replicas in scope (2%).")
ExcludeBrokersOpt = typer.Option(None, "--exclude-brokers",
                                 help="Brokers that receive no new replica (fenced, cordoned, full); they keep or "
                                      "lose theirs, e.g. 3,4.")
PinOpt = typer.Option(None, "--pin", metavar="PATTERN",
                      help="Leave partitions exactly as they are: a topic regex, TOPIC:PARTITION[,...] or @FILE "
                           "(one pattern per line); repeatable.")
DemoteOpt = typer.Option(None, "--demote",
                         help="Move every preferred leadership off these brokers by reordering only (no replica "
                              "moves), e.g. 3,4.")
StrategyOpt = typer.Option("flow", "--strategy",
                           help="flow: fewest moves by flow networks (default); template: rotation-order templates "
                                "matched to the partitions (even failover, more moves).")

ObjectiveOpt = typer.Option("moves", "--objective",
                            help="moves: fewest replica moves (default); bytes: among those, the fewest bytes (needs --sizes).")
BalanceOpt = typer.Option("count", "--balance",
                          help="count: replica counts (default); count+bytes: also disk use within --disk-tolerance; "
                               "bytes: disk use only (needs --sizes).")
DiskToleranceOpt = typer.Option(1.05, "--disk-tolerance",
                                help="Largest disk use / weighted mean per broker with --balance (where achievable).")

QuietOpt = typer.Option(False, "--quiet", "-q", help="Print nothing but errors (files are still written).")
VerboseOpt = typer.Option(False, "--verbose", "-v", help="Also print the time of each step and the solver notes.")
STATUS_FLAGS = {"from_target": "--from-target", "move_unhealthy": "--move-unhealthy"}  # plan_input names them in messages
# every library parameter or request field the command line sets, with its flag (errors are shown with these)
CLI_FLAGS = {**FLAGS, **STATUS_FLAGS, "fmt": "--format", "disable_rack_aware": "--disable-rack-aware"}
BalanceDirsOpt = typer.Option(False, "--balance-dirs",
                              help="Move replicas between each broker's log directories (JBOD; a copy on the "
                                   "broker's own disks, no network) until each is within --dir-tolerance of its "
                                   "share; needs --sizes from kafka-log-dirs.")
DirToleranceOpt = typer.Option(1.1, "--dir-tolerance", help="With --balance-dirs: the largest directory use over "
                                                             "its share of the broker's bytes (1.0 .. 10.0).")
RemoveLogDirOpt = typer.Option(None, "--remove-log-dir", metavar="BROKER:PATH",
                               help="Empty this log directory into the broker's other directories "
                                    "(e.g. 3:/var/lib/kafka/data-1); repeatable.")
