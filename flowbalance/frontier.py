"""The frontier: one request planned at several move budgets and in strict per-topic mode, side by side.

``frontier(state, request, budgets=("0", "1%", "2%", "5%", "10%"))`` plans ``request`` once per budget
(``per_topic_mode="spread"``, ``extra_moves=budget``) and once with ``per_topic_mode="strict"``: the fewest moves
for count balance, what each budget buys in per-topic balance and failover, and what strict per-topic balance
costs. Every point is a whole ``plan()`` (verified and certified), so each point's numbers are the ones
``flowbalance plan`` prints for that request. A point the request cannot use (a budget with the template strategy,
objective bytes, disk balance, or without the replicas stage; strict with per-topic balance off or the template
strategy) is kept, marked unusable, with the reason, and planned not at all: the operator sees that the choice does
not exist rather than a copy of another point.

``frontier_summary(f)`` is the plain dict ``flowbalance frontier --json`` prints (keys in docs/commands.md). It
carries ``kind`` and the fingerprint of the cluster it was planned for (``cluster_fingerprint``), so that a saved
frontier is drawn only beside the cluster it belongs to (``flowbalance report --frontier``).
"""
from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .certificate import certificate_fields
from .chain.base import Progress
from .chain.steps import flow_chain, template_chain
from .errors import PlanningError, RequestError
from .model import ClusterState
from .planner import Plan, plan
from .request import PlanRequest, parse_extra_moves
from .summary import spreads_of

DEFAULT_BUDGETS = ("0", "1%", "2%", "5%", "10%")
STRICT = "strict"
KIND = "flowbalance frontier"  # the ``kind`` of the --json output: what ``report --frontier`` accepts
VERSION = 1


@dataclass(frozen=True)
class FrontierPoint:
    """One point: a budget (``"0"``, ``"500"``, ``"2%"``) or ``"strict"``, its request, and its plan (None when the
    request cannot use this point: ``reason`` says why)."""

    label: str
    request: PlanRequest
    plan: Plan | None
    reason: str | None = None

    @property
    def usable(self) -> bool:
        return self.plan is not None

    @property
    def strict(self) -> bool:
        return self.label == STRICT

    def budget_moves(self, scope: int) -> int | None:
        """The budget in moves for a scope of ``scope`` replicas (None for strict: it has no budget)."""
        return None if self.strict else self.request.extra_moves_for(scope)


@dataclass(frozen=True)
class Frontier:
    """The points in budget order (budgets by their size in moves, strict last), and the scope they share."""

    request: PlanRequest
    points: tuple[FrontierPoint, ...]
    scope_replicas: int  # replicas of the partitions that may move: what a percentage budget is a percentage of
    seconds: float
    cluster: dict[str, Any]  # cluster_fingerprint of the state as read

    def point(self, label: str) -> FrontierPoint:
        return next(p for p in self.points if p.label == label)


def parse_budgets(budgets: str | Sequence[int | str]) -> tuple[str, ...]:
    """Budgets as labels, "0" first: "0,1%,2%" or a sequence of moves (int or text) and "P%". The budget 0 (the
    fewest moves: what every other point is measured against) and "strict" are always planned, and may be listed.
    Raises ``RequestError`` on the field ``budgets`` for a bad or repeated budget, or an empty list."""
    items = budgets.split(",") if isinstance(budgets, str) else list(budgets)
    if not items or items == [""]:
        raise RequestError("budgets", "no move budget given (for example 0,1%,2%)", budgets)
    labels: list[str] = ["0"]
    zero_listed = False
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        if text == STRICT:
            continue
        try:
            count, percent = parse_extra_moves(text)
        except RequestError as err:
            raise RequestError("budgets", err.message, item) from None
        label = str(count) if percent is None else f"{percent:g}%"
        if count == 0 and not percent:
            if zero_listed:
                raise RequestError("budgets", "a budget is listed twice", item)
            zero_listed = True
        elif label in labels:
            raise RequestError("budgets", "a budget is listed twice", item)
        else:
            labels.append(label)
    return tuple(labels)


