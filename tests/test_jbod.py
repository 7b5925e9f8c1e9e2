"""Log directories (JBOD, issue 19): read from ``kafka-log-dirs``, kept per replica, generated.

The oracles here walk the kafka-log-dirs JSON in plain Python (no flowbalance code): every (broker, directory)'s
bytes, each replica's directory, and future replicas (``isFuture``: an intra-broker move in flight) listed apart
and never counted twice.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from flowbalance.dirs import dirs_for_state, replica_keys
from flowbalance.formats.dumps import logdirs_text
from flowbalance.formats.logdirs import read_logdirs
from flowbalance.generate import generate_cluster
from flowbalance.load import load_cluster
from flowbalance.model import Brokers, ClusterState


def _plain(text: str) -> tuple[dict, dict, dict]:
    """From the output's JSON line: bytes per (broker, dir) of current replicas, the dir of each current
    (topic, partition, broker), and the dir of each future one."""
    doc = json.loads(text.splitlines()[-1])
    used, where, future = defaultdict(int), {}, {}
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            used[b["broker"], d["logDir"]] += 0
            for p in d["partitions"]:
                topic, _, num = p["partition"].rpartition("-")
                if p.get("isFuture") is True:
                    future[topic, int(num), b["broker"]] = d["logDir"]
                    continue
                used[b["broker"], d["logDir"]] += p["size"]
                where[topic, int(num), b["broker"]] = d["logDir"]
    return dict(used), where, future


def _dirs_as_plain(state: ClusterState) -> tuple[dict, dict]:
    d = state.dirs
    used = {(int(b), p): int(x) for b, p, x in zip(d.dir_broker, d.dir_path, d.dir_bytes())}
    keys, rows, ids = replica_keys(state)
    at = d.lookup(rows, ids)
    where = {(state.topics[state.topic[r]], int(state.partition[r]), int(b)): d.dir_path[w]
             for r, b, w in zip(rows.tolist(), ids.tolist(), at.tolist()) if w >= 0}
    return used, where


@pytest.mark.parametrize("seed", range(8))
def test_generated_dirs_round_trip_through_kafka_log_dirs(seed, tmp_path):
    rng = np.random.default_rng(seed)
    st = generate_cluster(brokers=int(rng.integers(2, 7)), topics=int(rng.integers(1, 5)), partitions=(1, 6),
                          rf=2, sizes=True, log_dirs=int(rng.integers(2, 5)), seed=seed)
    text = logdirs_text(st)
    used, where, future = _plain(text)
    assert not future and _dirs_as_plain(st) == (used, where)
    (tmp_path / "a.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas)} for p in st.partitions()]}))
    (tmp_path / "logdirs.txt").write_text(text)
    loaded = load_cluster(tmp_path / "a.json", sizes=tmp_path / "logdirs.txt").state
    assert _dirs_as_plain(loaded) == (used, where)


def _logdirs(brokers: dict) -> str:
    """kafka-log-dirs output for {broker: {dir: [(name, size, future)]}}."""
    doc = {"version": 1, "brokers": [
        {"broker": b, "logDirs": [{"logDir": d, "error": None, "partitions": [
            {"partition": n, "size": z, "offsetLag": 0, "isFuture": f} for n, z, f in parts]}
            for d, parts in dirs.items()]} for b, dirs in brokers.items()]}
    return "Querying brokers for log directories information\nReceived log directory information from brokers " \
           f"{','.join(map(str, brokers))}\n{json.dumps(doc)}\n"


def test_several_dirs_per_broker_and_a_future_replica_not_counted_twice():
    text = _logdirs({
        1: {"/d1": [("a-0", 100, False), ("b-0", 7, False)], "/d2": [("a-1", 50, False), ("a-0", 60, True)]},
        2: {"/d1": [("a-0", 100, False), ("a-1", 50, False)], "/d2": [], "/d3": [("b-0", 7, False)]},
    })
    ld = read_logdirs(text, "logdirs.txt")
    st = ClusterState.build(Brokers.build([1, 2]), ["a", "a", "b"], [0, 1, 0], np.array([[1, 2], [2, 1], [2, 1]]))
    dirs, stray = dirs_for_state(st, ld.placements)
    assert stray == 0 and dirs.jbod
    used, where, future = _plain(text)
    st = st.with_replicas(st.replicas)
    from dataclasses import replace

    st = replace(st, dirs=dirs)
    assert _dirs_as_plain(st) == (used, where)
    assert used[1, "/d1"] == 107 and used[1, "/d2"] == 50  # a-0's future copy on /d2 is not counted
    assert future == {("a", 0, 1): "/d2"}
    fut = [(int(k // 2**31), int(k % 2**31), dirs.dir_path[d]) for k, d in zip(dirs.future_key, dirs.future_dir)]
    assert fut == [(st.find("a", 0), 1, "/d2")]
    assert ld.sizes[("a", 0)] == 100  # sizes (the largest current replica) are as before


def test_one_dir_per_broker_is_not_jbod_and_changes_nothing(tmp_path):
    st = generate_cluster(brokers=3, topics=2, partitions=3, rf=2, sizes=True, seed=1)
    assert st.dirs is None
    (tmp_path / "a.json").write_text(json.dumps({"version": 1, "partitions": [
        {"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas)} for p in st.partitions()]}))
    (tmp_path / "logdirs.txt").write_text(logdirs_text(st))
    assert load_cluster(tmp_path / "a.json", sizes=tmp_path / "logdirs.txt").state.dirs is None


def test_generate_log_dirs_flag(tmp_path, run_cli):
    code, out, err = run_cli("generate", "--brokers", "4", "--topics", "2", "--partitions", "4", "--sizes",
                             "--log-dirs", "3", "-o", tmp_path / "g")
    assert code == 0, err
    used, _, _ = _plain((tmp_path / "g" / "logdirs.txt").read_text())
    assert sorted({d for _, d in used}) == [f"/var/lib/kafka/data-{i}" for i in range(3)]
    assert len(used) == 12
    code, _, err = run_cli("generate", "--brokers", "4", "--log-dirs", "2", "-o", tmp_path / "h")
    assert code == 2 and "--log-dirs" in err and "--sizes" in err


# ---- the directory of every replica of a plan ---------------------------------------------------------------


def _rule(before_where: dict, before_used_sizes: dict, dirs_of: dict, cap: dict, after_rows: list, size: dict) -> dict:
    """The documented placement, stated in plain Python: (topic, partition, broker) -> directory.

    ``before_where``: the current directory of each replica; ``before_used_sizes``: its bytes; ``dirs_of``: broker
    -> sorted paths; ``cap``: (broker, path) -> capacity or None; ``after_rows``: [(topic, partition, brokers)]."""
    load = {(b, p): 0 for b, ps in dirs_of.items() for p in ps}
    out, arriving = {}, []
    for t, n, brokers in after_rows:
        for b in brokers:
            if (t, n, b) in before_where:
                out[t, n, b] = before_where[t, n, b]
                load[b, before_where[t, n, b]] += before_used_sizes[t, n, b]
            elif b in dirs_of:
                arriving.append((b, -size[t, n], t, n))
    for b, neg, t, n in sorted(arriving):  # broker, largest first, then (topic, partition): the row order
        z = -neg
        fits = [p for p in dirs_of[b] if cap[b, p] is None or load[b, p] + z <= cap[b, p]]
        pick = min(fits or dirs_of[b], key=lambda p: (load[b, p], dirs_of[b].index(p)))
        out[t, n, b] = pick
        load[b, pick] += z
    return out


@pytest.mark.parametrize("seed", range(20))
def test_every_replica_of_a_plan_gets_the_documented_directory(seed, tmp_path):
    import flowbalance as fb
    from flowbalance.formats.reassignment import read_reassignment_json

    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    st = generate_cluster(brokers=n, topics=int(rng.integers(1, 4)), partitions=(2, 8), rf=2, sizes=True,
                          log_dirs=int(rng.integers(2, 4)), skew=float(rng.random()), seed=seed)
    req = fb.PlanRequest(remove=(int(rng.integers(0, n)),)) if seed % 2 else fb.PlanRequest(add=(n,))
    p = fb.plan(st, req)
    _, where, _ = _plain(logdirs_text(st))
    used = {k: int(st.size[st.find(k[0], k[1])]) for k in where}
    d = st.dirs
    dirs_of = {int(b): sorted(d.dir_path[i] for i in d.dirs_of(int(b)).tolist()) for b in set(d.dir_broker.tolist())}
    cap = {(b, q): None for b, ps in dirs_of.items() for q in ps}
    rows = [(q.topic, q.partition, list(q.replicas)) for q in p.after.partitions()]
    size = {(q.topic, q.partition): max(int(st.size[st.find(q.topic, q.partition)]), 0) for q in p.after.partitions()}
    want = _rule(where, used, dirs_of, cap, rows, size)
    got = _dirs_as_plain(p.after)[1]
    assert got == want
    # the plan file names them (a new broker's directories are not known: "any"), the rollback the current ones
    text = fb.plan_files(p).plan
    raw = json.loads(text)["partitions"]
    for e in raw:
        for b, path in zip(e["replicas"], e["log_dirs"]):
            assert path == want.get((e["topic"], e["partition"], b), "any")
    for e in json.loads(fb.plan_files(p).rollback)["partitions"]:
        assert [where[e["topic"], e["partition"], b] for b in e["replicas"]] == e["log_dirs"]
    read_reassignment_json(text, "plan.json")  # Kafka's format, as the readers check it


@pytest.mark.parametrize("seed", range(30))
def test_arrivals_keep_even_directories_within_the_largest_replica(seed):
    """Largest first into the least used directory: directories that start even end at most one arriving
    replica apart (list scheduling's bound), on random arrivals."""
    from flowbalance.dir_balance import place
    from flowbalance.dirs import build_dirs

    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(2, 5)), int(rng.integers(1, 12))
    st = ClusterState.build(Brokers.build([0, 1]), ["t"] * m, range(m), np.zeros((m, 1), dtype=np.int64),
                            size=rng.integers(1, 10**6, size=m))
    dirs = build_dirs(np.zeros(k, dtype=np.int64), [f"/d{i}" for i in range(k)], np.zeros(0, np.int64),
                      np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    placed = place(dirs, st)[0]
    load = placed.dir_bytes()
    assert load.sum() == st.size.sum() and load.max() - load.min() <= st.size.max()


@pytest.mark.parametrize("seed", range(4))
def test_batches_carry_each_replicas_directory(seed, tmp_path, run_cli):
    """Batch files name the plan's directory for every replica the plan lists (the current one for a replica
    still waiting to leave), the rollback the current directories."""
    g = tmp_path / "g"
    code, _, err = run_cli("generate", "--brokers", "6", "--topics", "3", "--partitions", "4-8", "--sizes",
                           "--log-dirs", "3", "--skew", "0.8", "--seed", str(seed), "-o", g)
    assert code == 0, err
    inputs = [g / "assignment.json", "--brokers", g / "brokers.csv", "--sizes", g / "logdirs.txt"]
    code, _, err = run_cli("plan", *inputs, "--remove", "2", "-o", tmp_path / "plan.json", "-q")
    assert code == 0, err
    code, _, err = run_cli("batches", tmp_path / "plan.json", "--current", *inputs, "-o", tmp_path / "b",
                           "--max-moves-per-broker", "1", "--one-replica-per-partition", "-q")
    assert code == 0, err
    _, now, _ = _plain((g / "logdirs.txt").read_text())
    planned = {(e["topic"], e["partition"], b): d for e in json.loads((tmp_path / "plan.json").read_text())
               ["partitions"] for b, d in zip(e["replicas"], e["log_dirs"])}
    batches = sorted((tmp_path / "b").glob("batch-*.json"))
    assert len(batches) > 1
    for f in batches:
        for e in json.loads(f.read_text())["partitions"]:
            for b, d in zip(e["replicas"], e["log_dirs"]):
                key = (e["topic"], e["partition"], b)
                assert d == planned.get(key, now.get(key)), (f.name, key)
    for e in json.loads((tmp_path / "b" / "rollback.json").read_text())["partitions"]:
        assert e["log_dirs"] == [now[e["topic"], e["partition"], b] for b in e["replicas"]]


def test_a_relative_log_dir_in_a_plan_is_one_line(tmp_path, run_cli):
    (tmp_path / "a.json").write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}')
    (tmp_path / "p.json").write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,1],'
                                     '"log_dirs":["data","any"]}]}')
    code, _, err = run_cli("report", tmp_path / "a.json", "--plan", tmp_path / "p.json")
    assert code == 2 and err.strip().splitlines() == [
        f"flowbalance: error: {tmp_path / 'p.json'}: partitions[0].log_dirs: expected \"any\" or an absolute path "
        "(got 'data')"]


