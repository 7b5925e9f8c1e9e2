"""A table of bad inputs for every command: each case ends in one error line naming the file or flag, the place
and the value, with exit code 2 (or, where the docs say so, a warning and the usual exit code); nothing is
written and no input changes.

Every case writes the same small, valid cluster into its own folder (a reassignment JSON, a describe, a
``--generate`` output, broker files, kafka-log-dirs output, a sizes table and a plan), replaces or adds the
files it is about, and runs one command in-process from that folder (relative names, so the error line is
compared with what the operator typed). Afterwards it checks stderr line by line, that every file in the
folder is byte-identical, and that no new file (output, batch file, ``.flowbalance-*.tmp``) appeared.
Cases that could exhaust the machine if the refusal were missing, and the one that starts Spark, run in a
subprocess with a time and memory limit.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Union

import pytest

# ---- the valid cluster every case starts from ---------------------------------------------------------------
# brokers 1..4 on racks a, b, a, b; orders: 4 partitions RF 2, clicks: 2 partitions RF 2 (balanced, rack-safe)

ROWS = [("orders", 0, [1, 2]), ("orders", 1, [2, 3]), ("orders", 2, [3, 4]), ("orders", 3, [4, 1]),
        ("clicks", 0, [1, 2]), ("clicks", 1, [3, 4])]
SIZE = {("orders", p): 1000 * (p + 1) for p in range(4)} | {("clicks", p): 500 * (p + 1) for p in range(2)}


def P(topic="orders", partition=0, replicas=(1, 2), **extra) -> dict:
    """One entry of a reassignment JSON."""
    reps = list(replicas) if isinstance(replicas, (list, tuple)) else replicas  # wrong types kept as given
    return {"topic": topic, "partition": partition, "replicas": reps, **extra}


def parts(*items) -> str:
    """A reassignment JSON document with these partition entries."""
    return json.dumps({"version": 1, "partitions": list(items)})


def assignment(rows=ROWS) -> str:
    """The base cluster as a reassignment JSON."""
    return parts(*(P(t, p, r) for t, p, r in rows))


def dline(topic: str, p: int, reps, leader=None, isr=None, extra: str = "") -> str:
    """One describe partition line (tab separated, as kafka-topics prints it)."""
    lead = reps[0] if leader is None else leader
    isr_text = ",".join(map(str, reps)) if isr is None else isr
    return (f"\tTopic: {topic}\tPartition: {p}\tLeader: {lead}\tReplicas: {','.join(map(str, reps))}"
            f"\tIsr: {isr_text}{extra}")


def describe(rows=ROWS, *, lines: Mapping | None = None, counts: Mapping | None = None) -> str:
    """The base describe; ``lines={(topic, p): text or None}`` swaps (or drops) partition lines, ``counts``
    overrides a header's PartitionCount."""
    lines = dict(lines or {})
    counts = dict(counts or {})
    out: list[str] = []
    for topic in dict.fromkeys(t for t, _, _ in rows):
        mine = [(p, r) for t, p, r in rows if t == topic]
        n = counts.get(topic, len(mine))
        out.append(f"Topic: {topic}\tTopicId: Q{topic[:4].upper()}x9Yk2bTrWv0aLm3Q\tPartitionCount: {n}"
                   f"\tReplicationFactor: 2\tConfigs: min.insync.replicas=1")
        for p, r in mine:
            text = lines.get((topic, p), dline(topic, p, r))
            if text is not None:
                out.append(text)
    return "\n".join(out) + "\n"


def generate_output(doc: str) -> str:
    """kafka-reassign-partitions --generate output around a current assignment JSON."""
    return (f"Current partition replica assignment\n{doc}\n\n"
            f"Proposed partition reassignment configuration\n{assignment()}\n")


def logdirs(entries=None) -> str:
    """kafka-log-dirs --describe output; ``entries`` = [(broker, partition name, size)]."""
    if entries is None:
        entries = [(b, f"{t}-{p}", SIZE[(t, p)]) for t, p, r in ROWS for b in r]
    brokers: dict[int, list] = {}
    for b, name, size in entries:
        brokers.setdefault(b, []).append({"partition": name, "size": size, "offsetLag": 0, "isFuture": False})
    doc = {"version": 1, "brokers": [{"broker": b, "logDirs": [{"logDir": "/data", "error": None, "partitions": ps}]}
                                     for b, ps in sorted(brokers.items())]}
    return ("Querying brokers for log directories information\n"
            "Received log directory information from brokers 1,2,3,4\n" + json.dumps(doc) + "\n")


def sizes_csv(extra: str = "", rows=None) -> str:
    rows = [(t, p, SIZE[(t, p)]) for t, p, _ in ROWS] if rows is None else rows
    return "topic,partition,bytes\n" + "".join(f"{t},{p},{b}\n" for t, p, b in rows) + extra


BROKERS_CSV = "id,rack\n1,a\n2,b\n3,a\n4,b\n"
BROKERS_JSON = json.dumps([{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3, "rack": "a"},
                           {"id": 4, "rack": "b"}])
PLAN = parts(P("orders", 2, [3, 2]), P("orders", 3, [2, 1]))  # broker 4's replicas onto 2 (same rack)

BASE: dict[str, Union[str, bytes, None]] = {
    "a.json": assignment(),
    "d.txt": describe(),
    "g.txt": generate_output(assignment()),
    "b.csv": BROKERS_CSV,
    "b.json": BROKERS_JSON,
    "logdirs.txt": logdirs(),
    "sizes.csv": sizes_csv(),
    "plan.json": PLAN,
    "fleet/c1/assignment.json": assignment(),
    "fleet/c1/brokers.csv": BROKERS_CSV,
    "fleet/fleet.json": json.dumps({"clusters": {"c1": {"remove": [4]}}}),
}
DIR = None  # a file value of None makes a folder