def cluster_fingerprint(state: ClusterState) -> dict[str, Any]:
    """What identifies a cluster's assignment, independent of the file format it was read from and of any request:
    partitions, replicas and topics counted, the ids of the brokers that hold a replica, and a SHA-256 of the
    topic names and of every partition's replica list in order (the state is in canonical (topic, partition)
    order, so the same assignment always hashes the same). Brokers without replicas (new brokers, weights, racks)
    are left out: they belong to the request and the broker file, not to the assignment."""
    reps = np.asarray(state.replicas, dtype="<i8")
    digest = hashlib.sha256()
    digest.update("\n".join(state.topics).encode("utf-8") + b"\0")
    digest.update(np.array(reps.shape, dtype="<i8").tobytes())
    for column in (state.topic, state.partition):
        digest.update(np.asarray(column, dtype="<i8").tobytes())
    digest.update(reps.tobytes())
    held = np.unique(reps[reps >= 0])
    return {"partitions": int(state.num_partitions), "replicas": int((reps >= 0).sum()), "topics": len(state.topics),
            "brokers": [int(b) for b in held], "assignment_sha256": digest.hexdigest()}


def request_fields(req: PlanRequest) -> dict[str, Any]:
    """The request's fields that differ from the defaults, as plain JSON (the budget and per-topic mode left out:
    every point sets its own), so that a saved frontier says what it was planned for."""
    plain = PlanRequest()
    out: dict[str, Any] = {}
    for name in req.__dataclass_fields__:
        value = getattr(req, name)
        if name in ("extra_moves", "per_topic_mode") or value == getattr(plain, name):
            continue
        out[name] = [list(v) if isinstance(v, tuple) else v for v in value] if isinstance(value, tuple) else value
    return out


def frontier(state: ClusterState, request: PlanRequest | None = None,
             budgets: str | Sequence[int | str] = DEFAULT_BUDGETS, *, pinned: np.ndarray | None = None,
             notes: Sequence[str] = (), progress: Progress | None = None,
             read_as: ClusterState | None = None) -> Frontier:
    """Plan ``request`` at every budget and in strict per-topic mode (see the module docstring).

    ``request`` must leave ``extra_moves`` at 0 and ``per_topic_mode`` at "spread": the frontier sets both.
    ``pinned``, ``notes``: as for ``plan``. ``progress(step, of, name)`` counts the steps of every plan.
    ``read_as``: the state as read from the operator's file when ``state`` was derived from it (partitions in
    flight planned from their target): the fingerprint is taken of it, as ``report`` reads that file."""
    request = (request or PlanRequest()).validate()
    if parse_extra_moves(request.extra_moves) != (0, None) or request.per_topic_mode != "spread":
        raise RequestError(("extra_moves", "per_topic_mode"), "the frontier plans every budget and strict itself: "
                           "leave extra_moves 0 and per_topic_mode spread",
                           f"{request.extra_moves}, {request.per_topic_mode}")
    labels = parse_budgets(budgets)
    wanted = [(label, request.with_changes(extra_moves=label)) for label in labels]
    wanted.append((STRICT, request.with_changes(per_topic_mode="strict")))
    say = progress or (lambda step, of, name: None)
    per = len(flow_chain() if request.strategy == "flow" else template_chain()) + 2
    t0 = time.perf_counter()
    points, memo = [], {}  # the budget points share stage 1 and the budget's slack solves (keyed by request)
    for i, (label, req) in enumerate(wanted):
        relay = (lambda step, of, name, i=i, label=label: say(i * per + step, len(wanted) * per, f"{label}: {name}"))
        points.append(_point(state, label, req, pinned, notes, relay, memo))
    scope = _scope(points)
    order = sorted(range(len(points)), key=lambda i: (points[i].strict, points[i].budget_moves(scope) or 0, i))
    return Frontier(request, tuple(points[i] for i in order), scope, time.perf_counter() - t0,
                    cluster_fingerprint(read_as if read_as is not None else state))