# ---- check and report show the directories -----------------------------------------------------------------


def test_check_and_report_show_the_directories(tmp_path, run_cli):
    """``check --json``'s and ``report --json``'s ``log_dirs``: valid against the documented schemas, and every
    directory's bytes, each broker's spread and the worst broker as a plain walk of kafka-log-dirs says."""
    import jsonschema

    from .conftest import ROOT

    g = tmp_path / "g"
    code, _, err = run_cli("generate", "--brokers", "5", "--topics", "3", "--partitions", "6", "--sizes",
                           "--log-dirs", "3", "--seed", "4", "-o", g)
    assert code == 0, err
    inputs = [g / "assignment.json", "--brokers", g / "brokers.csv", "--sizes", g / "logdirs.txt"]
    code, out, _ = run_cli("check", *inputs, "--json")
    assert code in (0, 1)
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "check.schema.json").read_text()))
    used, _, _ = _plain((g / "logdirs.txt").read_text())
    got = doc["log_dirs"]
    assert {(e["broker"], e["path"]): e["bytes"] for e in got["per_directory"]} == used
    spread = {b: max(v for (x, _), v in used.items() if x == b) - min(v for (x, _), v in used.items() if x == b)
              for b, _ in used}
    assert {e["broker"]: e["spread_bytes"] for e in got["per_broker"]} == spread
    assert got["worst_spread_bytes"] == max(spread.values()) and spread[got["worst_broker"]] == max(spread.values())
    code, _, err = run_cli("plan", *inputs, "--remove", "1", "-o", tmp_path / "p.json", "-q")
    assert code == 0, err
    code, out, err = run_cli("report", *inputs, "--plan", tmp_path / "p.json", "--json")
    assert code == 0, err
    rep = json.loads(out)
    jsonschema.validate(rep, json.loads((ROOT / "docs" / "report.schema.json").read_text()))
    before, after = rep["log_dirs"]
    assert before == got
    assert all(e["broker"] != 1 or e["bytes"] == 0 for e in after["per_directory"])  # the removed broker empties
    code, text, _ = run_cli("check", *inputs)
    assert "bytes per log directory" in text and "within broker" in text
    code, text, _ = run_cli("report", *inputs, "--plan", tmp_path / "p.json")
    assert code == 0 and "Log directories: worst spread" in text


