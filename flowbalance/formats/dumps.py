"""Text writers for the other Kafka formats the readers accept: ``kafka-topics --describe``, the text of
``kafka-reassign-partitions --generate``, ``kafka-log-dirs --describe``, and broker files (CSV and JSON).

Each returns a string and is deterministic (partitions in (topic, partition) order, brokers by id), so a
generated cluster can be written in every input format and read back unchanged.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import io

import numpy as np
import orjson

from ..model import PAD, Brokers, ClusterState
from .jsontext import dumps_str
from .reassignment import CURRENT_MARK, PROPOSED_MARK
from .writers import reassignment_json


def _replica_texts(state: ClusterState) -> list[str]:
    """``"1,2,3"`` for every partition, in row order."""
    reps = state.replicas
    if reps.size and not (reps == PAD).any():
        return [",".join(map(str, row)) for row in reps.tolist()]
    return [",".join(str(b) for b in row if b != PAD) for row in reps.tolist()]


def topic_id(topic: str) -> str:
    """A fake but stable Kafka topic id (22 characters of URL-safe base64, like a real one) for a name."""
    digest = hashlib.sha256(b"flowbalance-topic-id:" + topic.encode("utf-8")).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def describe_text(state: ClusterState) -> str:
    """``kafka-topics --describe`` output: a header line per topic, then one line per partition.

    The leader is the first replica (the preferred leader) and every replica is in sync.
    """
    texts = _replica_texts(state)
    rf = state.rf
    bounds = np.searchsorted(state.topic, np.arange(len(state.topics) + 1))
    pnums = state.partition.tolist()
    leaders = state.replicas[:, 0].tolist() if state.num_partitions else []
    out: list[str] = []
    for t, name in enumerate(state.topics):
        lo, hi = int(bounds[t]), int(bounds[t + 1])
        if lo == hi:
            continue
        out.append(
            f"Topic: {name}\tTopicId: {topic_id(name)}\tPartitionCount: {hi - lo}\t"
            f"ReplicationFactor: {int(rf[lo:hi].max())}\tConfigs: \n"
        )
        for i in range(lo, hi):
            r = texts[i]
            out.append(f"\tTopic: {name}\tPartition: {pnums[i]}\tLeader: {leaders[i]}\tReplicas: {r}\tIsr: {r}\n")
    return "".join(out)


def generate_text(state: ClusterState, *, log_dirs: bool | None = None) -> str:
    """What ``kafka-reassign-partitions --generate`` prints, with ``state`` as both current and proposed.

    ``log_dirs`` is passed on to ``reassignment_json`` (None: as the state was read; real Kafka prints
    ``"log_dirs":["any",...]`` here).
    """
    body = reassignment_json(state, log_dirs=log_dirs)
    return f"{CURRENT_MARK}\n{body}\n{PROPOSED_MARK}\n{body}"


def logdirs_text(state: ClusterState, log_dir: str = "/var/lib/kafka/data") -> str:
    """``kafka-log-dirs --describe`` output: two status lines, then one JSON line with every replica's size.

    Every broker gets one log dir, ``log_dir``, unless the state knows its directories (``state.dirs``, JBOD):
    then each replica is listed under its own; partitions of unknown size (-1) are left out.
    """
    if not state.has_sizes:
        raise ValueError("logdirs_text needs partition sizes (the state has none)")
    if state.dirs is not None:
        return _jbod_logdirs_text(state, log_dir)
    ids = state.brokers.ids.tolist()
    idx = state.replica_index
    rows, cols = np.nonzero((idx >= 0) & (state.size[:, None] >= 0))
    brk = idx[rows, cols]
    order = np.argsort(brk, kind="stable")  # by broker, then (topic, partition) as rows are canonical
    rows_s = rows[order]
    starts = np.searchsorted(brk[order], np.arange(len(ids) + 1))
    prefix = [dumps_str(t)[:-1] + "-" for t in state.topics]  # '"topic-' (the closing quote comes later)
    topic = state.topic.tolist()
    pnum = state.partition.tolist()
    size = state.size.tolist()
    # one text per partition (shared by its replicas), then one per replica in broker order
    per_row = [
        f'{{"partition":{prefix[t]}{p}","size":{z},"offsetLag":0,"isFuture":false}}'
        for t, p, z in zip(topic, pnum, size)
    ]
    entries = [per_row[i] for i in rows_s.tolist()]
    dir_text = dumps_str(log_dir)
    brokers = []
    for b, bid in enumerate(ids):
        parts = ",".join(entries[starts[b]:starts[b + 1]])
        brokers.append(f'{{"broker":{bid},"logDirs":[{{"logDir":{dir_text},"error":null,"partitions":[{parts}]}}]}}')
    return (
        "Querying brokers for log directories information\n"
        f"Received log directory information from brokers {','.join(map(str, ids))}\n"
        '{"version":1,"brokers":[' + ",".join(brokers) + "]}\n"
    )


def _jbod_logdirs_text(state: ClusterState, default_dir: str) -> str:
    """``logdirs_text`` with each replica in its directory (one ``logDirs`` entry per directory of the broker,
    paths in sorted order, replicas in (topic, partition) order; a replica of unknown directory in
    ``default_dir``)."""
    d = state.dirs
    ids = state.brokers.ids.astype(np.int64)
    rows, cols = np.nonzero((state.replicas >= 0) & (state.size[:, None] >= 0))
    bid = state.replicas[rows, cols].astype(np.int64)
    where = d.lookup(rows, bid)
    prefix = [dumps_str(t)[:-1] + "-" for t in state.topics]
    text_of = {}
    brokers = []
    for b in ids.tolist():
        mine = bid == b
        paths = [d.dir_path[i] for i in d.dirs_of(b).tolist()]
        names = {p: [] for p in paths}
        for r, w in zip(rows[mine].tolist(), where[mine].tolist()):
            path = d.dir_path[w] if w >= 0 else default_dir
            if r not in text_of:
                text_of[r] = (f'{{"partition":{prefix[state.topic[r]]}{int(state.partition[r])}",'
                              f'"size":{int(state.size[r])},"offsetLag":0,"isFuture":false}}')
            names.setdefault(path, []).append(text_of[r])
        dirs = ",".join(f'{{"logDir":{dumps_str(p)},"error":null,"partitions":[{",".join(e)}]}}'
                        for p, e in names.items())
        brokers.append(f'{{"broker":{b},"logDirs":[{dirs}]}}')
    return (
        "Querying brokers for log directories information\n"
        f"Received log directory information from brokers {','.join(map(str, ids.tolist()))}\n"
        '{"version":1,"brokers":[' + ",".join(brokers) + "]}\n"
    )


def _weight_text(w: float) -> str:
    return str(int(w)) if float(w).is_integer() and abs(w) < 2**53 else repr(float(w))


def brokers_csv(brokers: Brokers) -> str:
    """A broker file as CSV: ``id,rack`` plus ``weight`` and ``capacity_bytes`` when any broker has one.

    CSV has no column for the broker state: brokers marked as removed are written as ordinary ones.
    """
    with_cap = bool((brokers.capacity >= 0).any())
    with_weight = with_cap or bool((brokers.weight != 1.0).any())
    header = ["id", "rack"] + (["weight"] if with_weight else []) + (["capacity_bytes"] if with_cap else [])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for b in brokers:
        row = [str(b.id), b.rack or ""]
        if with_weight:
            row.append(_weight_text(b.weight))
        if with_cap:
            row.append("" if b.capacity_bytes is None else str(b.capacity_bytes))
        w.writerow(row)
    return buf.getvalue()


def brokers_json(brokers: Brokers) -> str:
    """A broker file as a JSON list of objects, one per line; keys only where there is something to say."""
    lines = []
    for b in brokers:
        obj: dict[str, object] = {"id": b.id}
        if b.rack is not None:
            obj["rack"] = b.rack
        if b.weight != 1.0:
            obj["weight"] = b.weight
        if b.capacity_bytes is not None:
            obj["capacity_bytes"] = b.capacity_bytes
        if b.removed:
            obj["state"] = "removed"
        lines.append(orjson.dumps(obj).decode())
    return "[\n" + ",\n".join(lines) + ("\n" if lines else "") + "]\n"
