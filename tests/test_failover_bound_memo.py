"""``failover_bound.bounds`` keeps its last answer under a digest of its inputs: the certificate bounds the plan's
problem again. A problem with its replicas in another order is the same problem; any other change to what the
bounds read is a new one, answered afresh (each field changed in turn, against the computation without the
memo)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from flowbalance.stages import failover_bound as fb
from flowbalance.stages.failover_problem import build_problem

from .test_failover_stage import random_state, stages_2_3


def _problem(seed: int):
    rng = np.random.default_rng(seed)
    state, movable = random_state(rng, int(rng.integers(5, 12)), int(rng.integers(10, 120)), ((3,), (2, 3))[seed % 2],
                                  weights=seed % 3 == 1, removed=seed % 4 == 1)
    start = state.with_replicas(stages_2_3(state, movable, False))
    return build_problem(start, start, movable, False)


def _fresh(prob, choice):
    return fb._bounds(prob, fb._row_average(prob, choice), True)


def _changed(prob, rows):
    """The problem with one field changed, for every field the bounds read, each change aimed at the row of the
    largest bound (so that the answer changes, and a digest without that field would answer wrongly)."""
    N, D = prob.N, prob.D
    f = int(np.argmax(rows))
    b = int(np.flatnonzero(prob.valid[f])[0])
    cell = np.zeros((N, N), dtype=np.int64)
    cell[f, b] = 1
    members = prob.members.copy()
    members[0, 0] = (members[0, 0] + 1) % N
    valid = prob.valid.copy()
    valid[f] = False
    yield "lo", replace(prob, lo=np.maximum(prob.lo - 1, 0))
    yield "hi", replace(prob, hi=prob.hi + 1)
    yield "fixed_L", replace(prob, fixed_L=prob.fixed_L + 5 * (np.arange(N) == b))
    yield "fixed_M", replace(prob, fixed_M=prob.fixed_M + 5 * cell)
    yield "R", replace(prob, R=prob.R - 5 * D * cell)
    yield "valid", replace(prob, valid=valid)
    yield "members", replace(prob, members=members)
    yield "D", replace(prob, D=D + 1)


@pytest.mark.parametrize("seed", range(12))
def test_the_memo_answers_only_the_same_problem(seed):
    built = _problem(seed)
    if built is None:
        pytest.skip("nothing to reorder")
    prob, choice = built
    first = fb.bounds(prob, choice, blocks=True)
    want = _fresh(prob, choice)
    assert np.array_equal(first[0], want[0]) and first[1] == want[1]
    # the same sets, each row's replicas in another order: the memo's answer, which is the fresh one
    shuffled = replace(prob, members=prob.members[:, ::-1].copy())
    again = fb.bounds(shuffled, choice, blocks=True)
    assert np.array_equal(again[0], want[0]) and again[1] == want[1]
    if not want[0].any():
        pytest.skip("every row's bound is 0")
    for name, other in _changed(prob, want[0]):
        fb.bounds(prob, choice, blocks=True)  # the memo holds the original
        got, fresh = fb.bounds(other, choice, blocks=True), _fresh(other, choice)
        assert np.array_equal(got[0], fresh[0]) and got[1] == fresh[1], name
