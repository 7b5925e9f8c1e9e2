"""fleet.json entries become a PlanRequest directly; their errors name fleet.json fields, never CLI flags, and a
fleet plan carries the same certificate as the library's plan of the same cluster."""
from __future__ import annotations

import pytest

import flowbalance as fb

from .test_status import _fleet_round_trip

DESCRIBE = "".join(
    f"Topic: t{t}\tPartition: {p}\tLeader: {a}\tReplicas: {a},{b}\tIsr: {a},{b}\n"
    for t in range(3) for p, (a, b) in enumerate([(1, 2), (1, 3), (1, 2), (2, 3), (1, 4), (1, 2)]))
FILES = {"describe.txt": DESCRIBE, "brokers.csv": "id\n1\n2\n3\n4\n5\n"}


@pytest.mark.parametrize("entry, field, words", [
    ({"remove": [9]}, "remove", "unknown broker"),
    ({"topic_rf": {"nope": 2}}, "topic_rf", "unknown topic"),
    ({"replication_factor": 0}, "replication_factor", "at least 1"),
    ({"strategy": "greedy"}, "strategy", "unknown strategy"),
    ({"add": [1]}, "add", "already exists"),
    ({"replace": {"1": 2}}, "replace", "already holds replicas"),
    ({"topics": "("}, "topics", "invalid regular expression"),
])
def test_fleet_request_errors_name_the_field(entry, field, words):
    reason, row = _fleet_round_trip(FILES, entry)
    reason = reason if reason is not None else row["reason"]
    assert reason is not None and reason.startswith(f"fleet.json: clusters.c1.{field}: "), reason
    assert words in reason and "--" not in reason, reason


def test_fleet_json_values_build_the_request_directly():
    req = fb.PlanRequest.from_json({"remove": "3,4", "replace": {"7": 31}, "topic_rf": {"a": 2}, "per_topic": False},
                                   "fleet.json: clusters.x")
    assert (req.remove, req.replacements, req.topic_rfs, req.per_topic) == ((3, 4), {7: 31}, {"a": 2}, False)
    assert req == fb.PlanRequest(remove=(3, 4), replace={7: 31}, topic_rf={"a": 2}, per_topic=False)
    with pytest.raises(fb.InputError, match=r"^fleet.json: clusters.x.bogus: unknown key"):
        fb.PlanRequest.from_json({"bogus": 1}, "fleet.json: clusters.x")


def test_fleet_plan_has_the_library_certificate():
    reason, row = _fleet_round_trip(FILES, {"remove": [1]})
    assert reason is None and row["ok"], row["reason"]
    state = fb.load_texts(("describe.txt", DESCRIBE), brokers=("brokers.csv", FILES["brokers.csv"])).state
    cert = fb.certificate_fields(fb.plan(state, fb.PlanRequest(remove=(1,))).certificate)
    assert (row["moves"], row["lower_bound"], row["bound_for"], bool(row["proven_optimal"]), row["min_moves"]) == \
        (cert["moves"], cert["lower_bound"], cert["bound_for"], cert["proven_optimal"], cert["min_moves"])