# ---- the table ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    needles: tuple[str, ...]  # substrings of the error line (or of the warning lines when code != 2)
    files: Mapping[str, Union[str, bytes, None]] = field(default_factory=dict)  # added to / replacing BASE
    code: int = 2
    warnings: int = 0  # warning lines before the error line (all lines when code != 2)
    isolate: bool = False  # run in a subprocess (Spark, or a refusal whose absence would exhaust memory)
    max_seconds: float | None = None
    may_write: tuple[str, ...] = ()  # files a failed run may leave (fleet: the JVM's log in -o, never a plan)


CASES: list[Case] = []


def case(id, args, *needles, files=None, **kw) -> None:
    CASES.append(Case(id, tuple(str(a) for a in args), tuple(str(n) for n in needles), dict(files or {}), **kw))


def plan_args(current="a.json", *more):
    return ["plan", current, "-o", "out.json", *more]


# -- malformed JSON (assignment, plan file, broker file, sizes) --
case("json_truncated", plan_args(), "a.json", "line 1", "malformed JSON",
     files={"a.json": '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,'})
case("json_trailing_comma", ["report", "a.json"], "a.json", "line 1", "malformed JSON",
     files={"a.json": '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]},]}'})
case("json_nul_byte", ["compare", "a.json"], "a.json", "line 2", "malformed JSON",
     files={"a.json": b'{"version":1,\n\x00"partitions":[]}'})
case("json_nul_in_string", plan_args(), "a.json", "malformed JSON",
     files={"a.json": b'{"version":1,"partitions":[{"topic":"or\x00ders","partition":0,"replicas":[1,2]}]}'})
case("json_not_utf8_topic", plan_args(), "a.json", "line 1", "UTF-8",
     files={"a.json": b'{"version":1,"partitions":[{"topic":"caf\xe9","partition":0,"replicas":[1,2]}]}'})
case("json_utf16_bom", ["check", "a.json"], "a.json", "line 1", "UTF-8",
     files={"a.json": parts(P()).encode("utf-16")})
case("json_utf8_bom_then_bad_partition", ["check", "a.json"], "a.json", "partitions[1].partition", "-7",
     files={"a.json": ("\ufeff" + parts(P(), P(partition=-7))).encode("utf-8")})
case("json_deeply_nested", ["check", "a.json"], "a.json", "nested too deeply",
     files={"a.json": '{"version":1,"partitions":' + "[" * 200000 + "]" * 200000 + "}"})
case("json_huge_number_text", ["check", "a.json"], "a.json", "partitions[0].partition", "out of range",
     files={"a.json": '{"version":1,"partitions":[{"topic":"orders","partition":' + "9" * 30 + ',"replicas":[1,2]}]}'})
case("json_empty_file", plan_args(), "a.json", "unknown format", "(got '')", files={"a.json": ""})
case("json_only_whitespace", ["report", "a.json"], "a.json", "unknown format", "(got '')",
     files={"a.json": "\n  \n\t\n"})
case("json_top_level_string", ["check", "a.json", "--format", "json"], "a.json", "top level", "str",
     files={"a.json": '  "partitions"'})
case("json_partitions_object", ["check", "a.json"], "a.json", "partitions", "expected a list", "dict",
     files={"a.json": '{"version":1,"partitions":{"topic":"orders"}}'})
case("json_version_2", plan_args(), "a.json", "version", "2",
     files={"a.json": json.dumps({"version": 2, "partitions": [P()]})})
case("json_no_partitions", plan_args(), "a.json", "partitions", "no partitions",
     files={"a.json": '{"version":1,"partitions":[]}'})
case("json_entry_not_object", ["check", "a.json"], "a.json", "partitions[1]", "expected an object",
     files={"a.json": '{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]}, [1,2]]}'})
case("json_missing_topic", ["compare", "a.json"], "a.json", "partitions[0].topic", "missing field",
     files={"a.json": json.dumps({"version": 1, "partitions": [{"partition": 0, "replicas": [1, 2]}]})})

# -- wrong types in an assignment JSON --
case("type_topic_number", plan_args(), "a.json", "partitions[0].topic", "5",
     files={"a.json": parts(P(topic=5))})
case("type_topic_null", ["check", "a.json"], "a.json", "partitions[2].topic", "(got",
     files={"a.json": parts(P(), P(partition=1), P(topic=None))})
case("type_partition_string", plan_args(), "a.json", "partitions[0].partition", "'1'",
     files={"a.json": parts(P(partition="1"))})
case("type_partition_float", ["report", "a.json"], "a.json", "partitions[0].partition", "1.0",
     files={"a.json": parts(P(partition=1.0))})
case("type_partition_bool", ["check", "a.json"], "a.json", "partitions[0].partition", "True",
     files={"a.json": parts(P(partition=True))})
case("type_partition_huge", plan_args(), "a.json", "partitions[0].partition", "out of range", str(2**40),
     files={"a.json": parts(P(partition=2**40))})
case("type_replicas_number", plan_args(), "a.json", "partitions[0].replicas", "3",
     files={"a.json": parts(P(replicas=3))})
case("type_replicas_null", ["compare", "a.json"], "a.json", "partitions[1].replicas", "(got",
     files={"a.json": parts(P(), P(partition=1, replicas=None))})
case("type_replicas_nested_list", ["check", "a.json"], "a.json", "partitions[0].replicas", "[1, 2]",
     files={"a.json": parts(P(replicas=[[1, 2], 3]))})
case("type_broker_string", plan_args(), "a.json", "partitions[0].replicas", "'x'",
     files={"a.json": parts(P(replicas=[1, "x"]))})
case("type_broker_integral_float", ["report", "a.json"], "a.json", "partitions[0].replicas", "2.0",
     files={"a.json": parts(P(replicas=[1, 2.0]))})
case("type_broker_bool", ["check", "a.json"], "a.json", "partitions[0].replicas", "True",
     files={"a.json": parts(P(replicas=[1, True]))})
case("type_broker_2_pow_40", plan_args(), "a.json", "partitions[0].replicas", "out of range", str(2**40),
     files={"a.json": parts(P(replicas=[1, 2**40]))})
