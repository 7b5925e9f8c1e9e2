"""``batches``: the fewest batches, against an independent brute-force minimum on small plans.

The oracle builds the steps from the lists as the spec says (the same rules as test_batches.oracle), then finds
the least number of batches by trying every grouping of the steps (restricted growth strings, pruned by the
limits and by the best count so far): a grouping is a split when every group respects K and B (a step above B
alone), holds at most one step of a partition, and the groups can be put in an order where every partition's
steps go forward (the group graph has no cycle). The library must reach that minimum, never exceed first fit,
state a bound no larger, and be proven on plans this small. Larger planned moves (adding brokers) must meet
the bound, through the tabu search when first fit does not.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import flowbalance.batch_rounds as br
from flowbalance.batches import split_plan, verify_batches
from flowbalance.generate import generate_cluster
from flowbalance.planner import plan

from .test_batches import build, check, kafka_plan, lists, with_lists  # noqa: F401 (kafka_plan: a fixture)
from .test_batches_verify import known_plan


# ---- the oracle ---------------------------------------------------------------------------------------------


def naive_steps(cur: list[list[int]], fin: list[list[int]], size: list[int], one: bool):
    """(partition, k, brokers taking part, bytes) per step; reorder-only partitions have none."""
    out = []
    for i, (o, n) in enumerate(zip(cur, fin)):
        if o == n or set(o) == set(n):
            continue
        incoming = [b for b in n if b not in o]
        outgoing = [b for b in o if b not in n]
        pairs = [(o, n)]
        if one and len(incoming) >= 2:
            pairs, now = [], list(o)
            for j, b in enumerate(incoming):
                if j == len(incoming) - 1:
                    nxt = list(n)
                elif j < len(outgoing):
                    nxt = [b if x == outgoing[j] else x for x in now]
                else:
                    nxt = now + [b]
                pairs.append((now, nxt))
                now = nxt
        for k, (before, after) in enumerate(pairs):
            inc = set(after) - set(before)
            out.append((i, k, inc | (set(before) - set(after)), max(size[i], 0) * len(inc)))
    return out


def brute_min(steps, K, B, any_change: bool) -> int:
    """The least number of batches, by trying every grouping of the steps."""
    m = len(steps)
    if m == 0:
        return 1 if any_change else 0
    best = [m]  # every step alone is always a split
    groups: list[dict] = []
    where = [-1] * m

    def fits(g: dict, s) -> bool:
        i, _, parts, w = s
        if g["alone"] or (B is not None and w > B) or i in g["parts"]:
            return False
        if B is not None and g["bytes"] + w > B:
            return False
        return K is None or all(g["count"].get(b, 0) < K for b in parts)

    def put(g: dict, j: int) -> None:
        i, _, parts, w = steps[j]
        g["parts"].add(i)
        g["bytes"] += w
        for b in parts:
            g["count"][b] = g["count"].get(b, 0) + 1

    def take(g: dict, j: int) -> None:
        i, _, parts, w = steps[j]
        g["parts"].discard(i)
        g["bytes"] -= w
        for b in parts:
            g["count"][b] -= 1

    def ordered() -> bool:
        edges = {(where[a], where[b]) for a in range(m) for b in range(m)
                 if steps[a][0] == steps[b][0] and steps[b][1] == steps[a][1] + 1}
        n = len(groups)
        indeg = [0] * n
        for _, b in edges:
            indeg[b] += 1
        ready = [g for g in range(n) if indeg[g] == 0]
        seen = 0
        while ready:
            g = ready.pop()
            seen += 1
            for a, b in edges:
                if a == g:
                    indeg[b] -= 1
                    if indeg[b] == 0:
                        ready.append(b)
        return seen == n

    def rec(j: int) -> None:
        if len(groups) >= best[0]:
            return
        if j == m:
            if ordered():
                best[0] = len(groups)
            return
        for gi, g in enumerate(groups):
            if fits(g, steps[j]):
                put(g, j)
                where[j] = gi
                rec(j + 1)
                take(g, j)
        if len(groups) + 1 < best[0]:
            w = steps[j][3]
            groups.append({"parts": set(), "bytes": 0, "count": {}, "alone": B is not None and w > B})
            put(groups[-1], j)
            where[j] = len(groups) - 1
            rec(j + 1)
            groups.pop()
        where[j] = -1

    rec(0)
    return best[0]


def test_the_oracle_on_hand_made_cases():
    # a triangle of moves with K = 1: three batches although no broker takes part in more than two steps
    tri = [(0, 0, {1, 2}, 0), (1, 0, {2, 3}, 0), (2, 0, {1, 3}, 0)]
    assert brute_min(tri, 1, None, True) == 3 and brute_min(tri, 2, None, True) == 1
    # bytes: 60 + 50 + 40 + 30 within 100 needs two batches; 120 alone adds one
    sized = [(i, 0, {10 + i}, w) for i, w in enumerate([60, 50, 40, 30, 120])]
    assert brute_min(sized, None, 100, True) == 3
    # a partition's three steps need three batches, other steps fill them
    chain = [(0, k, {k}, 0) for k in range(3)] + [(1, 0, {7}, 0)]
    assert brute_min(chain, 1, None, True) == 3
    assert brute_min([], 1, None, True) == 1 and brute_min([], 1, None, False) == 0


# ---- small random plans -------------------------------------------------------------------------------------


def small_plan(draw_int, draw_sample):
    """A few brokers (two of them new), a few partitions with random planned lists (RF may change)."""
    n = draw_int(3, 5)
    pool = list(range(n + 2))
    nparts = draw_int(2, 6)
    rows, new = [], []
    for p in range(nparts):
        old = draw_sample(list(range(n)), draw_int(1, 3))
        rows.append(("t", p, old))
        kind = draw_int(0, 4)
        if kind == 0:
            new.append(list(old))
        elif kind == 1:
            new.append(draw_sample(old, len(old)))
        else:
            new.append(draw_sample(pool, draw_int(1, 3)))
    sizes = [[0, 10, 30, 45, 60, 100, 200][draw_int(0, 6)] for _ in rows]
    current = build(rows, sizes, brokers=list(range(n)))
    return known_plan((current, with_lists(current, new)))


def against_brute_force(current, final, K, B, one, order="largest"):
    """Split, check, compare with the oracle; returns (first fit's count, the minimum) or None when too big."""
    cur, fin = lists(current), lists(final)
    steps = naive_steps(cur, fin, [int(s) for s in current.size], one)
    if len(steps) > 9:
        return None
    least = brute_min(steps, K, B, cur != fin)
    ff = split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                    order=order, fewest=False)
    res = split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                     order=order)
    check(current, final, res, K, B, one)
    verify_batches(res)
    assert len(res) == least, (len(res), least, len(ff), res.method)
    assert len(res) <= len(ff)
    assert res.bound.batches <= least
    assert res.proven
    assert res.bound_met == (least == res.bound.batches)
    return len(ff), least


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data(), st.sampled_from([1, 2, 3]), st.sampled_from([None, 50, 100, 150]), st.booleans(),
       st.sampled_from(["largest", "smallest", "as-is"]))
