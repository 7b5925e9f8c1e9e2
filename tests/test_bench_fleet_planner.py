"""``benchmarks/fleet_planner.py`` reads the failover stage's method from the certificate's notes: the wording it
parses must stay the stage's, or every cluster would count under "no stage 4"."""
from pathlib import Path

from benchmarks.fleet_planner import _METHOD, totals
from flowbalance.load import load_cluster
from flowbalance.planner import plan

SEED = Path(__file__).resolve().parent.parent / "testdata" / "seed"


def test_method_is_read_from_the_stage_note():
    st = load_cluster(SEED / "assignment.json", brokers=SEED / "brokers.csv").state
    notes = [n for n in plan(st, remove=[19]).certificate.notes if n.startswith("failover (stage 4)")]
    assert len(notes) == 1
    method = _METHOD.search(notes[0]).group(1)
    assert method and ";" not in method and f", by {method}" in notes[0]


def test_totals_sum_the_records_and_group_by_method():
    recs = {"a": dict(cpu=1.0, spread=2, at_worst=3, bound=1, bound_met=False, leader_changes=4, moves=5, method="x"),
            "b": dict(cpu=0.5, spread=1, at_worst=7, bound=1, bound_met=True, leader_changes=0, moves=1, method="y"),
            "c": dict(cpu=2.0, spread=None, at_worst=None, bound=None, bound_met=None, leader_changes=1, moves=0,
                      method="x")}
    s = totals(recs)
    assert (s["clusters"], s["cpu"], s["spread"], s["at_worst"], s["bound"], s["bound_met"]) == (3, 3.5, 3, 10, 2, 1)
    assert (s["leader_changes"], s["moves"]) == (5, 6)
    assert s["methods"] == {"x": {"clusters": 2, "cpu": 3.0}, "y": {"clusters": 1, "cpu": 0.5}}
    assert list(s["methods"]) == ["x", "y"]  # the costliest method first