case("type_log_dirs_string", ["check", "a.json"], "a.json", "partitions[0].log_dirs", "'any'",
     files={"a.json": parts(P(log_dirs="any"))})

# -- negative ids, duplicates, empty lists in an assignment JSON (-1 was once the padding, dropped silently) --
case("neg_broker_minus1_json_plan", plan_args(), "a.json", "partitions[0].replicas", "negative", "-1",
     files={"a.json": parts(P(replicas=[-1, 2]), P(partition=1))})
case("neg_broker_minus1_json_report", ["report", "a.json"], "a.json", "partitions[1].replicas", "negative", "-1",
     files={"a.json": parts(P(), P(partition=1, replicas=[3, -1]))})
case("neg_broker_minus1_generate", ["check", "g.txt"], "g.txt", "partitions[0].replicas", "negative", "-1",
     files={"g.txt": generate_output(parts(P(replicas=[2, -1])))})
case("neg_partition_plan", plan_args(), "a.json", "partitions[0].partition", "-1",
     files={"a.json": parts(P(partition=-1))})
case("dup_replica_plan", plan_args(), "a.json", "partitions[0].replicas", "broker 2 appears twice", "[2, 2]",
     files={"a.json": parts(P(replicas=[2, 2]))})
case("dup_partition_report", ["report", "a.json"], "a.json", "duplicate partition", "orders-0",
     files={"a.json": parts(P(), P(partition=0, replicas=[3, 4]))})
case("empty_replicas_compare", ["compare", "a.json"], "a.json", "partitions[0].replicas", "empty replica list",
     files={"a.json": parts(P(replicas=[]))})
case("generate_truncated_json", ["check", "g.txt"], "g.txt", "malformed JSON",
     files={"g.txt": 'Current partition replica assignment\n{"version":1,"partitions":[{"topic":"orders",'})

# -- describe problems --
case("describe_garbage_replicas", plan_args("d.txt"), "d.txt", "line 3", "Replicas", "'2;3'",
     files={"d.txt": describe(lines={("orders", 1): "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2;3\tIsr: 2"})})
case("describe_empty_replicas", ["check", "d.txt"], "d.txt", "line 2", "Replicas", "empty replica list",
     files={"d.txt": describe(lines={("orders", 0): "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: \tIsr: 1"})})
case("describe_truncated", ["check", "d.txt"], "d.txt", "orders", "PartitionCount: 3", "2",
     files={"d.txt": describe(rows=ROWS[:2] + ROWS[4:], counts={"orders": 3})})
case("describe_truncated_plan", plan_args("d.txt"), "d.txt", "clicks", "PartitionCount: 2", "1",
     files={"d.txt": describe(lines={("clicks", 1): None})})
case("describe_negative_broker", plan_args("d.txt"), "d.txt", "line 3", "Replicas", "negative", "-1",
     files={"d.txt": describe(lines={("orders", 1): dline("orders", 1, [2, -1], isr="2")})})
case("describe_negative_partition", ["report", "d.txt"], "d.txt", "line 2", "Partition", "-1",
     files={"d.txt": describe(lines={("orders", 0): dline("orders", -1, [1, 2])})})
case("describe_bad_leader", ["check", "d.txt"], "d.txt", "line 2", "Leader", "'x'",
     files={"d.txt": describe(lines={("orders", 0): dline("orders", 0, [1, 2], leader="x")})})
case("describe_dup_replica", ["compare", "d.txt"], "d.txt", "line 2: Replicas", "broker 1 appears twice",
     files={"d.txt": describe(lines={("orders", 0): dline("orders", 0, [1, 1])})})
case("describe_dup_partition", ["check", "d.txt"], "d.txt", "duplicate partition", "orders-1",
     files={"d.txt": describe(lines={("orders", 2): dline("orders", 1, [3, 4])})})
case("describe_bad_partition_count", ["check", "d.txt"], "d.txt", "line 1", "PartitionCount", "'four'",
     files={"d.txt": describe().replace("PartitionCount: 4", "PartitionCount: four")})
case("describe_field_twice", ["check", "d.txt"], "d.txt", "line 2", "Replicas", "appears twice",
     files={"d.txt": describe(lines={("orders", 0): dline("orders", 0, [1, 2]) + "\tReplicas: 1,2"})})
case("describe_adding_not_in_replicas", ["report", "d.txt"], "d.txt", "line 2", "Adding Replicas", "broker 4",
     files={"d.txt": describe(lines={("orders", 0): dline("orders", 0, [1, 2], extra="\tAdding Replicas: 4\tRemoving Replicas: ")})})
case("describe_in_flight_plan", plan_args("d.txt"), "d.txt", "orders-0", "--from-target",
     files={"d.txt": describe(lines={("orders", 0): dline(
         "orders", 0, [1, 2, 3], isr="1,2", extra="\tAdding Replicas: 3\tRemoving Replicas: 2")})})
case("describe_in_flight_plan_remove", plan_args("d.txt", "--remove", "4"), "d.txt", "clicks-1", "--from-target",
     files={"d.txt": describe(lines={("clicks", 1): dline(
         "clicks", 1, [3, 4, 2], extra="\tAdding Replicas: 2\tRemoving Replicas: 4")})})
case("describe_held_on_removed", plan_args("d.txt", "--remove", "1"), "orders-0", "remove",
     files={"d.txt": describe(lines={("orders", 0): dline(
         "orders", 0, [1, 2], leader="none", isr="", extra="\tOffline: 1,2")})})
case("describe_format_forced_on_json", ["check", "a.json", "--format", "describe"], "a.json", "no partition lines")
case("json_format_forced_on_describe", ["plan", "d.txt", "-o", "out.json", "--format", "json"], "d.txt",
     "malformed JSON")
case("generate_format_forced_on_json", ["report", "a.json", "--format", "generate"], "a.json",
     "Current partition replica assignment")
case("format_unknown_value", ["compare", "a.json", "--format", "xml"], "--format", "'xml'")
case("unknown_format_csv_text", ["report", "a.json"], "a.json", "unknown format", "'topic,partition,replicas'",
     files={"a.json": "topic,partition,replicas\norders,0,1 2\n"})

