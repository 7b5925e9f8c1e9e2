"""``flowbalance place``: the ``--replica-assignment`` for new topics and added partitions that keeps the cluster
balanced, beside what Kafka's default placement would give."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from flowbalance.errors import InputError, RequestError
from flowbalance.formats.topicsfile import read_topics
from flowbalance.formats.writers import check_outputs, write_atomic
from flowbalance.load import load_cluster, read_text
from flowbalance.place import NewTopic, PlaceRequest, place, place_summary, place_text
from flowbalance.request import parse_broker_ids

from . import options as o
from .batches import _HOST
from .render import console, json_text, safe_text, warn

# the library's fields -> the flags that set them (its errors name fields; the user typed flags)
FLAGS = {"topic": "--topic", "partitions": "--partitions", "rf": "--rf", "add_partitions": "--add-partitions",
         "exclude_brokers": "--exclude-brokers", "seed": "--seed", "topics": "--topic"}


def place_command(
    current: Path = o.Current,
    topic: Optional[str] = typer.Option(None, "--topic", help="The topic to create, or (with --add-partitions) to "
                                        "append partitions to."),
    partitions: Optional[int] = typer.Option(None, "--partitions", help="Partitions of the new topic."),
    rf: Optional[int] = typer.Option(None, "--rf", help="Replication factor of the new topic."),
    add_partitions: Optional[int] = typer.Option(None, "--add-partitions",
                                                 help="Append this many partitions to the existing --topic (its RF)."),
    topics_file: o.PathOpt = typer.Option(None, "--topics-file", help="Several topics at once, placed jointly in "
                                          "file order: CSV topic,partitions,rf (partitions +N appends N)."),
    brokers: o.PathOpt = o.BrokersOpt,
    exclude_brokers: Optional[str] = typer.Option(None, "--exclude-brokers",
                                                  help="Brokers that take no new replica, e.g. 3,4."),
    seed: int = typer.Option(0, "--seed", help="Seed of Kafka's random start index and replica shift, for the "
                             "comparison with Kafka's default placement."),
    bootstrap_server: str = typer.Option("$BOOTSTRAP", "--bootstrap-server",
                                         help="HOST:PORT in the kafka-topics commands printed."),
    out: o.PathOpt = typer.Option(None, "-o", "--out", help="Also write the placement as JSON here (what --json "
                                  "prints)."),
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
) -> None:
    """Print the --replica-assignment for new topics (kafka-topics --create) or added partitions (--alter
    --partitions) that keeps replicas, per-topic spread, leaders and failover even, beside Kafka's default."""
    if bootstrap_server != "$BOOTSTRAP" and not _HOST.match(bootstrap_server):
        raise InputError("--bootstrap-server", "", "expected HOST:PORT[,HOST:PORT...] without spaces or shell "
                         "characters", bootstrap_server)
    items, labels = _items(topic, partitions, rf, add_partitions, topics_file)
    excluded = tuple(parse_broker_ids(exclude_brokers, "exclude_brokers")) if exclude_brokers else ()
    inputs = [str(p) for p in (current, brokers, topics_file) if p is not None]
    if out is not None:
        check_outputs([str(out)], inputs)
    loaded = load_cluster(current, brokers=brokers, fmt=format, disable_rack_aware=disable_rack_aware)
    try:
        placed = place(loaded.state, PlaceRequest(items, excluded, seed))
    except RequestError as err:
        raise _relabel(err, labels) from None
    if out is not None:
        write_atomic({str(out): place_text(placed, bootstrap=bootstrap_server)}, inputs)
    for w in loaded.warnings:
        warn(w)
    data = place_summary(placed, bootstrap=bootstrap_server)
    if json_out:
        sys.stdout.write(json_text(data))
        return
    render_place(data, console(), str(out) if out is not None else None)


def _relabel(err: RequestError, labels: dict[str, str]) -> InputError:
    """The library's error under the flags (or the topics file's columns) that set its fields, remedy too."""
    shown = err.as_flags(labels)
    return InputError(shown.source, "", shown.message + _remedy(err, labels), err.value, has_value=err.has_value)


def _remedy(err: RequestError, labels: dict[str, str]) -> str:
    if err.remedy is None:
        return ""
    name = err.remedy[0]
    return f" (use {labels.get(name, name)})"


def _items(topic, partitions, rf, add_partitions, topics_file) -> tuple[tuple[NewTopic, ...], dict[str, str]]:
    """The request's items from the flags or the topics file, and how its errors name the fields."""
    if topics_file is not None:
        if any(v is not None for v in (topic, partitions, rf, add_partitions)):
            raise InputError("--topics-file", "", "give the topics in the file or with --topic, not both",
                             str(topics_file))
        src = str(topics_file)
        labels = {"topic": f"{src}: topic", "partitions": f"{src}: partitions", "rf": f"{src}: rf",
                  "add_partitions": "+N in the partitions column", "exclude_brokers": "--exclude-brokers",
                  "seed": "--seed", "topics": src}
        return read_topics(read_text(topics_file), src), labels
    if topic is None:
        raise InputError("--topic", "", "name the topic to place (or give --topics-file)")
    if add_partitions is not None:
        if partitions is not None or rf is not None:
            raise InputError("--add-partitions", "", "added partitions take the topic's own RF: give neither "
                             "--partitions nor --rf", add_partitions)
        item = NewTopic(topic, add_partitions, None, add=True)
    else:
        if partitions is None or rf is None:
            raise InputError("--partitions" if partitions is None else "--rf", "",
                             "a new topic needs --partitions and --rf (or --add-partitions for an existing topic)")
        item = NewTopic(topic, partitions, rf)
    return (item,), FLAGS


def render_place(d: dict, con, written: str | None) -> None:
    """The commands to run, then the cluster before → after, with Kafka's default beside it."""
    from rich.table import Table

    for t in d["topics"]:
        what = (f"create, {t['new_partitions']} partitions, RF {t['rf']}" if t["action"] == "create" else
                f"add {t['new_partitions']} partitions to {t['existing_partitions']} (RF {t['rf']})")
        con.print(f"[bold]{safe_text(t['topic'])}[/bold]: {what}")
        con.print(t["command"], markup=False, highlight=False)
    c = d["cluster"]
    tab = Table(title="Cluster before → after (and with Kafka's default placement instead, "
                      f"seed {d['request']['seed']})", title_justify="left")
    for col in ("metric", "before", "after", "Kafka default"):
        tab.add_column(col, justify="left" if col == "metric" else "right")
    rows = [("replica spread", "replica_spread"), ("per-topic spread (worst)", "topic_spread"),
            ("leader spread", "leader_spread"), ("failover spread (worst broker down)", "failover_worst_spread"),
            ("failover spread (worst rack down)", "rack_failover_worst_spread"), ("rack violations", "rack_violations")]
    for label, key in rows:
        if c["before"][key] is None:
            continue
        tab.add_row(label, *(str(c[s][key]) for s in ("before", "after", "kafka_default")))
    for t in d["topics"]:
        before = t["spread_before"] or {}
        for label, key in (("replica spread", "replica_spread"), ("leader spread", "leader_spread")):
            tab.add_row(f"{safe_text(t['topic'])}: {label}", str(before.get(key, "-")), str(t["spread_after"][key]),
                        str(t["kafka_default"][key]))
    con.print(tab)
    met = "met: no order of these replica sets does better" if d["failover_bound_met"] else \
        f"no order of these replica sets goes below {d['failover_bound']}"
    con.print(f"[bold]Failover[/bold] — worst spread {c['after']['failover_worst_spread']}; {met}")
    if written:
        con.print(f"wrote {safe_text(written)}")