# ---- balancing a broker's directories, emptying one, intra-broker batches --------------------------------------


def _jbod_cluster(tmp_path, run_cli, seed: int, dirs: int = 3):
    g = tmp_path / f"g{seed}"
    code, _, err = run_cli("generate", "--brokers", "5", "--topics", "4", "--partitions", "6-12", "--sizes",
                           "--log-dirs", str(dirs), "--skew", "0.6", "--seed", str(seed), "-o", g)
    assert code == 0, err
    return g, [g / "assignment.json", "--brokers", g / "brokers.csv", "--sizes", g / "logdirs.txt"]


def _fewest_intra_bytes(replicas: list[tuple[int, str]], paths: list[str], limit: dict) -> int | None:
    """Brute force over every placement of one broker's staying replicas ((bytes, current dir)) in ``paths``:
    the fewest bytes moved between directories with every directory within ``limit``; None when none is."""
    import itertools

    best = None
    for choice in itertools.product(paths, repeat=len(replicas)):
        used = dict.fromkeys(paths, 0)
        for (z, _), p in zip(replicas, choice):
            used[p] += z
        if all(used[p] <= limit[p] for p in paths):
            moved = sum(z for (z, d), p in zip(replicas, choice) if p != d)
            best = moved if best is None else min(best, moved)
    return best