# -- forbidden topic names --
case("topic_name_space", plan_args(), "a.json", "partitions[0].topic", "invalid topic name", "'a b'",
     files={"a.json": parts(P(topic="a b"))})
case("topic_name_250_chars", ["check", "d.txt"], "d.txt", "Topic", "invalid topic name", "x" * 60,
     files={"d.txt": describe(rows=[("x" * 250, 0, [1, 2])])})
case("topic_name_dot", ["report", "a.json"], "a.json", "partitions[1].topic", "invalid topic name", "'.'",
     files={"a.json": parts(P(), P(topic=".", partition=0))})
case("topic_name_dotdot", ["check", "g.txt"], "g.txt", "topic", "invalid topic name", "'..'",
     files={"g.txt": generate_output(parts(P(topic="..")))})
case("topic_name_slash", ["compare", "a.json"], "a.json", "partitions[0].topic", "invalid topic name", "'t/x'",
     files={"a.json": parts(P(topic="t/x"))})
case("topic_name_empty", plan_args(), "a.json", "partitions[0].topic", "empty topic name",
     files={"a.json": parts(P(topic=""))})
case("topic_name_markup", ["check", "d.txt"], "d.txt", "invalid topic name", "[bold]x[/bold]",
     files={"d.txt": describe(rows=[("[bold]x[/bold]", 0, [1, 2])])})

# -- unreadable inputs --
case("missing_current_plan", ["plan", "nope.json", "-o", "out.json"], "nope.json", "cannot read")
case("missing_brokers_file", plan_args("a.json", "--brokers", "nope.csv"), "nope.csv", "cannot read")
case("missing_plan_file_report", ["report", "a.json", "--plan", "nope.json"], "nope.json", "cannot read")
case("missing_sizes_batches", ["batches", "plan.json", "--current", "a.json", "--sizes", "nope.txt", "-o", "bat"],
     "nope.txt", "cannot read")
case("directory_as_brokers", plan_args("a.json", "--brokers", "bdir"), "bdir", "directory", files={"bdir": DIR})
case("directory_as_sizes", ["report", "a.json", "--sizes", "sdir"], "sdir", "directory", files={"sdir": DIR})
case("directory_as_plan", ["batches", "pdir", "--current", "a.json", "-o", "bat"], "pdir", "directory",
     files={"pdir": DIR})

# -- broker file problems --
case("brokers_dup_id_csv_plan", plan_args("a.json", "--brokers", "b.csv"), "b.csv", "line 4", "duplicate broker id",
     "2", files={"b.csv": "id,rack\n1,a\n2,b\n2,a\n3,a\n4,b\n"})
case("brokers_missing_id_json", ["check", "a.json", "--brokers", "b.json"], "b.json", "[2].id", "missing field",
     files={"b.json": json.dumps([{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"rack": "a"}, {"id": 4}])})
case("brokers_no_id_column_csv", ["report", "a.json", "--brokers", "b.csv"], "b.csv", "line 1", "'rack'",
     files={"b.csv": "rack,weight\na,1\nb,1\n"})
case("brokers_rack_missing_json", plan_args("a.json", "--brokers", "b.json"), "b.json", "broker 3", "no rack",
     "--disable-rack-aware",
     files={"b.json": json.dumps([{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3}, {"id": 4, "rack": "b"}])})
case("brokers_weight_zero", plan_args("a.json", "--brokers", "b.csv"), "b.csv", "line 2", "weight", "'0'",
     files={"b.csv": "id,rack,weight\n1,a,0\n2,b,1\n3,a,1\n4,b,1\n"})
case("brokers_weight_negative_json", ["compare", "a.json", "--brokers", "b.json"], "b.json", "[1].weight", "-2",
     files={"b.json": json.dumps([{"id": 1, "rack": "a"}, {"id": 2, "rack": "b", "weight": -2},
                                  {"id": 3, "rack": "a"}, {"id": 4, "rack": "b"}])})
case("brokers_weight_nan", ["check", "a.json", "--brokers", "b.csv"], "b.csv", "line 3", "weight", "'nan'",
     files={"b.csv": "id,rack,weight\n1,a,1\n2,b,nan\n3,a,1\n4,b,1\n"})
case("brokers_weight_inf", ["report", "a.json", "--brokers", "b.csv"], "b.csv", "line 5", "weight", "'inf'",
     files={"b.csv": "id,rack,weight\n1,a,1\n2,b,1\n3,a,1\n4,b,inf\n"})
case("brokers_weight_bool_json", ["check", "a.json", "--brokers", "b.json"], "b.json", "[0].weight", "True",
     files={"b.json": json.dumps([{"id": 1, "weight": True}, {"id": 2}, {"id": 3}, {"id": 4}])})
case("brokers_capacity_negative_csv", plan_args("a.json", "--brokers", "b.csv"), "b.csv", "line 2",
     "capacity_bytes", "'-5'", files={"b.csv": "id,rack,weight,capacity_bytes\n1,a,1,-5\n2,b,1,\n3,a,1,\n4,b,1,\n"})
case("brokers_capacity_fraction_json", ["check", "a.json", "--brokers", "b.json"], "b.json", "[3].capacity_bytes",
     "1.5", files={"b.json": json.dumps([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4, "capacity_bytes": 1.5}])})
case("brokers_unknown_state", ["check", "a.json", "--brokers", "b.json"], "b.json", "[1].state", "'retired'",
     files={"b.json": json.dumps([{"id": 1}, {"id": 2, "state": "retired"}, {"id": 3}, {"id": 4}])})
case("brokers_unknown_field", ["report", "a.json", "--brokers", "b.json"], "b.json", "[0].host", "unknown field",
     files={"b.json": json.dumps([{"id": 1, "host": "k1"}, {"id": 2}, {"id": 3}, {"id": 4}])})
case("brokers_neg_id_csv", ["check", "a.json", "--brokers", "b.csv"], "b.csv", "line 3", "-1",
     files={"b.csv": "id,rack\n1,a\n-1,b\n2,b\n3,a\n4,b\n"})
