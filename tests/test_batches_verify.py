"""``batches`` checks every batch file and the rollback before writing (flowbalance.batches.verify_batches).

The check is independent of the scheduler: it must pass every split the scheduler makes of random plans, and
catch batches that break a rule (RF below min(current, plan) or above max, a broker unknown, not current nor
planned, removed, or twice, a partition twice in a batch, a last state that is not the plan, a rollback that
does not restore the current lists), including the old ``[-1, 4, 5]`` reading that wrote ``[4, 5]``. In the
CLI a failure is one line and writes nothing.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbalance.batches as fb
from flowbalance.batches import BatchCheckError, split_plan, verify_batches
from flowbalance.model import PAD, Brokers

from .conftest import TESTDATA
from .test_bad_input import assert_one_line
from .test_batches import LIMITS, build, cluster_and_plan, with_lists

KAFKA = TESTDATA / "kafka"
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def known_plan(cp):
    """The test_batches strategy's plan, with its new brokers known (as the plan reader adds them)."""
    current, final = cp
    used = np.unique(final.replicas[final.replicas != PAD])
    return current, final.with_brokers(current.brokers.with_added(used[~np.isin(used, current.brokers.ids)].tolist()))


def split(current, final, limits):
    K, B, one, order = limits
    return split_plan(current, final, max_moves_per_broker=K, max_bytes_per_batch=B, one_replica_per_partition=one,
                      order=order)


def raises(res, *needles) -> str:
    with pytest.raises(BatchCheckError) as err:
        verify_batches(res)
    text = str(err.value)
    assert "self-check failed, nothing written" in text
    for n in needles:
        assert n in text, (n, text)
    return text


def set_row(res, batch: int, j: int, new: list[int]) -> None:
    """Replace the list of the j-th partition of a batch (the matrix widened when needed)."""
    b = res.batches[batch]
    width = max(b.replicas.shape[1], len(new))
    mat = np.full((len(b.rows), width), PAD, dtype=np.int32)
    mat[:, : b.replicas.shape[1]] = b.replicas
    mat[j] = PAD
    mat[j, : len(new)] = new
    res.batches[batch] = replace(b, replicas=mat)


# ---- no false alarm --------------------------------------------------------------------------------------


@SETTINGS
@given(cluster_and_plan(), LIMITS)
def test_every_split_of_a_random_plan_passes(cp, limits):
    current, final = known_plan(cp)
    verify_batches(split(current, final, limits))


# ---- each rule catches a broken batch ------------------------------------------------------------------------


CORRUPTIONS = ("below", "unknown", "twice", "stranger", "no_last_batch", "row_twice")


@SETTINGS
@given(cluster_and_plan(), LIMITS, st.sampled_from(CORRUPTIONS), st.data())
def test_broken_batches_are_caught(cp, limits, kind, data):
    current, final = known_plan(cp)
    res = split(current, final, limits)
    if not len(res):
        return
    i = data.draw(st.integers(0, len(res) - 1))
    b = res.batches[i]
    j = data.draw(st.integers(0, len(b.rows) - 1))
    row = int(b.rows[j])
    lst = [int(x) for x in b.replicas[j] if x != PAD]
    cur = [int(x) for x in current.replicas[row] if x != PAD]
    fin = [int(x) for x in final.replicas[row] if x != PAD]
    if kind == "below":
        low = min(len(cur), len(fin))
        set_row(res, i, j, lst[: low - 1])
        raises(res, f"batch {i + 1}", "replica")
    elif kind == "unknown":
        set_row(res, i, j, lst[:-1] + [999])
        raises(res, f"batch {i + 1}")
    elif kind == "twice":
        if len(lst) < 2:
            return
        set_row(res, i, j, lst[:-1] + [lst[0]])
        raises(res, f"batch {i + 1}")
    elif kind == "stranger":
        others = [int(x) for x in final.brokers.ids if x not in cur and x not in fin]
        if not others:
            return
        set_row(res, i, j, lst[:-1] + [others[0]])
        raises(res, f"batch {i + 1}", "neither a current nor a planned")
    elif kind == "no_last_batch":
        res.batches.pop()
        raises(res)
    else:
        b = res.batches[i]
        res.batches[i] = replace(b, rows=np.concatenate([b.rows, b.rows[:1]]),
                                 replicas=np.concatenate([b.replicas, b.replicas[:1]]))
        raises(res, "listed twice")