@pytest.mark.parametrize("seed", range(10))
def test_balance_dirs_bytes_against_a_brute_force_minimum(seed):
    """``balance_dirs`` on brokers with no arrivals: each directory ends within its limit when some placement is,
    and the bytes moved between directories are at least the printed bound and at least the brute-force fewest
    (the bound is a true bound)."""
    import flowbalance as fb
    from flowbalance.dir_balance import place

    rng = np.random.default_rng(seed)
    st = generate_cluster(brokers=3, topics=2, partitions=(2, 4), rf=1, sizes=True, log_dirs=int(rng.integers(2, 4)),
                          seed=seed)
    placed, moves = place(st.dirs, st, balance=True, tolerance=1.2)
    assert moves.bytes_moved >= moves.lower_bound_bytes or not moves.within_limits
    d = st.dirs
    _, rows, ids = replica_keys(st)
    where = d.lookup(rows, ids)
    for b in set(ids.tolist()):
        mine = [(int(max(st.size[r], 0)), d.dir_path[w]) for r, i, w in zip(rows, ids, where) if i == b]
        paths = [d.dir_path[x] for x in d.dirs_of(b).tolist()]
        limit = {d.dir_path[x]: int(moves.limit[x]) for x in d.dirs_of(b).tolist()}
        best = _fewest_intra_bytes(mine, paths, limit)
        after = placed.lookup(rows[ids == b], ids[ids == b])
        used = {p: 0 for p in paths}
        for (z, _), w in zip(mine, after.tolist()):
            used[placed.dir_path[w]] += z
        mine_moved = sum(z for (z, old), w in zip(mine, after.tolist()) if placed.dir_path[w] != old)
        lb = sum(max(0, sum(z for z, p in mine if p == q) - limit[q]) for q in paths)
        assert lb <= (best if best is not None else lb), (seed, b)
        if best is not None:
            assert all(used[p] <= limit[p] for p in paths) or not moves.within_limits
            assert mine_moved >= best
    assert isinstance(fb.PlanRequest(balance_dirs=True).validate(), fb.PlanRequest)