case("brokers_neg_id_json_list", plan_args("a.json", "--brokers", "b.json"), "b.json", "[4].id", "-1",
     files={"b.json": json.dumps([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}, {"id": -1}])})
case("brokers_neg_id_json_map", ["report", "a.json", "--brokers", "b.json"], "b.json", "'-1'", "-1",
     files={"b.json": json.dumps({"1": "a", "2": "b", "3": "a", "4": "b", "-1": "a"})})
case("brokers_bool_id_json", ["check", "a.json", "--brokers", "b.json"], "b.json", "[0].id", "True",
     files={"b.json": json.dumps([{"id": True}, {"id": 2}, {"id": 3}, {"id": 4}])})
case("brokers_huge_id_json", ["check", "a.json", "--brokers", "b.json"], "b.json", "[3].id", str(2**40),
     files={"b.json": json.dumps([{"id": 1}, {"id": 2}, {"id": 3}, {"id": 2**40}])})
case("brokers_float_id_csv", ["compare", "a.json", "--brokers", "b.csv"], "b.csv", "line 2", "'1.5'",
     files={"b.csv": "id,rack\n1.5,a\n2,b\n3,a\n4,b\n"})
case("brokers_empty_file", plan_args("a.json", "--brokers", "b.csv"), "b.csv", "no brokers", files={"b.csv": ""})
case("brokers_list_of_numbers", ["check", "a.json", "--brokers", "b.json"], "b.json", "[0]", "expected an object",
     "int", files={"b.json": "[1, 2, 3, 4]"})
case("brokers_too_many_columns", ["check", "a.json", "--brokers", "b.csv"], "b.csv", "line 2", "too many columns",
     files={"b.csv": "id,rack\n1,a,1,100,live,/d=1,x\n2,b\n3,a\n4,b\n"})
case("brokers_malformed_json", ["report", "a.json", "--brokers", "b.json"], "b.json", "line 1", "malformed JSON",
     files={"b.json": '[{"id": 1, "rack": "a"},'})
case("brokers_unlisted_broker_plan", plan_args("a.json", "--brokers", "b.csv"), "a.json", "broker 4",
     "is not listed in", "b.csv", files={"b.csv": "id,rack\n1,a\n2,b\n3,a\n"})

# -- hostile names: shown literally, never read as terminal markup --
case("hostile_rack_too_many_columns", ["check", "a.json", "--brokers", "b.csv"], "b.csv", "line 3", "[/a]",
     files={"b.csv": "id,rack\n1,a\n2,[/a],1,100,live,/d=1,extra\n3,a\n4,b\n"})
case("hostile_rack_then_unknown_remove", plan_args("a.json", "--brokers", "b.csv", "--remove", "9"),
     "--remove", "9", files={"b.csv": "id,rack\n1,[/a]\n2,[bold]x[/bold]\n3,[/a]\n4,[bold]x[/bold]\n"})
case("hostile_rack_json_not_string", ["report", "a.json", "--brokers", "b.json"], "b.json", "[1].rack",
     "['[/a]']", files={"b.json": json.dumps([{"id": 1, "rack": "[bold]x[/bold]"}, {"id": 2, "rack": ["[/a]"]},
                                               {"id": 3, "rack": "a"}, {"id": 4, "rack": "b"}])})
case("hostile_rack_missing_rack", ["compare", "a.json", "--brokers", "b.csv"], "b.csv", "broker 4", "no rack",
     files={"b.csv": "id,rack\n1,[/a]\n2,[bold]x[/bold]\n3,[/a]\n4,\n"})
case("hostile_topic_rf_markup", plan_args("a.json", "--topic-rf", "[bold]x[/bold]=2"), "--topic-rf",
     "unknown topic", "[bold]x[/bold]")

# -- sizes problems --
case("sizes_negative_csv", plan_args("a.json", "--sizes", "sizes.csv"), "sizes.csv", "line 3", "-5",
     files={"sizes.csv": "topic,partition,bytes\norders,0,1000\norders,1,-5\n"})
case("sizes_not_integer_csv", ["report", "a.json", "--sizes", "sizes.csv"], "sizes.csv", "line 2", "'1.5'",
     files={"sizes.csv": "topic,partition,bytes\norders,0,1.5\n"})
case("sizes_text_csv", ["check", "a.json", "--sizes", "sizes.csv"], "sizes.csv", "line 4", "'big'",
     files={"sizes.csv": sizes_csv().replace("orders,2,3000", "orders,2,big")})
case("sizes_json_bytes_string", ["compare", "a.json", "--sizes", "sizes.json"], "sizes.json", "[0].bytes", "'10'",
     files={"sizes.json": json.dumps([{"topic": "orders", "partition": 0, "bytes": "10"}])})
case("sizes_negative_partition_csv", ["check", "a.json", "--sizes", "sizes.csv"], "sizes.csv", "line 2", "-1",
     files={"sizes.csv": "topic,partition,bytes\norders,-1,10\n"})
case("sizes_bad_header_csv", ["check", "a.json", "--sizes", "sizes.csv"], "sizes.csv", "line 1", "'topic,part,bytes'",
     files={"sizes.csv": "topic,part,bytes\norders,0,10\n"})
case("sizes_empty_file", ["check", "a.json", "--sizes", "sizes.csv"], "sizes.csv", "no partition sizes",
     files={"sizes.csv": ""})
case("logdirs_negative_size_plan", plan_args("a.json", "--sizes", "logdirs.txt"), "logdirs.txt",
     "brokers[1].logDirs[0].partitions[0].size", "-1",
     files={"logdirs.txt": logdirs([(1, "orders-0", 10), (2, "orders-0", -1)])})
case("logdirs_size_above_int64", ["report", "a.json", "--sizes", "logdirs.txt"], "logdirs.txt", "size",
     str(2**64), files={"logdirs.txt": logdirs([(1, "orders-0", 2**64)])})