def test_small_plans_reach_the_brute_force_minimum(data, K, B, one, order):
    current, final = small_plan(lambda a, b: data.draw(st.integers(a, b)),
                                lambda xs, k: data.draw(st.permutations(xs))[:k])
    got = against_brute_force(current, final, K, B, one, order)
    assume(got is not None)


def test_seeded_plans_reach_the_minimum_where_first_fit_does_not():
    """A fixed set of random plans: the minimum every time, and some of them are ones first fit misses (so the
    comparison can fail)."""
    rng = random.Random(18)
    above = tried = 0
    while tried < 150:
        current, final = small_plan(rng.randint, lambda xs, k: rng.sample(xs, k))
        K = rng.choice([1, 2])
        B = rng.choice([None, None, 100])
        got = against_brute_force(current, final, K, B, rng.random() < 0.5)
        if got is None:
            continue
        tried += 1
        above += got[0] > got[1]
    assert above >= 3


def ring(n: int):
    """n brokers in a ring, each giving a replica to the next (broker 9 stays): current and planned state."""
    current = build([("t", i, [i + 1, 9]) for i in range(n)], [10] * n, brokers=[*range(1, n + 1), 9])
    return current, with_lists(current, [[(i + 1) % n + 1, 9] for i in range(n)])


def test_a_ring_of_five_is_above_the_bound_and_proven():
    # each broker takes part in two moves, K = 1: the bound says 2 (no three moves pairwise share a broker),
    # the least is 3
    current, final = ring(5)
    res = split_plan(current, final, max_moves_per_broker=1)
    assert res.bound.batches == 2 and res.bound.per_broker == 2 and res.bound.clique == 2 and len(res) == 3
    assert not res.bound_met and res.proven


