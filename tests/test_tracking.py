"""Tracking a running plan (flowbalance.planmeta, flowbalance.tracking, ``flowbalance status``): the sidecar round
trip, the classification of a half-done reassignment against what was simulated and against a per-partition
oracle, staleness refused by batches, report --plan and status unless --force, and resume."""
from __future__ import annotations

import json
import random
import time

import numpy as np
import pytest

import flowbalance as fb
from flowbalance.errors import InputError
from flowbalance.formats.writers import reassignment_json
from flowbalance.load import load_cluster
from flowbalance.model import PAD, Brokers, ClusterState
from flowbalance.planmeta import (read_sidecar, sidecar_from_text, sidecar_path, sidecar_text, write_sidecar)
from flowbalance.tracking import DIVERGED, DONE, IN_FLIGHT, NOT_STARTED, STATES, classify, resume_input, track
from flowbalance.request import PlanRequest

from .test_bad_input import assert_one_line

NAMES = {DONE: "done", IN_FLIGHT: "in_flight", NOT_STARTED: "not_started", DIVERGED: "diverged"}


# ---- building clusters, plans and later dumps -------------------------------------------------------------


def state_of(lists: dict[tuple[str, int], list[int]], brokers=None, sizes=None) -> ClusterState:
    keys = sorted(lists)
    width = max(len(v) for v in lists.values())
    reps = np.full((len(keys), width), PAD, dtype=np.int64)
    for i, k in enumerate(keys):
        reps[i, : len(lists[k])] = lists[k]
    ids = sorted(brokers or {b for v in lists.values() for b in v})
    size = None if sizes is None else np.array([sizes[k] for k in keys])
    return ClusterState.build(Brokers.build(ids), [k[0] for k in keys], [k[1] for k in keys], reps, size)


def describe(lists: dict, running: dict | None = None) -> str:
    """A describe of ``lists``; ``running[key] = (origin, target)`` prints Kafka's in-flight form of that partition:
    Replicas the target then the leaving brokers, with Adding/Removing Replicas."""
    running = running or {}
    by_topic: dict[str, list] = {}
    for (t, p) in sorted(lists):
        by_topic.setdefault(t, []).append(p)
    out = []
    for t, ps in by_topic.items():
        out.append(f"Topic: {t}\tPartitionCount: {len(ps)}\tReplicationFactor: 3\tConfigs: ")
        for p in ps:
            if (t, p) in running:
                o, n = running[(t, p)]
                reps = list(n) + [b for b in o if b not in n]
                extra = (f"\tAdding Replicas: {','.join(str(b) for b in n if b not in o)}"
                         f"\tRemoving Replicas: {','.join(str(b) for b in o if b not in n)}")
                isr = o
            else:
                reps, extra, isr = lists[(t, p)], "", lists[(t, p)]
            out.append(f"\tTopic: {t}\tPartition: {p}\tLeader: {reps[0]}\tReplicas: {','.join(map(str, reps))}"
                       f"\tIsr: {','.join(map(str, isr))}{extra}")
    return "\n".join(out) + "\n"


def json_dump(lists: dict) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r}
                                                    for (t, p), r in sorted(lists.items())]})


def oracle(old: list[int], new: list[int], cur: list[int] | None, target: list[int] | None) -> str:
    """Per partition, plainly, with Python sets: the rules of docs/commands.md (status). ``target``: a running
    reassignment's target (a describe's Replicas minus Removing Replicas), None when none runs."""
    if cur is None:
        return "diverged"
    O, N = set(old), set(new)

    def between(c):
        C = set(c)
        return C <= O | N and O & N <= C and C != O and C != N

    if target is not None:
        if not set(cur) <= O | N:
            return "diverged"
        return "in_flight" if target == new or between(target) else "diverged"
    if cur == new:
        return "done"
    if cur == old:
        return "not_started"
    return "in_flight" if between(cur) else "diverged"


def random_case(seed: int, n_topics: int = 6, parts: int = 12, brokers: int = 9):
    """A cluster, a plan (random new lists for about 60 % of the partitions), and the fates of a later dump."""
    rnd = random.Random(seed)
    ids = list(range(brokers))
    cur = {}
    for t in range(n_topics):
        for p in range(parts):
            cur[(f"t{t}", p)] = rnd.sample(ids, 3)
    new = {}
    for k, o in cur.items():
        if rnd.random() < 0.6:
            n = list(o)
            for _ in range(rnd.randint(1, 2)):
                j = rnd.randrange(3)
                n[j] = rnd.choice([b for b in ids if b not in n])
            if rnd.random() < 0.2:
                n = n[1:] + n[:1]
            if n != o:
                new[k] = n
    return rnd, ids, cur, new


