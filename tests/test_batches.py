"""``flowbalance batches``: splitting a plan into ordered batches, against a plain-Python first-fit oracle.

Properties: the batches applied in order give the plan exactly; every intermediate list is valid; no broker
takes part in more than K steps per batch; bytes per batch stay within B except single oversized steps alone
in their batch; one new replica per partition per batch with --one-replica-per-partition; reorder-only
partitions in the first batch; rollback, election and steps.txt; one-line refusals that write nothing.
"""
from __future__ import annotations

import json
import re
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.batches import ORDERS, format_duration, split_plan
from flowbalance.planfile import plan_from_text, read_plan
from flowbalance.errors import InputError
from flowbalance.formats.writers import election_json, reassignment_json
from flowbalance.generate import generate_cluster
from flowbalance.load import load_cluster
from flowbalance.model import Brokers, ClusterState
from flowbalance.planner import plan

from .conftest import TESTDATA
from .test_bad_input import assert_one_line

KAFKA = TESTDATA / "kafka"
SEED = TESTDATA / "seed"
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- helpers ----------------------------------------------------------------------------------------------


def lists(state: ClusterState) -> list[list[int]]:
    return [[int(b) for b in row if b >= 0] for row in state.replicas]


def build(rows: list[tuple[str, int, list[int]]], sizes: list[int] | None = None, brokers=None) -> ClusterState:
    ids = sorted({b for _, _, r in rows for b in r}) if brokers is None else brokers
    width = max(len(r) for _, _, r in rows)
    mat = np.full((len(rows), width), -1)
    for i, (_, _, r) in enumerate(rows):
        mat[i, : len(r)] = r
    return ClusterState.build(Brokers.build(ids), [t for t, _, _ in rows], [p for _, p, _ in rows], mat,
                              None if sizes is None else np.array(sizes))


def with_lists(state: ClusterState, new: list[list[int]]) -> ClusterState:
    width = max(len(r) for r in new)
    mat = np.full((len(new), width), -1)
    for i, r in enumerate(new):
        mat[i, : len(r)] = r
    return state.with_replicas(mat)


def oracle(cur: list[list[int]], fin: list[list[int]], size: list[int], K, B, one: bool, order: str,
           rank: list[int] | None = None) -> list[list[tuple[int, list[int]]]]:
    """The spec written out naively: steps per partition, ordered, first fit by trying every batch in turn."""
    changed = [i for i in range(len(cur)) if cur[i] != fin[i]]
    reorder = [i for i in changed if set(cur[i]) == set(fin[i])]
    moving = [i for i in changed if i not in reorder]
    sz = [max(s, 0) for s in size]
    key = {"largest": lambda i: (-sz[i], i), "smallest": lambda i: (sz[i], i),
           "as-is": lambda i: ((rank or list(range(len(cur))))[i], i)}[order]
    batches: list[dict] = []

    def new_batch():
        batches.append({"rows": [], "count": {}, "bytes": 0, "closed": False})
        return len(batches) - 1

    for i in sorted(moving, key=key):
        o, n = cur[i], fin[i]
        incoming = [b for b in n if b not in o]
        outgoing = [b for b in o if b not in n]
        steps = []
        if one and len(incoming) >= 2:
            now = list(o)
            for j, b in enumerate(incoming):
                if j == len(incoming) - 1:
                    nxt = list(n)
                elif j < len(outgoing):
                    nxt = [b if x == outgoing[j] else x for x in now]
                else:
                    nxt = now + [b]
                steps.append((now, nxt))
                now = nxt
        else:
            steps.append((o, n))
        lo = 0
        for before, after in steps:
            inc = set(after) - set(before)
            parts = inc | (set(before) - set(after))
            nbytes = sz[i] * len(inc)
            chosen = None
            if B is not None and nbytes > B:
                chosen = new_batch()
                batches[chosen]["closed"] = True
            else:
                for c in range(lo, len(batches)):
                    bt = batches[c]
                    if bt["closed"] or (B is not None and bt["bytes"] + nbytes > B):
                        continue
                    if K is not None and any(bt["count"].get(b, 0) >= K for b in parts):
                        continue
                    chosen = c
                    break
                if chosen is None:
                    chosen = new_batch()
            bt = batches[chosen]
            bt["rows"].append((i, after))
            bt["bytes"] += nbytes
            for b in parts:
                bt["count"][b] = bt["count"].get(b, 0) + 1
            lo = chosen + 1
    if reorder and not batches:
        new_batch()
    for i in reorder:
        batches[0]["rows"].append((i, fin[i]))
    return [sorted(b["rows"]) for b in batches]