def test_the_old_minus_one_reading_is_refused():
    """A plan read as [-1, 4, 5] for current [3, 4, 5] (a hole, not an RF of 2) used to give a batch with [4, 5]."""
    current = build([("t", 0, [3, 4, 5]), ("t", 1, [3, 4, 5])], brokers=[3, 4, 5, 6])
    final = current.with_replicas(np.array([[-1, 4, 5], [6, 4, 5]], dtype=np.int32))
    res = split_plan(current, final)
    assert [int(x) for x in res.batch_state(0).replicas[0] if x != PAD] == [4, 5]  # what would have been written
    raises(res, "batch 1", "t-0", "2 replicas, fewer than", "(3)", "plan (3)")


def test_plans_that_lower_or_raise_rf_pass_and_steps_stay_between():
    current = build([("t", 0, [1, 2, 3]), ("t", 1, [1, 2])], [10, 10], brokers=[1, 2, 3, 4, 5, 6])
    final = with_lists(current, [[4, 5], [3, 4, 5]])
    for one in (False, True):
        verify_batches(split_plan(current, final, one_replica_per_partition=one))
    res = split_plan(current, final, one_replica_per_partition=True)
    set_row(res, 0, 0, [4])  # t-0 at RF 1: below the plan's 2
    raises(res, "t-0", "1 replicas, fewer than")
    res = split_plan(current, final, one_replica_per_partition=True)
    set_row(res, 0, 1, [3, 2, 4, 5])  # t-1 at RF 4: above both
    raises(res, "t-1", "more than both")


def test_new_replica_on_a_removed_broker_is_refused_but_a_kept_one_is_not():
    brokers = Brokers.build([1, 2, 3, 4], removed=[False, False, False, True])
    current = replace(build([("t", 0, [1, 4]), ("t", 1, [1, 2])]), brokers=brokers)
    keeps = with_lists(current, [[4, 1], [2, 3]])  # 4 stays on t-0 (reorder), t-1 moves to 3
    verify_batches(split_plan(current, keeps))
    onto = with_lists(current, [[1, 4], [4, 2]])
    raises(split_plan(current, onto), "t-1", "marked removed")


def test_a_rollback_that_does_not_restore_is_refused(monkeypatch):
    current = build([("t", 0, [1, 2]), ("t", 1, [2, 3])], brokers=[1, 2, 3, 4])
    res = split_plan(current, with_lists(current, [[1, 4], [2, 3]]))
    verify_batches(res)
    monkeypatch.setattr(fb.Batches, "rollback_state", lambda self: fb._rows_state(self.final, self.changed_rows,
                                                                                  self.final.replicas[self.changed_rows]))
    raises(res, "rollback", "t-0")


# ---- the CLI: a broken scheduler writes nothing ------------------------------------------------------------


def test_cli_with_a_broken_scheduler_writes_nothing(tmp_path, run_cli, monkeypatch):
    plan_file = tmp_path / "plan.json"
    code, _, err = run_cli("plan", KAFKA / "assignment.json", "--brokers", KAFKA / "brokers.json", "--remove", "2",
                           "-o", plan_file, "-q")
    assert code == 0, err
    real = fb._make_steps

    def broken(old, new, dense, one):
        """The scheduler with the old bug: the last replica of every step's list is lost."""
        steps, reorder = real(old, new, dense, one)
        lists = steps.lists.copy()
        last = (lists != PAD).sum(axis=1) - 1
        ok = last >= 1
        lists[np.flatnonzero(ok), last[ok]] = PAD
        return replace(steps, lists=lists), reorder

    monkeypatch.setattr(fb, "_make_steps", broken)
    out = tmp_path / "batches"
    code, stdout, err = run_cli("batches", plan_file, "--current", KAFKA / "assignment.json", "--brokers",
                                KAFKA / "brokers.json", "-o", out)
    assert_one_line(code, stdout, err, "self-check failed, nothing written", "batch 1", "fewer than")
    assert not out.exists()
    monkeypatch.setattr(fb, "_make_steps", real)
    code, _, err = run_cli("batches", plan_file, "--current", KAFKA / "assignment.json", "--brokers",
                           KAFKA / "brokers.json", "-o", out, "-q")
    assert code == 0, err
    assert any(out.glob("batch-*.json"))