def later_dump(rnd, ids, cur, new, json_form: bool):
    """Each planned partition done, not started, in flight or diverged; a few untouched ones changed. Returns
    (lists, running, expected per planned key, changed unplanned keys)."""
    lists, running, want, changed = {}, {}, {}, set()
    fates = ["done", "not_started", "in_flight", "diverged"]
    for k, o in cur.items():
        if k not in new:
            if rnd.random() < 0.05:
                lists[k] = o[1:] + o[:1]  # someone reordered it
                changed.add(k)
            else:
                lists[k] = o
            continue
        n = new[k]
        fate = rnd.choice(fates)
        if fate == "done":
            lists[k] = list(n)
        elif fate == "not_started":
            lists[k] = list(o)
        elif fate == "in_flight":
            inc = [b for b in n if b not in o]
            if not inc:  # a reorder only: no flight possible, it is done instantly
                lists[k], fate = list(n), "done"
            elif json_form or rnd.random() < 0.3:
                # Kafka's union (target first, then the leaving brokers), as a JSON dump shows it mid-move
                lists[k] = list(n) + [b for b in o if b not in n]
                if set(lists[k]) == set(n):  # an RF-neutral move always leaves someone: cannot happen here
                    fate = "done" if lists[k] == n else fate
            else:
                running[k] = (list(o), list(n))
                lists[k] = list(n) + [b for b in o if b not in n]
        else:
            outsider = max(ids) + 1 + rnd.randrange(3)  # a broker neither list holds
            how = rnd.random()
            if how < 0.5:
                lists[k] = [outsider] + list(o[1:])
            elif how < 0.75 or set(n) == set(o):
                lists[k] = o[1:] + o[:1]  # the old brokers, reordered by someone
            else:
                lists[k] = n[1:] + n[:1]  # the planned brokers, in another order than planned
            if lists[k] in (o, n):  # a rotation that happens to be one of the two lists
                lists[k] = [outsider] + list(o[1:])
        want[k] = fate
    return lists, running, want, changed


def write_plan(tmp_path, state: ClusterState, new: dict, request=None, name="plan.json", sidecar=True):
    rows = [state.find(t, p) for (t, p) in sorted(new)]
    reps = state.replicas.copy()
    width = max(reps.shape[1], max(len(v) for v in new.values()))
    mat = np.full((reps.shape[0], width), PAD, dtype=np.int32)
    mat[:, : reps.shape[1]] = reps
    for (t, p), n in new.items():
        r = state.find(t, p)
        mat[r] = PAD
        mat[r, : len(n)] = n
    after = state.with_replicas(mat)
    text = reassignment_json(after, np.array(rows))
    path = tmp_path / name
    path.write_text(text)
    if sidecar:
        write_sidecar(path, state, request or PlanRequest(), text, current="before.json")
    return path


# ---- the sidecar -----------------------------------------------------------------------------------------


def test_sidecar_round_trip_and_place(tmp_path):
    rnd, ids, cur, new = random_case(1)
    state = state_of(cur)
    req = PlanRequest(remove=(3,), topic_rf=(("t1", 3),), extra_moves="2%", topics="t.*")
    plan = write_plan(tmp_path, state, new, req)
    side = tmp_path / "plan.meta.json"
    assert side.exists() and sidecar_path(plan) == str(side)
    assert sidecar_path("x/plan") == "x/plan.meta.json" and sidecar_path("a.b.json") == "a.b.meta.json"
    meta = read_sidecar(side)
    assert meta.request == req
    assert meta.topics == state.topics
    assert np.array_equal(meta.topic, state.topic) and np.array_equal(meta.partition, state.partition)
    assert np.array_equal(meta.replicas, state.replicas)
    assert meta.plan == "plan.json" and meta.current == "before.json" and meta.tool_version == fb.__version__
    # deterministic but for the time
    a = sidecar_text(plan, state, req, plan.read_text(), current="c", created="T")
    b = sidecar_text(plan, state, req, plan.read_text(), current="c", created="T")
    assert a == b and json.loads(a)["created"] == "T"
    # no temporary file left, nothing else written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "plan.meta.json"]