case("logdirs_truncated", ["check", "a.json", "--sizes", "logdirs.txt"], "logdirs.txt", "malformed JSON",
     files={"logdirs.txt": logdirs()[:-40]})
case("logdirs_broker_string", ["check", "a.json", "--sizes", "logdirs.txt"], "logdirs.txt", "brokers[0].broker",
     "'1'", files={"logdirs.txt": logdirs().replace('"broker": 1,', '"broker": "1",')})
case("sizes_unknown_partition_is_warning", ["check", "a.json", "--sizes", "sizes.csv"], "sizes.csv",
     "1 partitions are not in the assignment", code=0, warnings=1,
     files={"sizes.csv": sizes_csv("nope,0,5\n")})

# -- flags out of range --
case("rf_zero", plan_args("a.json", "--replication-factor", "0"), "--replication-factor", "0")
case("rf_negative", ["compare", "a.json", "--replication-factor", "-1"], "--replication-factor", "-1")
case("rf_above_brokers", plan_args("a.json", "--replication-factor", "5"), "replication factor 5", "(4)")
case("rf_and_topic_rf", plan_args("a.json", "--replication-factor", "2", "--topic-rf", "orders=3"),
     "--replication-factor", "--topic-rf")
case("topic_rf_zero", plan_args("a.json", "--topic-rf", "orders=0"), "--topic-rf", "orders=0")
case("topic_rf_no_equals", plan_args("a.json", "--topic-rf", "nope"), "--topic-rf", "TOPIC=N", "'nope'")
case("topic_rf_unknown_topic", ["compare", "a.json", "--topic-rf", "nope=2"], "--topic-rf", "unknown topic", "'nope'")
case("topic_rf_above_brokers", plan_args("a.json", "--topic-rf", "clicks=9"), "replication factor 9", "clicks")
case("disk_tolerance_half", plan_args("a.json", "--sizes", "sizes.csv", "--balance", "count+bytes",
                                      "--disk-tolerance", "0.5"), "--disk-tolerance", "0.5")
case("disk_tolerance_nan", plan_args("a.json", "--sizes", "sizes.csv", "--balance", "bytes",
                                     "--disk-tolerance", "nan"), "--disk-tolerance", "nan")
case("disk_tolerance_text", plan_args("a.json", "--disk-tolerance", "abc"), "--disk-tolerance", "'abc'")
case("strategy_unknown", plan_args("a.json", "--strategy", "nope"), "--strategy", "'nope'")
case("objective_unknown", plan_args("a.json", "--objective", "nope"), "--objective", "'nope'")
case("balance_unknown", plan_args("a.json", "--balance", "nope"), "--balance", "'nope'")
case("objective_bytes_without_sizes", plan_args("a.json", "--objective", "bytes"), "--objective", "partition sizes",
     "'bytes'")
case("balance_bytes_with_template", plan_args("a.json", "--sizes", "sizes.csv", "--balance", "bytes", "--strategy",
                                              "template"), "--balance", "template", "'bytes'")
case("stages_unknown", plan_args("a.json", "--stages", "nope"), "--stages", "'nope'")
case("stages_empty", plan_args("a.json", "--stages", " , "), "--stages", "no stage")
case("stages_rf_without_replicas", plan_args("a.json", "--stages", "leaders", "--replication-factor", "3"),
     "--stages", "replicas", "leaders")
case("topics_bad_regex", plan_args("a.json", "--topics", "("), "--topics", "regular expression", "'('")
case("exclude_topics_bad_regex", ["compare", "a.json", "--exclude-topics", "[a-"], "--exclude-topics",
     "regular expression", "'[a-'")
case("topics_match_nothing", plan_args("a.json", "--topics", "payments.*"), "--topics", "matches no topic",
     "'payments.*'")
case("check_leader_spread_zero", ["check", "a.json", "--max-leader-spread", "0"], "--max-leader-spread", "0")
case("check_topic_spread_text", ["check", "a.json", "--max-topic-spread", "two"], "--max-topic-spread", "'two'")
case("missing_required_out", ["plan", "a.json"], "plan", "-o")
case("unknown_command", ["rebalance", "a.json"], "rebalance")
case("unknown_option_report", ["report", "a.json", "--pdf", "x.pdf"], "--pdf")

# -- unknown brokers and contradictory requests --
case("remove_unknown_plan", plan_args("a.json", "--remove", "9"), "--remove", "unknown broker", "9")
case("remove_unknown_report", ["report", "a.json", "--remove", "7"], "--remove", "unknown broker", "7")
case("remove_negative_text", plan_args("a.json", "--remove", "-1"), "--remove", "'-1'")
case("add_not_a_number", ["compare", "a.json", "--add", "five"], "--add", "'five'")
case("replace_unknown_old", plan_args("a.json", "--replace", "9:10"), "--replace", "unknown broker", "9:10")
case("replace_bad_syntax", plan_args("a.json", "--replace", "1-10"), "--replace", "OLD:NEW", "'1-10'")
case("replace_two_onto_one", plan_args("a.json", "--replace", "1:9,2:9"), "--replace", "same broker", "1:9,2:9")
case("add_and_remove_same", plan_args("a.json", "--add", "3", "--remove", "3"), "--add", "--remove", "3")
case("replace_onto_live_broker", plan_args("a.json", "--replace", "4:1"), "--replace", "1", "holds replicas", "4:1")
case("add_existing_broker", ["compare", "a.json", "--add", "2"], "--add", "already", "2")
case("replace_and_remove_same", plan_args("a.json", "--replace", "1:9", "--remove", "1"), "--replace", "--remove",
     "1:9")
case("remove_every_broker_plan", plan_args("a.json", "--remove", "1,2,3,4"), "--remove", "every broker", "1,2,3,4")
case("remove_every_broker_compare", ["compare", "a.json", "--remove", "4,3,2,1"], "--remove", "every broker")
case("add_without_rack", plan_args("a.json", "--brokers", "b.csv", "--add", "9"), "--add", "rack", "9")