def test_a_ring_of_three_meets_the_clique_bound():
    # three moves that pairwise share a broker: K = 1 needs three batches, and the bound says so
    current, final = ring(3)
    res = split_plan(current, final, max_moves_per_broker=1)
    assert (res.bound.per_broker, res.bound.clique, res.bound.batches, len(res)) == (2, 3, 3, 3) and res.bound_met
    res = split_plan(current, final, max_moves_per_broker=2)
    assert res.bound.clique is None and res.bound.batches == len(res) == 1


# ---- larger plans: the bound met ---------------------------------------------------------------------------


def _added(brokers: int, add: int, seed: int):
    """A balanced cluster with brokers added: moves of one to three replicas onto the new brokers."""
    state = generate_cluster(brokers=brokers, topics=6, partitions=(20, 30), rf=3, sizes=True, seed=seed,
                             layout="balanced")
    p = plan(state, add=list(range(brokers, brokers + add)))
    return p.before, p.after


@pytest.mark.parametrize("K, one", [(2, False), (2, True), (1, True)])
def test_adding_brokers_meets_the_bound_where_first_fit_does_not(K, one):
    current, final = _added(24, 4, seed=0)
    ff = split_plan(current, final, max_moves_per_broker=K, one_replica_per_partition=one, fewest=False)
    res = split_plan(current, final, max_moves_per_broker=K, one_replica_per_partition=one)
    check(current, final, res, K, None, one)
    verify_batches(res)
    assert len(ff) > res.bound.batches  # first fit alone would not do
    assert len(res) == res.bound.batches and res.bound_met and res.proven
    again = split_plan(current, final, max_moves_per_broker=K, one_replica_per_partition=one)
    assert [b.rows.tolist() for b in again] == [b.rows.tolist() for b in res]
    assert all(np.array_equal(a.replicas, b.replicas) for a, b in zip(again, res))


def test_the_tabu_search_alone_meets_the_bound(monkeypatch):
    """With the exact search off, the repair reaches the bound on a plan first fit misses."""
    monkeypatch.setattr(br, "EXACT_CELLS", 0)
    current, final = _added(24, 4, seed=0)
    res = split_plan(current, final, max_moves_per_broker=2)
    check(current, final, res, 2, None)
    assert res.method == "repaired" and res.bound_met


def test_without_search_the_best_first_fit_is_kept(monkeypatch):
    """No exact search and no tabu moves: the best of the first-fit orders, valid, never above first fit."""
    monkeypatch.setattr(br, "EXACT_CELLS", 0)
    rng = np.random.default_rng(5)
    m, n = 60, 8
    offs = np.arange(0, 2 * m + 1, 2, dtype=np.int64)
    parts = np.concatenate([rng.choice(n, 2, replace=False) for _ in range(m)]).astype(np.int64)
    zeros = np.zeros(m, dtype=np.int64)
    sched = br.fewest_rounds(parts, offs, zeros, np.arange(m), zeros, np.arange(m), n, 1, None, lower=1, budget=0)
    ff, _ = br.first_fit(list(range(m)), [False] * m, parts.tolist(), offs.tolist(), [0] * m, m, n, 1, None)
    assert sched.count <= max(ff) + 1 and sched.method.startswith("first fit")
    assert sched.count >= np.bincount(parts, minlength=n).max()
    for b in range(sched.count):  # a valid split: K = 1
        on = parts.reshape(m, 2)[sched.batch == b].ravel()
        assert len(on) == len(set(on.tolist()))