def test_sidecar_never_over_an_input_and_never_elsewhere(tmp_path):
    state = state_of({("a", 0): [1, 2], ("a", 1): [2, 3]})
    text = reassignment_json(state.with_replicas(np.array([[1, 3], [2, 3]])), np.array([0]))
    plan = tmp_path / "plan.json"
    plan.write_text(text)
    (tmp_path / "plan.meta.json").write_text("input")
    with pytest.raises(InputError, match="refusing to overwrite an input"):
        write_sidecar(plan, state, PlanRequest(), text, inputs=(str(tmp_path / "plan.meta.json"),))
    assert (tmp_path / "plan.meta.json").read_text() == "input"
    with pytest.raises(InputError, match="output folder does not exist"):
        write_sidecar(tmp_path / "missing" / "plan.json", state, PlanRequest(), text)


@pytest.mark.parametrize("edit, field", [
    (lambda d: "{not json", "malformed JSON"),
    (lambda d: json.dumps([1, 2]), "top level"),
    (lambda d: json.dumps({**d, "kind": "flowbalance frontier"}), "kind"),
    (lambda d: json.dumps({**d, "version": 7}), "version"),
    (lambda d: json.dumps({**d, "request": {**d["request"], "remove": "x"}}), "request.remove"),
    (lambda d: json.dumps({**d, "request": {**d["request"], "colour": 1}}), "request.colour"),
    (lambda d: json.dumps({**d, "assignment": {**d["assignment"], "replicas": d["assignment"]["replicas"][:-1]}}),
     "assignment.replicas"),
    (lambda d: json.dumps({**d, "assignment": {**d["assignment"], "replicas": [9] + d["assignment"]["replicas"][1:]}}),
     "assignment.sha256"),
    (lambda d: json.dumps({**d, "assignment": {**d["assignment"], "topic": ["x"] + d["assignment"]["topic"][1:]}}),
     "assignment.topic[0]"),
    (lambda d: json.dumps({**d, "assignment": {**d["assignment"], "topics": ["b", "a"]}}), "assignment.topics[1]"),
    (lambda d: json.dumps({**d, "plan_sha256": "0" * 64}), "plan_sha256"),
])
def test_malformed_or_foreign_sidecar_is_one_line(tmp_path, edit, field, run_cli):
    rnd, ids, cur, new = random_case(2, n_topics=2, parts=4)
    state = state_of(cur)
    plan = write_plan(tmp_path, state, new)
    side = tmp_path / "plan.meta.json"
    side.write_text(edit(json.loads(side.read_text())))
    with pytest.raises(InputError) as e:
        track(plan, state)
    assert field in str(e.value) and str(side) in str(e.value)
    dump = tmp_path / "now.json"
    dump.write_text(json_dump(cur))
    assert_one_line(*run_cli("status", plan, "--current", dump), field, str(side))


# ---- classification --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("form", ["describe", "json"])
def test_half_done_reassignment_classified(tmp_path, seed, form):
    rnd, ids, cur, new = random_case(seed)
    state = state_of(cur, brokers=set(ids) | set(range(max(ids) + 4)))
    plan = write_plan(tmp_path, state, new)
    lists, running, want, changed = later_dump(rnd, ids, cur, new, json_form=form == "json")
    dump = tmp_path / ("now.txt" if form == "describe" else "now.json")
    dump.write_text(describe(lists, running) if form == "describe" else json_dump(lists))
    loaded = load_cluster(dump)
    prog = track(plan, loaded.state, loaded.status, current_source=str(dump))
    got = {(prog.names[t], p): STATES[c] for t, p, c in zip(prog.topic.tolist(), prog.partition.tolist(),
                                                            prog.code.tolist())}
    assert got == want  # what was simulated
    # and a plain per-partition oracle over the same lists
    for k, n in new.items():
        shown = lists[k]
        target = running[k][1] if k in running else None
        assert oracle(cur[k], n, shown, target) == got[k], k
    elsewhere = {(prog.names[t], p) for t, p in zip(prog.elsewhere_topic.tolist(), prog.elsewhere_partition.tolist())}
    assert elsewhere == changed
    counts = prog.counts()
    assert sum(counts[s] for s in STATES) == len(new)
    assert prog.stale == bool(changed or counts["diverged"])
    assert {k for k in want if want[k] == "in_flight" and k in running} == \
        {(prog.names[t], p) for t, p, r in zip(prog.topic.tolist(), prog.partition.tolist(), prog.running.tolist()) if r}