# -- output problems --
case("out_is_input", ["plan", "a.json", "-o", "a.json"], "a.json", "input")
case("rollback_is_brokers", plan_args("a.json", "--brokers", "b.csv", "--rollback", "b.csv"), "b.csv", "input")
case("out_folder_missing", ["plan", "a.json", "-o", "nowhere/out.json"], "nowhere", "does not exist")
case("out_is_directory", ["plan", "a.json", "-o", "odir"], "odir", "directory", files={"odir": DIR})
case("out_named_twice", ["plan", "a.json", "-o", "x.json", "--rollback", "r.json", "--election", "x.json"],
     "x.json", "twice")
case("out_same_via_dotdot", ["plan", "a.json", "-o", "x.json", "--rollback", "sub/../x.json"], "x.json", "twice",
     files={"sub": DIR})
case("html_is_input", ["report", "a.json", "--plan", "plan.json", "--html", "plan.json"], "plan.json", "input")
case("html_folder_missing", ["report", "a.json", "--html", "nowhere/r.html"], "nowhere", "does not exist")
case("batches_out_is_file", ["batches", "plan.json", "--current", "a.json", "-o", "b.csv"], "--out",
     "not a folder", "b.csv")
case("batches_out_holds_plan", ["batches", "bat/rollback.json", "--current", "a.json", "-o", "bat"],
     "rollback.json", "input", files={"bat/rollback.json": PLAN})
case("generate_out_is_file", ["generate", "--brokers", "3", "--topics", "2", "-o", "a.json"], "--out",
     "not a folder", "a.json")

# -- report --plan and batches with bad plans --
case("report_plan_unknown_partition", ["report", "a.json", "--plan", "plan.json"], "plan.json", "partitions[1]",
     "not in the current assignment", "orders-9", files={"plan.json": parts(P("orders", 2, [3, 2]), P("orders", 9, [1, 2]))})
case("report_plan_negative_broker", ["report", "a.json", "--plan", "plan.json"], "plan.json",
     "partitions[0].replicas", "negative", "-1", files={"plan.json": parts(P("orders", 2, [-1, 2]))})
case("report_plan_new_broker_with_racks", ["report", "a.json", "--brokers", "b.csv", "--plan", "plan.json"],
     "plan.json", "racks", "9", files={"plan.json": parts(P("orders", 2, [3, 9]))})
case("report_plan_is_describe", ["report", "a.json", "--plan", "d.txt"], "d.txt", "malformed JSON")
case("batches_stale_plan", ["batches", "plan.json", "--current", "a.json", "-o", "bat"], "plan.json",
     "not in the current assignment", "payments-0",
     files={"plan.json": parts(P("orders", 2, [3, 2]), P("payments", 0, [1, 2]))})
case("batches_plan_minus1_first", ["batches", "plan.json", "--current", "a.json", "-o", "bat"], "plan.json",
     "partitions[0].replicas", "negative", "-1", files={"plan.json": parts(P("orders", 2, [-1, 4, 5]))})
case("batches_args_swapped", ["batches", "d.txt", "--current", "plan.json", "-o", "bat"], "d.txt",
     "malformed JSON")
case("batches_plan_dup_one_replica", ["batches", "plan.json", "--current", "a.json", "-o", "bat",
                                      "--one-replica-per-partition"], "plan.json", "broker 4 appears twice", "[4, 4]",
     files={"plan.json": parts(P("orders", 2, [4, 4]))})
case("batches_plan_minus1_one_replica", ["batches", "plan.json", "--current", "d.txt", "-o", "bat",
                                         "--one-replica-per-partition", "--max-moves-per-broker", "1"],
     "plan.json", "partitions[0].replicas", "negative", "-1", files={"plan.json": parts(P("clicks", 1, [3, -1, 2]))})
case("batches_plan_empty_file", ["batches", "plan.json", "--current", "a.json", "-o", "bat"], "plan.json",
     "line 1 column 1", "malformed JSON", files={"plan.json": ""})
case("batches_max_moves_zero", ["batches", "plan.json", "--current", "a.json", "-o", "bat",
                                "--max-moves-per-broker", "0"], "--max-moves-per-broker", "0")
case("batches_max_bytes_negative", ["batches", "plan.json", "--current", "a.json", "-o", "bat",
                                    "--max-bytes-per-batch", "-1"], "--max-bytes-per-batch", "-1")
case("batches_throttle_negative", ["batches", "plan.json", "--current", "a.json", "-o", "bat", "--throttle", "-5"],
     "--throttle", "-5")
case("batches_order_unknown", ["batches", "plan.json", "--current", "a.json", "-o", "bat", "--order", "random"],
     "--order", "'random'")
case("batches_bootstrap_shell", ["batches", "plan.json", "--current", "a.json", "-o", "bat",
                                 "--bootstrap-server", "k1:9092;rm -rf /"], "--bootstrap-server", "rm -rf")
case("batches_missing_current", ["batches", "plan.json", "-o", "bat"], "batches", "--current")

# -- generate --
case("generate_absurd_size", ["generate", "--brokers", "10", "--topics", "100000000", "--partitions", "100",
                              "-o", "gen"], "--topics", "100,000,000", "replicas", isolate=True, max_seconds=10)
case("generate_brokers_zero", ["generate", "--brokers", "0", "-o", "gen"], "--brokers", "0")
case("generate_brokers_too_many", ["generate", "--brokers", "100001", "-o", "gen"], "--brokers", "100001")
case("generate_rf_zero", ["generate", "--brokers", "4", "--rf", "0", "-o", "gen"], "--rf", "0")
case("generate_rf_above_brokers", ["generate", "--brokers", "4", "--topics", "3", "--rf", "9", "-o", "gen"],
     "--rf", "9")
case("generate_racks_above_brokers", ["generate", "--brokers", "3", "--racks", "5", "-o", "gen"], "--racks", "5")
case("generate_partitions_zero", ["generate", "--brokers", "3", "--partitions", "0", "-o", "gen"], "--partitions",
     "'0'")
case("generate_partitions_reversed", ["generate", "--brokers", "3", "--partitions", "9-3", "-o", "gen"],
     "--partitions", "'9-3'")