def check(current: ClusterState, final: ClusterState, res, K=None, B=None, one=False) -> None:
    """The properties every split must have, computed independently of the implementation."""
    cur, fin = lists(current), lists(final)
    size = [max(int(s), 0) for s in current.size]
    state = [list(r) for r in cur]
    seen: dict[int, list[int]] = {}
    changed = {i for i in range(len(cur)) if cur[i] != fin[i]}
    reorder = {i for i in changed if set(cur[i]) == set(fin[i])}
    for c, batch in enumerate(res.batches):
        rows = batch.rows.tolist()
        assert rows == sorted(set(rows)), "each partition at most once per batch, rows ascending"
        got = [[int(b) for b in r if b >= 0] for r in batch.replicas]
        count: dict[int, int] = {}
        recv: dict[int, int] = {}
        sent: dict[int, int] = {}
        nbytes = copies = 0
        moving_rows = []
        for i, new in zip(rows, got):
            old = state[i]
            assert new and len(set(new)) == len(new), (i, new)  # valid on its own
            assert new != old, "a batch lists only partitions it changes"
            inc, out = set(new) - set(old), set(old) - set(new)
            if i in reorder:
                assert c == 0 and not inc and not out
            else:
                moving_rows.append(i)
            if one:
                assert len(inc) <= 1, "one new replica per partition per batch"
            for b in inc | out:
                count[b] = count.get(b, 0) + 1
            nbytes += size[i] * len(inc)
            copies += len(inc)
            for b in inc:
                recv[b] = recv.get(b, 0) + size[i]
            if inc:  # the preferred leader before the step sends the copies
                sent[old[0]] = sent.get(old[0], 0) + size[i] * len(inc)
            seen.setdefault(i, []).append(c)
            state[i] = new
        if K is not None:
            assert max(count.values(), default=0) <= K
        if B is not None and nbytes > B:
            assert len(moving_rows) == 1 and batch.oversized  # a single oversized step, alone
        assert batch.copies == copies and batch.bytes == nbytes
        assert batch.max_participation == max(count.values(), default=0)
        assert batch.peak_broker_bytes == max([max(recv.get(b, 0), sent.get(b, 0)) for b in {*recv, *sent}], default=0)
        assert batch.partitions == len(rows) and batch.steps == len(moving_rows)
    assert state == fin, "the batches in order give exactly the plan"
    assert set(seen) == changed
    for i, cs in seen.items():
        assert cs == sorted(set(cs)), "steps of a partition in strictly increasing batches"
        if not one:
            assert len(cs) == 1
    assert res.changed_rows.tolist() == sorted(changed)
    assert res.leader_changed_rows.tolist() == [i for i in range(len(cur)) if cur[i][0] != fin[i][0]]
    assert lists(res.rollback_state()) == [cur[i] for i in sorted(changed)]


def as_oracle(res) -> list[list[tuple[int, list[int]]]]:
    return [[(int(i), [int(b) for b in r if b >= 0]) for i, r in zip(b.rows, b.replicas)] for b in res.batches]