@pytest.mark.parametrize("seed", range(4))
def test_remove_log_dir_empties_it_into_the_other_directories(seed, tmp_path, run_cli):
    g, inputs = _jbod_cluster(tmp_path, run_cli, seed)
    used, now, _ = _plain((g / "logdirs.txt").read_text())
    broker, path = max(used, key=lambda k: (used[k], k))  # the fullest directory
    code, out, err = run_cli("plan", *inputs, "--remove-log-dir", f"{broker}:{path}", "-o",
                             tmp_path / "p.json", "--json")
    assert code == 0, err
    d = json.loads(out)["log_dirs"]
    emptied = [k for k, v in now.items() if k[2] == broker and v == path]
    plan = json.loads((tmp_path / "p.json").read_text())["partitions"]
    listed = {(e["topic"], e["partition"]): e for e in plan}
    stayed = [k for k in emptied if broker in listed[k[:2]]["replicas"]]  # every one is listed: moved or not
    assert emptied and d["intra_broker_moves"] == len(stayed) and d["bytes_moved"] >= d["bytes_lower_bound"] > 0
    for t, n, _ in stayed:  # on another directory of the same broker
        e = listed[t, n]
        assert e["log_dirs"][e["replicas"].index(broker)] not in (path, "any")
    assert all(not (b == broker and p == path) for e in plan for b, p in zip(e["replicas"], e["log_dirs"]))
    code, _, err = run_cli("plan", *inputs, "--remove-log-dir", f"{broker}:/nope", "-o", tmp_path / "q.json")
    assert code == 2 and "no such log directory" in err