def _point(state: ClusterState, label: str, req: PlanRequest, pinned: np.ndarray | None, notes: Sequence[str],
           progress: Progress, memo: dict) -> FrontierPoint:
    """Plan one point. A budget or strict that this cluster cannot meet (``PlanningError``) is an unusable point
    with that reason; the plain request (budget 0) raises it, as ``plan`` would."""
    reason = unusable(req, label)
    if reason is not None:
        return FrontierPoint(label, req, None, reason)
    try:
        return FrontierPoint(label, req, plan(state, req, pinned=pinned, notes=notes, progress=progress, memo=memo))
    except PlanningError as err:
        if label != STRICT and not spends(req):
            raise
        return FrontierPoint(label, req, None, str(err))


def unusable(req: PlanRequest, label: str) -> str | None:
    """Why ``req`` (one point of the frontier) cannot be planned as that point, or None when it can."""
    if label == STRICT:
        if not req.per_topic:
            return "per-topic balance is off (per_topic False): strict per-topic balance does not apply"
        if req.strategy != "flow":
            return f"the {req.strategy} strategy does not take per_topic_mode: strict would be the budget 0 plan"
        if "replicas" not in req.stages:
            return "strict per-topic balance is placed by the replicas stage, which does not run (stages)"
        return None
    if not spends(req):
        return None
    if "replicas" not in req.stages:
        return "a move budget is spent by the replicas stage, which does not run (stages)"
    try:
        req.validate()
    except RequestError as err:
        return err.message
    return None


def spends(req: PlanRequest) -> bool:
    """Whether ``req`` has a move budget above 0 (in moves, or a percentage above 0)."""
    count, percent = parse_extra_moves(req.extra_moves)
    return count > 0 or bool(percent)


def _scope(points: Sequence[FrontierPoint]) -> int:
    """Replicas in scope (what ``extra_moves_for`` takes), from any planned point: every point resolves the same
    scope and target RF."""
    for pt in points:
        if pt.plan is not None:
            return int(np.asarray(pt.plan.target_rf)[pt.plan.movable].sum())
    return 0  # pragma: no cover - the budget 0 point, or the first budget, is always planned


_CERT_KEYS = ("moves", "lower_bound", "bound_for", "bound_by_flow", "closed_form_bound", "min_moves",
              "topic_min_moves", "targets_met", "missed_targets", "proven_optimal", "optimality", "verdict",
              "per_topic", "failover")  # every key of certificate_fields: a point not planned has them all
_SPREAD_KEYS = ("replica_spread", "topic_spread", "leader_spread", "failover_worst_spread",
                "rack_failover_worst_spread", "rack_violations")
_PLAN_KEYS = ("extra_moves_spent", "budget_note", "bytes_to_move", "changed_partitions", "leader_changes", "empty",
              "seconds")


def point_fields(pt: FrontierPoint, scope: int, fewest: int | None) -> dict[str, Any]:
    """One point as plain data: its budget, the certificate's fields (as ``plan --json``), bytes, spreads, time.
    An unusable point has the same keys, with None for every number and the reason."""
    p = pt.plan
    head = {"label": pt.label, "per_topic_mode": pt.request.per_topic_mode, "extra_moves": str(pt.request.extra_moves),
            "budget_moves": pt.budget_moves(scope), "usable": pt.usable, "reason": pt.reason}
    if p is None:
        blank = dict.fromkeys(_CERT_KEYS + _PLAN_KEYS + _SPREAD_KEYS)
        return {**blank, **head}
    return {
        **head,
        **certificate_fields(p.certificate),
        "extra_moves_spent": None if pt.strict or fewest is None else p.changes.moves - fewest,
        "budget_note": "; ".join(n for n in p.certificate.notes if n.startswith("move budget:")) or None,
        "bytes_to_move": p.changes.bytes_moved,
        "changed_partitions": int(len(p.changes.changed_rows)),
        "leader_changes": p.changes.leader_changes,
        "empty": p.is_empty,
        **spreads_of(p.metrics_after),
        "seconds": round(p.seconds.get("total", 0.0), 3),
    }