def test_batch_steps_count_as_in_flight_and_bytes_add_up(tmp_path):
    """A completed step of batches --one-replica-per-partition is in flight, and bytes done + left = the plan's."""
    cur = {("a", 0): [1, 2, 3], ("a", 1): [1, 2, 3], ("a", 2): [4, 5, 6], ("a", 3): [4, 5, 6]}
    new = {("a", 0): [7, 8, 3], ("a", 1): [7, 8, 3], ("a", 2): [4, 5, 1], ("a", 3): [6, 4, 5]}
    sizes = {("a", 0): 100, ("a", 1): 10, ("a", 2): 1000, ("a", 3): 5}
    state = state_of(cur, brokers=range(1, 9), sizes=sizes)
    plan = write_plan(tmp_path, state, new)
    later = state_of({("a", 0): [7, 2, 3], ("a", 1): [7, 8, 3], ("a", 2): [4, 5, 6], ("a", 3): [6, 4, 5]},
                     brokers=range(1, 9), sizes=sizes)
    prog = track(plan, later)
    assert [STATES[c] for c in prog.code] == ["in_flight", "done", "not_started", "done"]
    b = prog.bytes()
    assert b == {"done": 100 + 2 * 10, "left": 100 + 1000, "unknown_sizes": 0}
    # busiest broker left: broker 1 receives 1000 and broker 4 sends 1000; broker 8 receives 100
    assert prog.estimated_seconds(10) == pytest.approx(100.0)
    assert prog.estimated_seconds(None) is None


def test_without_sidecar_counts_and_says_it_cannot_check(tmp_path, run_cli):
    rnd, ids, cur, new = random_case(3)
    state = state_of(cur)
    plan = write_plan(tmp_path, state, new, sidecar=False)
    lists, running, want, changed = later_dump(rnd, ids, cur, new, json_form=True)
    prog = classify(None, None, state_of(lists, brokers=set(ids) | set(range(20))), None)
    assert prog.counts()["planned"] == 0
    dump = tmp_path / "now.json"
    dump.write_text(json_dump(lists))
    loaded = load_cluster(dump)
    prog = track(plan, loaded.state, loaded.status)
    assert not prog.checked and not prog.stale
    got = dict(zip(((prog.names[t], p) for t, p in zip(prog.topic.tolist(), prog.partition.tolist())),
                   (STATES[c] for c in prog.code.tolist())))
    assert {k for k, v in got.items() if v == "done"} == {k for k in new if lists[k] == new[k]}
    assert all(v in ("done", "not_started") for v in got.values())
    code, out, err = run_cli("status", plan, "--current", dump)
    assert code == 0 and "no sidecar" in err and "cannot be checked for staleness" in err
    assert err.count("no sidecar") == 1