# ---- the command line ---------------------------------------------------------------------------------------


def _files(tmp_path, current, final):
    from flowbalance.formats.writers import reassignment_json

    (tmp_path / "a.json").write_text(reassignment_json(current))
    (tmp_path / "plan.json").write_text(reassignment_json(final))
    return tmp_path / "plan.json", tmp_path / "a.json"


def _busiest(out, current_file, names) -> int:
    """The most steps one broker takes part in, counted from the batch files (each list against the last)."""
    import json

    state = {(p["topic"], p["partition"]): p["replicas"] for p in json.loads(current_file.read_text())["partitions"]}
    count: dict[int, int] = {}
    for name in names:
        for p in json.loads((out / name).read_text())["partitions"]:
            key = (p["topic"], p["partition"])
            for b in set(p["replicas"]) ^ set(state[key]):
                count[b] = count.get(b, 0) + 1
            state[key] = p["replicas"]
    return max(count.values())


def test_cli_prints_the_bound_beside_the_count_and_in_steps(tmp_path, run_cli):
    import json

    plan_file, cur = _files(tmp_path, *_added(24, 4, seed=0))
    out = tmp_path / "b"
    code, stdout, err = run_cli("batches", plan_file, "--current", cur, "--max-moves-per-broker", "2", "-o", out, "--json")
    assert code == 0, err
    data = json.loads(stdout)
    lb = data["lower_bound"]
    names = [f"batch-{i:03d}.json" for i in range(1, data["batches"] + 1)]
    busiest = _busiest(out, cur, names)
    assert lb["busiest_broker_steps"] == busiest and lb["per_broker"] == -(-busiest // 2)
    assert lb["batches"] == data["batches"] == lb["per_broker"] and lb["met"] and lb["proven_fewest"]
    assert lb["method"] not in ("first fit", "no limits")  # first fit gives more (test above)
    head = (out / "steps.txt").read_text().splitlines()[:2]
    assert head[0].endswith(f"; lower bound {lb['batches']}: met")
    assert head[1] == f"# Lower bound {lb['batches']} = max(per broker ⌈{busiest} steps / 2⌉ = {lb['per_broker']} " \
                      f"(broker {lb['busiest_broker']}), most steps of one partition 1)"
    code, stdout, err = run_cli("batches", plan_file, "--current", cur, "--max-moves-per-broker", "2", "-o", out)
    assert code == 0, err
    assert f"Batches: {lb['batches']} (lower bound {lb['batches']}: met) for " in stdout
    assert head[1][2:] in stdout


def test_cli_says_when_the_bound_is_not_met(tmp_path, run_cli):
    plan_file, cur = _files(tmp_path, *ring(5))
    code, stdout, err = run_cli("batches", plan_file, "--current", cur, "--max-moves-per-broker", "1",
                                "-o", tmp_path / "b")
    assert code == 0, err
    assert "Batches: 3 (lower bound 2: not met, 1 above it, proven the fewest) for 5 changed" in stdout
    assert "Lower bound 2 = max(per broker ⌈2 steps / 1⌉ = 2 (broker 1), most steps of one partition 1)" in stdout
    steps = (tmp_path / "b" / "steps.txt").read_text()
    assert "lower bound 2: not met, 1 above it, proven the fewest" in steps.splitlines()[0]
    plan_file, cur = _files(tmp_path, *ring(3))
    code, stdout, err = run_cli("batches", plan_file, "--current", cur, "--max-moves-per-broker", "1",
                                "-o", tmp_path / "c")
    assert code == 0, err
    assert "Batches: 3 (lower bound 3: met) for 3 changed" in stdout
    assert "Lower bound 3 = max(per broker ⌈2 steps / 1⌉ = 2 (broker 1), 3 steps no two of which can share a " \
           "batch, most steps of one partition 1)" in stdout


def test_cli_bytes_bound_with_sizes(tmp_path, run_cli, kafka_plan):
    import json

    from .test_batches import KAFKA

    B = 1_000_000_000
    code, stdout, err = run_cli("batches", kafka_plan, "--current", KAFKA / "assignment.json", "--sizes",
                                KAFKA / "logdirs.txt", "--max-moves-per-broker", "1", "--max-bytes-per-batch", str(B),
                                "-o", tmp_path / "b", "--json")
    assert code == 0, err
    data = json.loads(stdout)
    lb = data["lower_bound"]
    alone = [b for b in data["per_batch"] if b["oversized"]]
    assert lb["alone"] == len(alone) >= 1
    assert lb["bytes"] == data["totals"]["bytes"] - sum(b["bytes"] for b in alone)
    assert lb["per_bytes"] == max(-(-lb["bytes"] // B), lb["steps_above_half"])
    assert lb["batches"] == lb["alone"] + max(lb["per_broker"], lb["per_bytes"], lb["longest_partition"])
    assert lb["formula"].startswith(f"Lower bound {lb['batches']} = {lb['alone']} step")
    assert "(above --max-bytes-per-batch) + max(per broker ⌈" in lb["formula"]
    assert data["batches"] >= lb["batches"] and lb["met"] == (data["batches"] == lb["batches"])


def test_bound_terms_alone_halves_and_bytes():
    rows = [("t", i, [1, 2]) for i in range(5)]
    current = build(rows, [60, 50, 40, 30, 120], brokers=[1, 2, 3, 4, 5, 6, 7])
    final = with_lists(current, [[1, 3], [1, 4], [1, 5], [1, 6], [1, 7]])
    res = split_plan(current, final, max_bytes_per_batch=100)
    b = res.bound
    # 120 alone; 60 + 50 + 40 + 30 = 180 in batches of 100: two; only 60 is above half of 100
    assert (b.alone, b.bytes, b.halves, b.per_bytes, b.per_broker, b.longest) == (1, 180, 1, 2, None, 1)
    assert b.batches == 3 == len(res) and res.bound_met
    # broker 2 gives up a replica in all five moves; the one alone does not count: ⌈4 / 2⌉ = 2
    res = split_plan(current, final, max_bytes_per_batch=100, max_moves_per_broker=2)
    assert (res.bound.busiest, res.bound.busiest_broker, res.bound.per_broker) == (4, 2, 2)
    assert res.bound.batches == 3 == len(res)
    res = split_plan(current, final, max_bytes_per_batch=100, max_moves_per_broker=1)
    assert res.bound.per_broker == 4 and res.bound.batches == 5 == len(res)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from([1, 2]), st.sampled_from([None, 60, 100]), st.booleans())
def test_the_repair_alone_gives_valid_splits(data, K, B, one):
    """The tabu search without the exact search (its bookkeeping of counts, bytes and chains, checked by
    ``check``): valid splits, never more batches than first fit."""
    current, final = small_plan(lambda a, b: data.draw(st.integers(a, b)),
                                lambda xs, k: data.draw(st.permutations(xs))[:k])
    saved = br.EXACT_CELLS, br.BASE_MOVES
    br.EXACT_CELLS, br.BASE_MOVES = 0, 2000
    try:
        res = split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one)
    finally:
        br.EXACT_CELLS, br.BASE_MOVES = saved
    ff = split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                    fewest=False)
    check(current, final, res, K, B, one)
    assert res.bound.batches <= len(res) <= len(ff)