@pytest.mark.parametrize("seed", range(3))
def test_intra_broker_moves_get_their_own_batches_after_the_others(seed, tmp_path, run_cli):
    """With --balance-dirs, batches between brokers keep each staying replica in its current directory; the
    intra-broker batches come last and move them; all batches applied give the plan's lists and directories."""
    g, inputs = _jbod_cluster(tmp_path, run_cli, seed)
    code, _, err = run_cli("plan", *inputs, "--balance-dirs", "--remove", "1", "-o", tmp_path / "p.json", "-q")
    assert code == 0, err
    code, out, err = run_cli("batches", tmp_path / "p.json", "--current", *inputs, "-o", tmp_path / "b",
                             "--max-moves-per-broker", "2", "--json")
    assert code == 0, err
    per = json.loads(out)["per_batch"]
    intra = [b["intra_broker"] for b in per]
    assert any(intra) and intra == sorted(intra)  # the intra-broker batches after the others
    _, now, _ = _plain((g / "logdirs.txt").read_text())
    lists = {}
    where = dict(now)
    for b in per:
        for e in json.loads(Path(b["file"]).read_text())["partitions"]:
            for r, p in zip(e["replicas"], e["log_dirs"]):
                k = (e["topic"], e["partition"], r)
                if not b["intra_broker"] and k in now:
                    assert p == now[k], (b["file"], k)  # a staying replica waits for its intra-broker batch
                where[k] = p
            lists[e["topic"], e["partition"]] = e["replicas"]
    planned = json.loads((tmp_path / "p.json").read_text())["partitions"]
    for e in planned:
        assert lists[e["topic"], e["partition"]] == e["replicas"]
        assert [where[e["topic"], e["partition"], r] for r in e["replicas"]] == e["log_dirs"]
    assert "--replica-alter-log-dirs-throttle" in (tmp_path / "b" / "steps.txt").read_text()


# ---- directory capacities from the broker file ---------------------------------------------------------------


@pytest.mark.parametrize("form", ["json", "csv"])
def test_directory_capacities_from_the_broker_file_are_kept(form, tmp_path, run_cli):
    """A broker file's log_dirs capacities: shown by check, and no arriving replica takes a directory above its
    capacity when another of its broker's directories can hold it."""
    g, _ = _jbod_cluster(tmp_path, run_cli, 7)
    used, _, _ = _plain((g / "logdirs.txt").read_text())
    target = 4  # the new broker's directories are unknown: give an existing one tight capacities instead
    caps = {p: used[b, p] + (1 if p.endswith("-0") else 10**13) for b, p in used if b == target}
    ids = sorted({b for b, _ in used})
    if form == "json":
        doc = [{"id": b, **({"log_dirs": caps} if b == target else {})} for b in ids]
        (tmp_path / "b.json").write_text(json.dumps(doc))
        brokers = tmp_path / "b.json"
    else:
        text = ";".join(f"{p}={c}" for p, c in caps.items())
        (tmp_path / "b.csv").write_text("id,rack,weight,capacity_bytes,state,log_dirs\n" + "".join(
            f"{b},,,,,{text if b == target else ''}\n" for b in ids))
        brokers = tmp_path / "b.csv"
    inputs = [g / "assignment.json", "--brokers", brokers, "--sizes", g / "logdirs.txt"]
    code, out, _ = run_cli("check", *inputs, "--json")
    shown = {(e["broker"], e["path"]): e["capacity_bytes"] for e in json.loads(out)["log_dirs"]["per_directory"]}
    assert {p: shown[target, p] for p in caps} == caps
    code, _, err = run_cli("plan", *inputs, "--remove", "0", "-o", tmp_path / "p.json", "-q")
    assert code == 0, err
    full = next(p for p in caps if p.endswith("-0"))
    arrived = [e for e in json.loads((tmp_path / "p.json").read_text())["partitions"]
               if target in e["replicas"] and e["log_dirs"][e["replicas"].index(target)] == full]
    _, now, _ = _plain((g / "logdirs.txt").read_text())
    assert all((e["topic"], e["partition"], target) in now for e in arrived)  # nothing new in the full directory


