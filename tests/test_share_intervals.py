"""``targets.share_intervals``: per (group, live broker) the floor and ceiling of the group's total times the
broker's weight share, with or without the equal-weights shortcut (each group computed once and repeated)."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance.targets import share_intervals


def _cell_by_cell(totals, weights):
    """The definition, one cell at a time in plain Python floats."""
    wsum = float(np.sum(np.asarray(weights, dtype=np.float64)))  # numpy's summation order, as the function's
    lo, hi = [], []
    for t in totals:
        for w in weights:
            q = float(t) * (float(w) / wsum)
            lo.append(math.floor(q + 1e-9))
            hi.append(math.ceil(q - 1e-9))
    return np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(totals=st.lists(st.integers(0, 5_000), min_size=1, max_size=12),
       weight=st.sampled_from([1.0, 0.7, 3.0, 1e-3]), n=st.integers(1, 9),
       other=st.one_of(st.none(), st.sampled_from([0.5, 2.0, 1.3])))
def test_share_intervals_match_the_definition(totals, weight, n, other):
    weights = np.full(n, weight)
    if other is not None:  # one broker weighs differently: the general path
        weights[-1] = other
    lo, hi = share_intervals(np.array(totals), weights)
    want_lo, want_hi = _cell_by_cell(totals, weights)
    assert lo.dtype == np.int64 and hi.dtype == np.int64
    assert np.array_equal(lo, want_lo) and np.array_equal(hi, want_hi)
    assert (lo <= hi).all()


def test_equal_weights_split_a_total_evenly():
    lo, hi = share_intervals(np.array([10, 9, 0]), np.ones(3))
    assert lo.reshape(3, 3).tolist() == [[3, 3, 3], [3, 3, 3], [0, 0, 0]]
    assert hi.reshape(3, 3).tolist() == [[4, 4, 4], [3, 3, 3], [0, 0, 0]]