def frontier_summary(f: Frontier) -> dict[str, Any]:
    """The frontier as plain data (``flowbalance frontier --json``): the current state's spreads once, then one
    entry per point in budget order (strict last). ``extra_moves_spent`` is a point's moves beyond the budget 0
    plan's (the fewest moves for count balance); ``budget_note`` the certificate's notes on what the budget bought,
    per-topic part then failover part (the per-topic part names the worst excess over a topic's share: a budget can
    lower it without lowering the spread)."""
    first = next(pt.plan for pt in f.points if pt.plan is not None)
    zero = next((pt.plan for pt in f.points if pt.label == "0" and pt.plan is not None), None)
    fewest = zero.changes.moves if zero is not None else None
    c = first.metrics_before
    return {
        "kind": KIND,
        "version": VERSION,
        "cluster": f.cluster,
        "request": request_fields(f.request),
        "current": {**spreads_of(c), "replicas": c.num_replicas, "partitions": c.num_partitions,
                    "brokers": int(first.before.brokers.live.sum())},
        "scope_replicas": f.scope_replicas,
        "points": [point_fields(pt, f.scope_replicas, fewest) for pt in f.points],
        "seconds": round(f.seconds, 3),
    }


# ---- what the terminal and the page show ------------------------------------------------------------------------

_LONG_INT = re.compile(r"(?<![\w.,-])[1-9]\d{3,}(?!\w|[.,]\d)")
_STRICT_CLAUSE = "; strict ±1 per topic needs at least"


def group_digits(text: str) -> str:
    """The certificate's wording with integers of four or more digits grouped by thousands ("5527 moves, bound
    5527" → "5,527 moves, bound 5,527"), as every other number on the frontier's screens is. Only free-standing
    integers change: a decimal, a grouped number or digits inside a name (``topic-1234``) stay as they are."""
    return _LONG_INT.sub(lambda m: f"{int(m.group()):,}", text)


def format_number(v: Any) -> str:
    """A number as the frontier shows it: thousands grouped, at most three decimals, never an exponent
    (5527 → "5,527", 2.5 → "2.5", 1/3 → "0.333"); None → "-"; anything else as text."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.3f}".rstrip("0").rstrip(".")


def point_text(p: dict[str, Any], strict: dict[str, Any] | None) -> str:
    """A planned point's verdict and per-topic level as the frontier shows them (``p``, ``strict``: entries of
    ``frontier_summary``'s ``points``; ``strict`` the strict point, or None).

    The certificate prices strict per-topic balance by a closed-form lower bound ("strict ±1 per topic needs at
    least N moves"); when the frontier planned the strict point, that plan's own moves are what strict costs, so
    they replace the bound: the screen shows one strict figure, the strict column's."""
    text = group_digits(p["verdict"])
    level = p["per_topic"]
    if level is None:
        return text
    shown = level["text"]
    if strict is not None and strict["usable"] and _STRICT_CLAUSE in shown:
        moves, cost = p["moves"], strict["moves"]
        ratio = f", {cost / moves:.1f}× these" if moves > 0 else ""
        shown = f"{shown.split(_STRICT_CLAUSE)[0]}; strict ±1 per topic: {cost:,} moves (the strict plan){ratio}"
    return f"{text}; {group_digits(shown)}"


def bound_text(level: dict[str, Any], strict: dict[str, Any] | None) -> str:
    """A certificate's per-topic level (``per_topic`` of its fields) in one line beside a frontier (``report
    --frontier``): its closed-form strict figure labelled as the lower bound it is, next to the moves of the
    frontier's strict plan, when that was planned."""
    text = group_digits(level["text"])
    if strict is None or not strict["usable"] or _STRICT_CLAUSE not in level["text"]:
        return text
    if strict["moves"] == level["strict_moves_bound"]:
        return f"{text} (a lower bound, which the frontier's strict plan meets)"
    return f"{text} (a lower bound; the frontier's strict plan takes {strict['moves']:,} moves)"


def strict_point(d: dict[str, Any]) -> dict[str, Any] | None:
    """The strict entry of ``frontier_summary``'s points, or None."""
    return next((p for p in d["points"] if p["label"] == STRICT), None)