@pytest.mark.parametrize("text,what", [("id,rack,weight,capacity_bytes,state,log_dirs\n1,,,,,data=5\n", "absolute"),
                                       ("id,rack,weight,capacity_bytes,state,log_dirs\n1,,,,,/d=x\n", "integer"),
                                       ("id,rack,weight,capacity_bytes,state,log_dirs\n1,,,,,/d=5;/d=6\n", "twice"),
                                       ("id,rack,weight,capacity_bytes,state,log_dirs\n1,,,,,/d\n", "PATH=BYTES")])
def test_bad_directory_capacities_are_one_line(text, what, tmp_path, run_cli):
    (tmp_path / "a.json").write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    (tmp_path / "b.csv").write_text(text)
    code, _, err = run_cli("check", tmp_path / "a.json", "--brokers", tmp_path / "b.csv")
    assert code == 2 and len(err.strip().splitlines()) == 1 and what in err and "line 2: log_dirs" in err


@pytest.mark.parametrize("seed", range(12))
def test_spread_floor_is_below_every_placement(seed):
    """The printed floor of the worst spread within a broker is at most the spread of every placement (brute
    force over all placements of one broker's replicas), and met by the best one when a replica dominates."""
    import itertools
    from dataclasses import replace

    from flowbalance.dirs import build_dirs, spread_floor

    rng = np.random.default_rng(seed)
    m, k = int(rng.integers(1, 6)), int(rng.integers(2, 4))
    sizes = rng.integers(1, 100, size=m) * (10 if seed % 3 == 0 else 1)
    if seed % 3 == 0:
        sizes[0] = 10**4  # one replica dominates
    st = ClusterState.build(Brokers.build([0]), ["t"] * m, range(m), np.zeros((m, 1), dtype=np.int64), size=sizes)
    st = replace(st, dirs=build_dirs(np.zeros(k, np.int64), [f"/d{i}" for i in range(k)], np.arange(m),
                                     np.zeros(m, np.int64), np.zeros(m, np.int64), sizes))
    best = min(max(loads) - min(loads) for choice in itertools.product(range(k), repeat=m)
               for loads in [[int(sizes[[i for i in range(m) if choice[i] == d]].sum()) for d in range(k)]])
    floor = spread_floor(st)
    assert floor <= best
    if seed % 3 == 0:
        assert floor > 0