def test_a_million_replicas_classified_in_seconds():
    rng = np.random.default_rng(0)
    n, brokers = 333_334, 1000
    reps = np.stack([rng.choice(brokers, 3, replace=False) for _ in range(1000)])[rng.integers(0, 1000, n)]
    topics = [f"t{i:05d}" for i in range(n // 30 + 1)]
    names = [topics[i // 30] for i in range(n)]
    part = np.arange(n) % 30
    state = ClusterState.build(Brokers.build(np.arange(brokers + 1)), names, part, reps)
    moved = rng.random(n) < 0.3
    new = state.replicas.copy()
    new[moved, 0] = brokers  # the new broker takes the first replica
    later = new.copy()
    half = moved & (rng.random(n) < 0.5)
    later[half] = state.replicas[half]  # not started
    from flowbalance.formats.raw import RawAssignment
    from flowbalance.planmeta import sidecar_from_text

    rows = np.flatnonzero(moved)
    raw = RawAssignment("plan.json", [state.topics[state.topic[r]] for r in rows.tolist()], state.partition[rows].astype(np.int64),
                        new[rows].astype(np.int64), False, "json", np.arange(len(rows)))
    from flowbalance.planmeta import plan_sha256

    t = time.perf_counter()
    text = sidecar_text("plan.json", state, PlanRequest(), '{"partitions":[]}')
    meta = sidecar_from_text(text, "plan.meta.json")
    t_side = time.perf_counter() - t
    t = time.perf_counter()
    prog = classify(raw, meta, state.with_replicas(later), None)
    t_classify = time.perf_counter() - t
    counts = prog.counts()
    assert counts["done"] == int((moved & ~half).sum()) and counts["not_started"] == int(half.sum())
    assert counts["diverged"] == 0 and counts["changed_elsewhere"] == 0
    assert t_classify < 10 and t_side < 20, (t_classify, t_side)
    assert plan_sha256(raw)


# ---- staleness in batches, report --plan and status ------------------------------------------------------


@pytest.fixture
def stale_case(tmp_path):
    cur = {("a", p): [1 + p % 3, 1 + (p + 1) % 3] for p in range(6)}
    new = {("a", 0): [4, 2], ("a", 1): [2, 4]}
    state = state_of(cur, brokers=range(1, 5))
    plan = write_plan(tmp_path, state, new)
    brokers = tmp_path / "brokers.csv"
    brokers.write_text("id\n1\n2\n3\n4\n")
    fresh = tmp_path / "fresh.json"
    fresh.write_text(json_dump({**cur, ("a", 0): [4, 2]}))  # one partition done: not stale
    stale = tmp_path / "stale.json"
    stale.write_text(json_dump({**cur, ("a", 5): [1, 3]}))  # the plan leaves a-5 alone; someone reordered it
    return tmp_path, plan, brokers, fresh, stale


@pytest.mark.parametrize("command", ["batches", "report", "status"])
def test_stale_plan_refused_unless_forced(stale_case, command, run_cli):
    tmp, plan, brokers, fresh, stale = stale_case

    def args(dump):
        if command == "batches":
            return ["batches", plan, "--current", dump, "--brokers", brokers, "-o", tmp / dump.stem]
        if command == "report":
            return ["report", dump, "--brokers", brokers, "--plan", plan]
        return ["status", plan, "--current", dump, "--brokers", brokers]

    code, out, err = run_cli(*args(fresh))
    assert code == 0, err
    assert "stale" not in err
    assert_one_line(*run_cli(*args(stale)), "stale", "a-5", "--force", str(plan))
    assert not (tmp / "stale").exists()
    code, out, err = run_cli(*args(stale), "--force")
    assert code == 0, err
    assert "stale" in err and "(forced)" in err
    if command == "batches":
        assert (tmp / "stale" / "steps.txt").exists()
    (tmp / "plan.meta.json").unlink()  # without a sidecar: works, says it cannot check
    code, out, err = run_cli(*args(stale))
    assert code == 0 and "cannot be checked for staleness" in err


def test_status_json_and_terminal(tmp_path, run_cli):
    cur = {("a", 0): [1, 2], ("a", 1): [2, 3], ("b", 0): [3, 1], ("b", 1): [1, 2]}
    new = {("a", 0): [4, 2], ("a", 1): [2, 4], ("b", 0): [4, 1]}
    state = state_of(cur, brokers=range(1, 5))
    plan = write_plan(tmp_path, state, new, PlanRequest(add=(4,)))
    later = {("a", 0): [4, 2], ("a", 1): [2, 3], ("b", 0): [4, 1, 3], ("b", 1): [1, 2]}
    dump = tmp_path / "now.txt"
    dump.write_text(describe({**later, ("b", 0): [4, 1, 3]}, {("b", 0): ([3, 1], [4, 1])}))
    sizes = tmp_path / "sizes.csv"
    sizes.write_text("topic,partition,bytes\na,0,1000\na,1,2000\nb,0,4000\nb,1,1\n")
    code, out, err = run_cli("status", plan, "--current", dump, "--sizes", sizes, "--throttle", "100", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["totals"] == {"planned": 3, "done": 1, "in_flight": 1, "not_started": 1, "diverged": 0,
                           "changed_elsewhere": 0, "new_partitions": 0}
    assert d["bytes"] == {"done": 1000, "left": 6000, "unknown_sizes": 0}
    assert d["estimated_seconds"] == pytest.approx(60.0)  # broker 4 still receives a-1 (2000) and b-0 (4000)
    assert [p["state"] for p in d["partitions"]] == ["done", "not_started", "in_flight"]
    assert d["partitions"][2]["running"] is True
    assert d["made"]["request"] == {"add": [4]} and d["stale"] is False
    code, out2, err = run_cli("status", plan, "--current", dump, "--sizes", sizes, "--throttle", "100", "--json")
    assert out2 == out  # deterministic
    code, text, err = run_cli("status", plan, "--current", dump, "--sizes", sizes, "--throttle", "100")
    assert code == 0 and "not started" in text and "a-1" in text and "Estimated time left" in text
    code, text, err = run_cli("status", plan, "--current", dump, "--throttle", "0")
    assert code == 2 and "--throttle" in err


def test_status_paths_are_not_markup_or_control(tmp_path, run_cli):
    cur = {("a", 0): [1, 2]}
    state = state_of(cur, brokers=range(1, 4))
    folder = tmp_path / "[bold]x\x1b[2J"
    folder.mkdir()
    plan = write_plan(folder, state, {("a", 0): [3, 2]}, name="[red]p.json")
    dump = folder / "now.json"
    dump.write_text(json_dump(cur))
    code, text, err = run_cli("status", plan, "--current", dump)
    assert code == 0 and "[red]p.json" in text and "[bold]x\\x1b[2J" in text and "\x1b" not in text


# ---- resume ----------------------------------------------------------------------------------------------


def _final_check(p2, keep_rows, keep_lists):
    after = p2.after
    for r, lst in zip(keep_rows, keep_lists):
        got = [int(b) for b in after.replicas[r] if b != PAD]
        assert got == lst
    assert p2.metrics_after.replica_spread <= 1
    removed = after.brokers.ids[after.brokers.removed]
    assert not np.isin(after.replicas, removed).any()


@pytest.mark.parametrize("form", ["describe", "json"])
def test_resume_keeps_done_moves_and_reaches_a_verified_state(tmp_path, form):
    from flowbalance.generate import generate_cluster

    cl = generate_cluster(brokers=8, topics=6, partitions=8, rf=3, seed=4)
    state = cl.state if hasattr(cl, "state") else cl
    req = PlanRequest(remove=(7,))
    p = fb.plan(state, req)
    text = fb.plan_files(p).plan
    plan = tmp_path / "plan.json"
    plan.write_text(text)
    write_sidecar(plan, p.before, req, text, current="before")
    rows = p.changes.changed_rows
    assert len(rows) >= 6
    rnd = random.Random(5)
    lists, running = {}, {}
    done_keys, flight_keys = set(), set()
    for r in range(state.num_partitions):
        k = (state.topics[state.topic[r]], int(state.partition[r]))
        o = [int(b) for b in state.replicas[r] if b != PAD]
        lists[k] = o
    fates = {}
    for i, r in enumerate(rows.tolist()):
        k = (state.topics[state.topic[r]], int(state.partition[r]))
        o = lists[k]
        n = [int(b) for b in p.after.replicas[r] if b != PAD]
        fate = ["done", "flight", "not"][i % 3]
        if fate == "done":
            lists[k] = n
            done_keys.add(k)
        elif fate == "flight" and set(n) != set(o):
            lists[k] = n + [b for b in o if b not in n]
            if form == "describe":
                running[k] = (o, n)
            flight_keys.add(k)
        fates[k] = fate
    dump = tmp_path / ("now.txt" if form == "describe" else "now.json")
    dump.write_text(describe(lists, running) if form == "describe" else json_dump(lists))
    loaded = load_cluster(dump)
    res = resume_input(plan, loaded.state, loaded.status, current_source=str(dump))
    assert res.request == req  # from the sidecar
    # the command line's defaults (extra_moves "0") are no request of their own: still the sidecar's
    assert resume_input(plan, loaded.state, loaded.status, PlanRequest(extra_moves="0")).request == req
    other = PlanRequest(remove=(6,))
    replaced = resume_input(plan, loaded.state, loaded.status, other)
    assert replaced.request == other and any("replaces" in n for n in replaced.input.notes)
    p2 = fb.plan(res.input.state, res.request, pinned=res.input.pinned, notes=res.input.notes)
    later = loaded.state
    keep_rows, keep_lists = [], []
    for k in done_keys | flight_keys:
        r = later.find(*k)
        keep_rows.append(r)
        keep_lists.append([int(b) for b in p.after.replicas[p.after.find(*k)] if b != PAD])
    # done moves kept (not in the new plan), in-flight ones left to finish at the planned list
    listed = set()
    for r in p2.changes.changed_rows.tolist():
        listed.add((later.topics[later.topic[r]], int(later.partition[r])))
    assert not listed & (done_keys | flight_keys)
    _final_check(p2, keep_rows, keep_lists)
    assert "resumed" in p2.certificate.notes[0] if hasattr(p2.certificate, "notes") else True
    # and the resumed plan, tracked against the dump it was made from, is fresh; its sidecar records that state
    text2 = fb.plan_files(p2).plan
    plan2 = tmp_path / "plan2.json"
    plan2.write_text(text2)
    write_sidecar(plan2, res.input.state, res.request, text2)
    prog = track(plan2, loaded.state, loaded.status)
    assert not prog.stale, prog.stale_message()