@st.composite
def cluster_and_plan(draw):
    """A small cluster with sizes (some unknown) and random planned lists, new brokers and RF changes included."""
    n = draw(st.integers(2, 6))
    pool = list(range(n + 2))  # brokers n, n+1 are new in the plan
    nparts = draw(st.integers(1, 10))
    rows, new = [], []
    for p in range(nparts):
        k = draw(st.integers(1, min(3, n)))
        old = draw(st.permutations(list(range(n))))[:k]
        rows.append((draw(st.sampled_from(["a", "b"])) + "t", p, old))
        kind = draw(st.sampled_from(["same", "reorder", "random"]))
        if kind == "same":
            new.append(list(old))
        elif kind == "reorder":
            new.append(list(draw(st.permutations(old))))
        else:
            k2 = draw(st.integers(1, 4))
            new.append(draw(st.permutations(pool))[:k2])
    known = draw(st.booleans())
    sizes = [draw(st.sampled_from([-1, 0, 5, 10, 30, 100])) if known else -1 for _ in rows]
    current = build(rows, sizes, brokers=list(range(n)))
    # ClusterState.build sorts rows by (topic, partition): map the planned lists along
    order = sorted(range(nparts), key=lambda i: (rows[i][0], rows[i][1]))
    final = with_lists(current, [new[i] for i in order])
    return current, final


LIMITS = st.tuples(st.sampled_from([None, 1, 2, 3]), st.sampled_from([None, 1, 20, 60, 250]), st.booleans(),
                   st.sampled_from(ORDERS))


# ---- the library against the oracle -----------------------------------------------------------------------


@FAST
@given(cluster_and_plan(), LIMITS)
def test_random_plans_match_the_first_fit_oracle(cp, limits):
    """fewest=False is first fit exactly; the default is first fit's split or one with fewer batches."""
    current, final = cp
    K, B, one, order = limits
    res = split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                     order=order, fewest=False)
    check(current, final, res, K, B, one)
    assert as_oracle(res) == oracle(lists(current), lists(final), current.size.tolist(), K, B, one, order)
    fewest_or_first_fit(current, final, res, K, B, one, order)


def fewest_or_first_fit(current, final, ff, K, B, one, order):
    """The default split: first fit's batches exactly when no split was found with fewer; never more."""
    res = split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                     order=order)
    check(current, final, res, K, B, one)
    if len(res) == len(ff):
        assert as_oracle(res) == as_oracle(ff) and res.method == ff.method in ("first fit", "no limits")
    else:
        assert len(res) < len(ff) and res.method != "first fit"
    assert res.bound.batches <= len(res) and res.bound_met == (len(res) == res.bound.batches)
    assert not res.bound_met or res.proven


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from(["add", "remove", "rf"]), LIMITS)
def test_planner_output_splits_exactly(seed, change, limits):
    state = generate_cluster(brokers=5, topics=3, partitions=(1, 5), rf=2, skew=0.5, sizes=True, seed=seed)
    kw = {"add": {"add": [5, 6]}, "remove": {"remove": [0]}, "rf": {"replication_factor": 3}}[change]
    p = plan(state, **kw)
    K, B, one, order = limits
    B = None if B is None else B << 26  # generated sizes are around 1 GiB
    res = split_plan(p.before, p.after, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                     order=order, fewest=False)
    check(p.before, p.after, res, K, B, one)
    assert as_oracle(res) == oracle(lists(p.before), lists(p.after), p.before.size.tolist(), K, B, one, order)
    assert res.copies == p.changes.moves
    fewest_or_first_fit(p.before, p.after, res, K, B, one, order)


def test_one_replica_steps_replace_in_place_and_append_then_shrink_last():
    current = build([("t", 0, [1, 2, 3]), ("t", 1, [1, 2]), ("t", 2, [1, 2, 3, 4])], [10, 10, 10],
                    brokers=[1, 2, 3, 4, 5, 6, 7])
    final = with_lists(current, [[4, 5, 6], [3, 4, 5], [7, 6]])
    res = split_plan(current, final, one_replica_per_partition=True)
    steps = {}
    for c, b in enumerate(res.batches):
        for i, r in zip(b.rows.tolist(), b.replicas.tolist()):
            steps.setdefault(i, []).append((c, [x for x in r if x >= 0]))
    # positions kept: 1 -> 4 in slot 0, 2 -> 5 in slot 1, then the planned list
    assert steps[0] == [(0, [4, 2, 3]), (1, [4, 5, 3]), (2, [4, 5, 6])]
    # RF grows: replace 1 by 3, 2 by 4, then append... the last step writes the plan
    assert steps[1] == [(0, [3, 2]), (1, [3, 4]), (2, [3, 4, 5])]
    # RF shrinks: one incoming broker per step, removals in the final step
    assert steps[2] == [(0, [7, 2, 3, 4]), (1, [7, 6])]
    assert [b.copies for b in res.batches] == [3, 3, 2]


