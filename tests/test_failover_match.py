"""``failover_problem.match`` (which row takes which slot in ``fewest_changes`` and ``choice_from_terms``), made
faster, must pair the very positions it paired, in the same order: the rows' new orders, and so every plan, come
from these pairs. The reference is ``match`` as it was before (issue 17), kept verbatim."""
from __future__ import annotations

import numpy as np
import pytest

from flowbalance.stages.failover_problem import match, rank


def _ref_match(a, b):
    dense = np.unique(np.concatenate([a, b]), return_inverse=True)[1].ravel()
    a, b = dense[:len(a)], dense[len(a):]
    oa, ob = np.argsort(a, kind="stable"), np.argsort(b, kind="stable")
    sa, sb = a[oa], b[ob]
    width = len(a) + len(b) + 1
    ka = sa * width + rank(sa)
    kb = sb * width + rank(sb)
    _, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    return oa[ia], ob[ib]


@pytest.mark.parametrize("seed", range(20))
def test_pairs_are_the_old_ones(seed):
    """Random keys with many repeats, negative keys (``fewest_changes``' rows that match nothing), empty sides."""
    rng = np.random.default_rng(seed)
    for _ in range(100):
        na, nb = (int(x) for x in rng.integers(0, 50, 2))
        hi = int(rng.integers(1, 25))
        a = rng.integers(-hi, hi, na).astype(np.int64)
        b = rng.integers(-hi, hi, nb).astype(np.int64)
        got, want = match(a, b), _ref_match(a, b)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_pairs_kth_with_kth():
    """The k-th of a key in ``a`` with the k-th in ``b``, as many as the smaller side has."""
    ia, ib = match(np.array([5, 3, 5, 5, 7]), np.array([5, 9, 5, 3, 3]))
    assert list(zip(ia.tolist(), ib.tolist())) == [(1, 3), (0, 0), (2, 2)]