case("generate_formats_unknown", ["generate", "--brokers", "3", "--formats", "json,yaml", "-o", "gen"],
     "--formats", "'yaml'")
case("generate_logdirs_without_sizes", ["generate", "--brokers", "3", "--formats", "logdirs", "-o", "gen"],
     "--formats", "--sizes")
case("generate_rack_aware_no_racks", ["generate", "--brokers", "3", "--rack-aware", "-o", "gen"], "--rack-aware",
     "racks")
case("generate_first_broker_negative", ["generate", "--brokers", "3", "--first-broker-id", "-1", "-o", "gen"],
     "--first-broker-id", "-1")
case("generate_skew_nan", ["generate", "--brokers", "3", "--skew", "nan", "-o", "gen"], "--skew", "nan")
case("generate_layout_unknown", ["generate", "--brokers", "3", "--layout", "spiral", "-o", "gen"], "--layout",
     "'spiral'")

# -- fleet (at most three: two refused before Spark starts, one read by Spark in a subprocess) --
case("fleet_missing_snapshot", ["fleet", "nofleet", "-o", "fout"], "nofleet", "does not exist")
case("fleet_quantile_above_1", ["fleet", "fleet", "-o", "fout", "--quantile", "1.5"], "--quantile", "1.5")
case("fleet_malformed_fleet_json", ["fleet", "fleet", "-o", "fout", "--master", "local[1]",
                                    "--conf", "spark.ui.enabled=false"], "fleet.json", "malformed JSON",
     files={"fleet/fleet.json": '{"clusters": {"c1": {"remove": [4]},}}'}, isolate=True, may_write=("fout/spark.log",))

IDS = [c.id for c in CASES]
assert len(IDS) == len(set(IDS)), sorted(i for i in IDS if IDS.count(i) > 1)

# ---- running a case ----------------------------------------------------------------------------------------

EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(?:Error|Exception|Interrupt|Exit)\b|\bStopIteration\b|\bTraceback\b")
ISOLATED_MEMORY = 3 << 30  # bytes of address space a subprocess may use (a missing refusal fails, not the host)
ISOLATED_TIMEOUT = 120.0


def _write_files(root: Path, files: Mapping[str, Union[str, bytes, None]]) -> None:
    for name, data in files.items():
        p = root / name
        if data is None:
            p.mkdir(parents=True, exist_ok=True)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def _snapshot(root: Path) -> tuple[dict[str, str], set[str]]:
    """(file -> sha256, folders) under ``root``."""
    files, dirs = {}, set()
    for p in root.rglob("*"):
        rel = str(p.relative_to(root))
        if p.is_dir():
            dirs.add(rel)
        else:
            files[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return files, dirs


def _run_in_process(args: tuple[str, ...], capsys) -> tuple[int, str, str]:
    from flowbalance_cli.app import main

    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    got = capsys.readouterr()
    return code, got.out, got.err


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ISOLATED_MEMORY, ISOLATED_MEMORY))


def _run_isolated(args: tuple[str, ...], cwd: Path, spark: bool) -> tuple[int, str, str]:
    code = "import sys; from flowbalance_cli.app import main; main(sys.argv[1:])"
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    try:
        res = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                             timeout=ISOLATED_TIMEOUT, env=env, preexec_fn=None if spark else _limit_memory)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"no answer within {ISOLATED_TIMEOUT:.0f} s: {args} ({err.stderr!r:.300})")
    return res.returncode, res.stdout, res.stderr


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_bad_input(c: Case, tmp_path, capsys, monkeypatch):
    files = dict(BASE)
    files.update(c.files)
    _write_files(tmp_path, files)
    before_files, before_dirs = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")  # rich must not wrap the one line
    t0 = time.perf_counter()
    if c.isolate:
        code, out, err = _run_isolated(c.args, tmp_path, spark=c.args[0] == "fleet")
    else:
        code, out, err = _run_in_process(c.args, capsys)
    elapsed = time.perf_counter() - t0
    shown = f"exit {code}\n--- stderr\n{err}--- stdout\n{out[:2000]}"

    # the exit code and the lines on stderr
    assert code == c.code, shown
    assert not EXCEPTION_NAME.search(err), shown
    assert "Traceback" not in out, shown
    lines = err.splitlines()
    if c.code == 2:
        assert len(lines) == c.warnings + 1, shown
        *warns, line = lines
        assert line.startswith("flowbalance: error: "), shown
        for n in c.needles:
            assert n in line, f"{n!r} not in the error line\n{shown}"
    else:
        warns = lines
        assert len(lines) == c.warnings, shown
        for n in c.needles:
            assert any(n in w for w in warns), f"{n!r} in no warning line\n{shown}"
    for w in warns:
        assert w.startswith("flowbalance: warning: "), shown
    if c.max_seconds is not None:
        assert elapsed < c.max_seconds, f"took {elapsed:.1f} s\n{shown}"

    # nothing written, every input unchanged
    after_files, after_dirs = _snapshot(tmp_path)
    if c.code == 2:
        new = sorted(set(after_files) - set(before_files) - set(c.may_write))
        assert not new, f"files written on bad input: {new}\n{shown}"
        made = after_dirs - before_dirs - {str(Path(f).parent) for f in c.may_write}
        assert not [d for d in made if any((tmp_path / d).iterdir())], shown
    else:
        assert not [f for f in after_files if Path(f).name.startswith(".flowbalance-")], shown
    gone = sorted(set(before_files) - set(after_files))
    assert not gone, f"input files removed: {gone}"
    changed = sorted(f for f in before_files if after_files.get(f) != before_files[f])
    assert not changed, f"input files changed: {changed}\n{shown}"


def test_table_covers_every_command():
    """At least 100 distinct cases, spread over every command."""
    assert len(CASES) >= 100
    assert {c.args[0] for c in CASES} >= {"check", "plan", "compare", "report", "batches", "fleet", "generate"}
    assert sum(c.args[0] == "fleet" for c in CASES) <= 3