def test_reorder_only_partitions_go_first_and_do_not_count():
    current = build([("t", 0, [1, 2]), ("t", 1, [3, 4]), ("t", 2, [1, 3])], [100, 100, 100])
    final = with_lists(current, [[2, 1], [1, 2], [3, 2]])
    res = split_plan(current, final, max_moves_per_broker=1, max_bytes_per_batch=200, order="smallest")
    check(current, final, res, 1, 200)
    # t-1 takes brokers 1, 2, 3, 4 and t-2 brokers 1, 2: two batches; t-0 only reorders, in the first
    assert [b.rows.tolist() for b in res.batches] == [[0, 1], [2]]
    assert res.batches[0].reorder_only == 1 and res.batches[0].bytes == 200 and res.batches[0].max_participation == 1
    assert res.reorder_only == 1 and res.leader_changed_rows.tolist() == [0, 1, 2]


def test_oversized_step_is_alone_and_warned():
    current = build([("big", 0, [1, 2]), ("s", 0, [1, 2]), ("s", 1, [2, 3])], [500, 10, 10], brokers=[1, 2, 3, 4])
    final = with_lists(current, [[1, 4], [1, 3], [2, 4]])
    res = split_plan(current, final, max_bytes_per_batch=100)
    check(current, final, res, None, 100)
    assert [b.rows.tolist() for b in res.batches] == [[0], [1, 2]]
    assert res.batches[0].oversized and not res.batches[1].oversized
    assert any("big-0" in w and "500" in w and "batch of its own" in w for w in res.warnings)


def test_unknown_sizes_with_a_byte_limit_warn():
    current = build([("t", 0, [1, 2]), ("t", 1, [2, 3])])
    final = with_lists(current, [[1, 3], [2, 1]])
    res = split_plan(current, final, max_bytes_per_batch=1)
    assert len(res) == 1 and any("sizes are unknown" in w for w in res.warnings)
    assert res.estimated_seconds(1000) == [None]


def test_estimate_is_the_busiest_broker_over_the_throttle():
    # the leader of the old list sends each copy; each incoming broker receives one
    current = build([("t", 0, [1, 2]), ("t", 1, [1, 3])], [600, 300], brokers=[1, 2, 3, 4, 5])
    final = with_lists(current, [[4, 5], [1, 4]])
    res = split_plan(current, final)
    (b,) = res.batches
    # broker 1 sends 2 x 600 + 300 = 1500; broker 4 receives 900; broker 5 receives 600
    assert b.peak_broker_bytes == 1500 and b.bytes == 1500
    assert res.estimated_seconds(10) == [150.0]
    assert format_duration(150.0) == "~ 3 min" and format_duration(720) == "~ 12 min"
    assert format_duration(30) == "~ 30 s" and format_duration(3 * 3600 + 300) == "~ 3 h 05 min"
    assert format_duration(None) == "unknown"


def test_same_input_same_output_bytes():
    state = generate_cluster(brokers=8, topics=4, partitions=(2, 9), rf=3, skew=0.8, sizes=True, seed=4)
    p = plan(state, add=[8, 9], remove=[0])

    def files():
        res = split_plan(p.before, p.after, max_moves_per_broker=2, one_replica_per_partition=True)
        return [reassignment_json(res.batch_state(i)) for i in range(len(res))] + [
            reassignment_json(res.rollback_state()), election_json(res.final, res.leader_changed_rows)]

    assert files() == files()


@pytest.mark.parametrize("kw", [{"max_moves_per_broker": 0}, {"max_bytes_per_batch": -1}, {"order": "random"}])
def test_bad_limits_name_the_parameter(kw):
    current = build([("t", 0, [1, 2])])
    with pytest.raises(InputError) as err:
        split_plan(current, current, **kw)
    (param,) = kw
    assert (err.value.source, err.value.place) == ("split_plan", param)
    assert "--" not in str(err.value)  # the command line shows its flag instead (test_bad_input_table)