@pytest.mark.parametrize("seed", range(12))
def test_a_directory_its_broker_cannot_absorb_spills_to_other_brokers(seed, tmp_path, run_cli):
    """Emptying a directory whose broker's other directories are nearly full (capacities in the broker file): what
    they cannot hold leaves the broker (the disk stage's capacity repair), the rest moves between its directories,
    nothing stays in the emptied one and no directory ends above its capacity."""
    g, _ = _jbod_cluster(tmp_path, run_cli, 20 + seed)
    used, now, _ = _plain((g / "logdirs.txt").read_text())
    broker, path = max(used, key=lambda k: (used[k], k))
    slack = used[broker, path] // 3  # the other directories can take about a third of it
    caps = {p: used[b, p] + (slack // 2 if p != path else 0) for b, p in used if b == broker}
    caps[path] = used[broker, path]
    ids = sorted({b for b, _ in used})
    (tmp_path / "b.json").write_text(json.dumps([{"id": b, **({"log_dirs": caps} if b == broker else {})}
                                                 for b in ids]))
    inputs = [g / "assignment.json", "--brokers", tmp_path / "b.json", "--sizes", g / "logdirs.txt"]
    code, out, err = run_cli("plan", *inputs, "--remove-log-dir", f"{broker}:{path}", "-o", tmp_path / "p.json",
                             "--json")
    if code == 2:  # the rest cannot be packed in the other directories: a hard rule, refused in one line
        assert err.strip().splitlines()[-1].startswith("flowbalance: error: log directory capacity cannot be met")
        assert not (tmp_path / "p.json").exists()
        return
    assert code == 0, err
    d = json.loads(out)
    plan = {(e["topic"], e["partition"]): e for e in json.loads((tmp_path / "p.json").read_text())["partitions"]}
    emptied = [k for k, v in now.items() if k[2] == broker and v == path]
    left = [k for k in emptied if broker not in plan[k[:2]]["replicas"]]
    assert left, "some replicas had to leave the broker"
    placed = defaultdict(int)
    sizes = {(t, n): z for (t, n, b), z in _sizes_of(g).items()}
    for (t, n), e in plan.items():
        for b, p in zip(e["replicas"], e["log_dirs"]):
            if b == broker:
                placed[p] += sizes[t, n]
    for (t, n, b), p in now.items():  # replicas the plan does not list stay where they are
        if b == broker and (t, n) not in plan:
            placed[p] += sizes[t, n]
    assert placed.get(path, 0) == 0 and all(placed[p] <= caps[p] for p in placed), (placed, caps)


def _sizes_of(g) -> dict:
    """(topic, partition, broker) -> the replica's size, from kafka-log-dirs."""
    doc = json.loads((g / "logdirs.txt").read_text().splitlines()[-1])
    out = {}
    for b in doc["brokers"]:
        for d in b["logDirs"]:
            for p in d["partitions"]:
                topic, _, num = p["partition"].rpartition("-")
                out[topic, int(num), b["broker"]] = p["size"]
    return out


# ---- the fleet ---------------------------------------------------------------------------------------------


def test_fleet_plans_log_directories_as_the_command_line(tmp_path, run_cli):
    """A JBOD cluster folder in a fleet snapshot: ingest's parser carries each replica's directory in ``dirs``
    rows, and the planning task writes the plan ``flowbalance plan`` writes, log_dirs included, byte for byte
    (no Spark: the parser and the task on the pandas rows a Spark task gets)."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyspark")
    from flowbalance.pipeline import rows
    from flowbalance.pipeline.fleetplan import plan_cluster
    from flowbalance.pipeline.ingest import parse_cluster

    g, inputs = _jbod_cluster(tmp_path, run_cli, 3)
    code, _, err = run_cli("plan", *inputs, "--remove", "1", "--balance-dirs", "-o", tmp_path / "p.json", "-q")
    assert code == 0, err
    names = ["assignment.json", "brokers.csv", "logdirs.txt"]
    files = pd.DataFrame({"cluster": "c1", "name": names, "content": [(g / n).read_bytes() for n in names]})
    long = parse_cluster(files, {"c1": {"remove": [1], "balance_dirs": True}})
    assert "error" not in set(long["kind"]), long[long["kind"] == "error"]["reason"].tolist()
    dirs = long[long["kind"] == "dirs"]
    _, now, _ = _plain((g / "logdirs.txt").read_text())
    assert {(t, int(p), int(b)): d for t, p, b, d in zip(dirs.topic, dirs.partition, dirs.broker, dirs.log_dir)} == now
    row = plan_cluster(long).iloc[0].to_dict()
    assert row["ok"], row["reason"]
    assert row["plan_json"] == (tmp_path / "p.json").read_text()
    # the rows and the state are inverses, directories included
    state = rows.rows_state(long[long.kind == "brokers"], long[long.kind == "replicas"], long[long.kind == "sizes"],
                            dirs=dirs)
    again = rows.dir_rows("c1", state)
    assert sorted(map(tuple, again[["topic", "partition", "broker", "log_dir", "bytes"]].values.tolist())) == \
        sorted(map(tuple, dirs[["topic", "partition", "broker", "log_dir", "bytes"]].values.tolist()))