# ---- reading the plan onto the current assignment ---------------------------------------------------------


def _plan_text(*parts) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in parts]})


def test_plan_lists_only_some_partitions_and_may_name_new_brokers():
    current = build([("t", 0, [1, 2]), ("t", 1, [2, 3]), ("u", 0, [3, 1])])
    pf = plan_from_text(_plan_text(("u", 0, [3, 9]), ("t", 0, [1, 2])), "p.json", current)
    assert lists(pf.final) == [[1, 2], [2, 3], [3, 9]]
    assert pf.listed == 2 and pf.no_ops == 1 and pf.new_brokers == (9,)
    assert pf.rank.tolist()[2] == 0 and pf.rank.tolist()[0] == 1  # plan-file position, for --order as-is
    res = split_plan(current, pf.final, order="as-is", rank=pf.rank)
    assert res.changed_rows.tolist() == [2]


@pytest.mark.parametrize("text, needles", [
    (_plan_text(("t", 0, [1, 2]), ("t", 7, [1, 2])), ["p.json", "partitions[1]", "not in the current assignment", "t-7"]),
    (_plan_text(("zz", 0, [1, 2])), ["p.json", "partitions[0]", "zz-0"]),
    (_plan_text(("t", 0, [1, 1])), ["p.json", "partitions[0].replicas", "broker 1 appears twice", "[1, 1]"]),
    (_plan_text(("t", 0, [])), ["p.json", "partitions[0].replicas", "empty replica list"]),
])
def test_bad_plan_is_one_line(text, needles):
    current = build([("t", 0, [1, 2]), ("t", 1, [2, 3])])
    with pytest.raises(InputError) as err:
        plan_from_text(text, "p.json", current)
    for n in needles:
        assert n in err.value.line(), (n, err.value.line())


def test_empty_plan_has_no_batches():
    current = build([("t", 0, [1, 2])])
    pf = plan_from_text('{"version":1,"partitions":[\n]}\n', "p.json", current)
    res = split_plan(current, pf.final)
    assert len(res) == 0 and len(res.changed_rows) == 0


# ---- the command line -------------------------------------------------------------------------------------


def _commands(steps: str) -> list[str]:
    return [ln for ln in steps.splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture
def kafka_plan(tmp_path, run_cli):
    out = tmp_path / "plan.json"
    code, _, err = run_cli("plan", KAFKA / "assignment.json", "--brokers", KAFKA / "brokers.json", "--remove", "2",
                           "-o", out, "--json")
    assert code == 0, err
    return out


def test_cli_writes_batches_steps_rollback_election(tmp_path, run_cli, kafka_plan):
    out = tmp_path / "out"
    code, stdout, err = run_cli("batches", kafka_plan, "--current", KAFKA / "assignment.json", "--brokers",
                                KAFKA / "brokers.json", "--sizes", KAFKA / "logdirs.txt", "--max-moves-per-broker", "2",
                                "--one-replica-per-partition", "--throttle", "5000000", "-o", out, "--json")
    assert code == 0, err
    data = json.loads(stdout)
    n = data["batches"]
    names = [f"batch-{i:03d}.json" for i in range(1, n + 1)]
    assert n >= 2 and sorted(p.name for p in out.iterdir()) == sorted(names + ["election.json", "rollback.json",
                                                                               "steps.txt"])
    assert data["files"] == sorted(str(out / f) for f in names + ["election.json", "rollback.json", "steps.txt"])

    # the batch files applied in order to CURRENT give the plan; each within the limits
    state = {(p["topic"], p["partition"]): p["replicas"]
             for p in json.loads((KAFKA / "assignment.json").read_text())["partitions"]}
    current = dict(state)
    for name, info in zip(names, data["per_batch"]):
        doc = json.loads((out / name).read_text())
        count: dict[int, int] = {}
        for p in doc["partitions"]:
            key = (p["topic"], p["partition"])
            old, new = state[key], p["replicas"]
            assert len(set(set(new) - set(old))) <= 1 and p["log_dirs"] == ["any"] * len(new)
            for b in set(new) ^ set(old):
                count[b] = count.get(b, 0) + 1
            state[key] = new
        assert max(count.values(), default=0) <= 2
        assert info["max_broker_participation"] == max(count.values(), default=0)
        assert info["partitions"] == len(doc["partitions"])
    planned = {(p["topic"], p["partition"]): p["replicas"] for p in json.loads(kafka_plan.read_text())["partitions"]}
    assert state == {**current, **planned}
    changed = sorted(k for k in planned if planned[k] != current[k])
    rollback = json.loads((out / "rollback.json").read_text())["partitions"]
    assert [(p["topic"], p["partition"]) for p in rollback] == changed
    assert all(p["replicas"] == current[(p["topic"], p["partition"])] for p in rollback)
    election = json.loads((out / "election.json").read_text())["partitions"]
    assert [(p["topic"], p["partition"]) for p in election] == [k for k in changed if planned[k][0] != current[k][0]]
    assert data["totals"]["copies"] == sum(b["copies"] for b in data["per_batch"])
    assert data["totals"]["estimated_seconds"] == pytest.approx(sum(b["estimated_seconds"] for b in data["per_batch"]))

    steps = (out / "steps.txt").read_text()
    cmds = _commands(steps)
    expect = []
    for name in names:
        f = out / name
        expect.append(f"kafka-reassign-partitions --bootstrap-server $BOOTSTRAP --reassignment-json-file {f} "
                      "--execute --throttle 5000000")
        expect.append(f"kafka-reassign-partitions --bootstrap-server $BOOTSTRAP --reassignment-json-file {f} --verify")
    expect.append("kafka-leader-election --bootstrap-server $BOOTSTRAP --election-type preferred "
                  f"--path-to-json-file {out / 'election.json'}")
    assert cmds == expect
    head = steps.split("batch 1 of")[0]
    assert f"--reassignment-json-file {out / 'rollback.json'} --execute" in head  # how to roll back, at the top
    assert "--verify also removes the throttle" in steps
    assert len(re.findall(r"estimated copy time ~ \d+ (s|min|h)", steps)) == n


def test_cli_same_bytes_twice_and_bootstrap_given(tmp_path, run_cli, kafka_plan):
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["--current", KAFKA / "describe.txt", "--max-bytes-per-batch", "1000000000", "--sizes", KAFKA / "logdirs.txt",
            "--bootstrap-server", "kafka-1:9092"]
    assert run_cli("batches", kafka_plan, *args, "-o", a)[0] == 0
    code, _, err = run_cli("batches", kafka_plan, *args, "-o", b)
    assert code == 0
    assert "more than --max-bytes-per-batch" in err  # orders-5 is above 1 GB on its own
    assert sorted(p.name for p in a.iterdir()) == sorted(p.name for p in b.iterdir())
    for p in a.iterdir():
        if p.name != "steps.txt":
            assert p.read_bytes() == (b / p.name).read_bytes(), p.name
    steps = (a / "steps.txt").read_text()
    assert (b / "steps.txt").read_text() == steps.replace(str(a), str(b))
    assert "$BOOTSTRAP" not in steps and "--bootstrap-server kafka-1:9092 " in steps and "--throttle" not in steps


def test_cli_without_sizes_says_the_estimate_is_unknown(tmp_path, run_cli, kafka_plan):
    out = tmp_path / "o"
    code, stdout, err = run_cli("batches", kafka_plan, "--current", KAFKA / "assignment.json", "--throttle", "1000",
                                "-o", out)
    assert code == 0, err
    assert "unknown" in stdout and "sizes are unknown" in err
    assert "estimated copy time unknown" in (out / "steps.txt").read_text()


def test_cli_refusals_are_one_line_and_write_nothing(tmp_path, run_cli, kafka_plan):
    out = tmp_path / "out"
    doc = json.loads(kafka_plan.read_text())
    doc["partitions"].append({"topic": "clicks", "partition": 99, "replicas": [1, 3]})
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps(doc))
    doc["partitions"][-1] = {"topic": "clicks", "partition": 0, "replicas": [3, 3]}
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(doc))
    cur = ["--current", KAFKA / "assignment.json"]
    cases = [
        ([unknown, *cur], ["unknown.json", f"partitions[{len(doc['partitions']) - 1}]", "clicks-99", "assignment.json"]),
        ([twice, *cur], ["twice.json", "replicas", "broker 3 appears twice", "[3, 3]"]),
        ([kafka_plan, *cur, "--max-moves-per-broker", "0"], ["--max-moves-per-broker", "at least 1", "0"]),
        ([kafka_plan, *cur, "--order", "biggest"], ["--order", "largest, smallest, as-is", "'biggest'"]),
        ([kafka_plan, *cur, "--max-bytes-per-batch", "0"], ["--max-bytes-per-batch", "0"]),
        ([kafka_plan, *cur, "--throttle", "-1"], ["--throttle", "-1"]),
        ([kafka_plan, "--current", tmp_path / "missing.txt"], ["missing.txt", "cannot read"]),
    ]
    for args, needles in cases:
        code, stdout, err = run_cli("batches", *args, "-o", out)
        assert_one_line(code, stdout, err, *needles)
        assert not out.exists()


def test_cli_warns_about_batch_files_of_an_earlier_run(tmp_path, run_cli, kafka_plan):
    out = tmp_path / "out"
    cur = ["--current", KAFKA / "assignment.json", "-o", out]
    code, _, err = run_cli("batches", kafka_plan, *cur, "--max-moves-per-broker", "1")
    assert code == 0 and "earlier run" not in err
    many = len(list(out.glob("batch-*.json")))
    code, stdout, err = run_cli("batches", kafka_plan, *cur, "--json")
    assert code == 0 and json.loads(stdout)["batches"] == 1 < many
    assert f"{many - 1} batch files from an earlier run" in err
    assert len(_commands((out / "steps.txt").read_text())) == 3


def test_cli_refuses_to_overwrite_an_input(tmp_path, run_cli, kafka_plan):
    out = tmp_path / "out"
    out.mkdir()
    inside = out / "batch-001.json"
    inside.write_bytes(kafka_plan.read_bytes())
    before = inside.read_bytes()
    code, stdout, err = run_cli("batches", inside, "--current", KAFKA / "assignment.json", "-o", out)
    assert_one_line(code, stdout, err, "batch-001.json", "refusing to overwrite an input")
    assert inside.read_bytes() == before and [p.name for p in out.iterdir()] == ["batch-001.json"]


def test_cli_seed_plan_is_one_batch(tmp_path, run_cli):
    plan_file = tmp_path / "plan.json"
    code, _, err = run_cli("plan", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "--remove", "19",
                           "-o", plan_file)
    assert code == 0, err
    out = tmp_path / "seed"
    code, stdout, err = run_cli("batches", plan_file, "--current", SEED / "assignment.json", "--max-moves-per-broker",
                                "1", "-o", out)
    assert code == 0, err
    assert (out / "batch-001.json").read_bytes() == plan_file.read_bytes()
    assert not (out / "batch-002.json").exists()
    assert "Batches: 1" in stdout
    # the failover stage changed one partition's leader (no data moved): the batch's election names it
    led = {(p["topic"], p["partition"]): p["replicas"][0] for p in json.loads(plan_file.read_text())["partitions"]}
    was = {(p["topic"], p["partition"]): p["replicas"][0]
           for p in json.loads((SEED / "assignment.json").read_text())["partitions"]}
    changed = sorted(k for k, v in led.items() if v != was[k])
    assert [(p["topic"], p["partition"]) for p in json.loads((out / "election.json").read_text())["partitions"]] == changed
    assert len(changed) == 1


def test_read_plan_names_the_file(tmp_path):
    current = load_cluster(KAFKA / "assignment.json").state
    bad = tmp_path / "p.json"
    bad.write_text('{"partitions": [\n  {"topic": "t",, "partition": 0}\n]}')
    with pytest.raises(InputError) as err:
        read_plan(bad, current)
    assert str(bad) in err.value.line() and "line 2 column" in err.value.line()
