"""The stages of the chain, each a thin object over one module of ``flowbalance.stages`` / ``templates``.

Flow strategy: replica counts → move budget (per-topic spread, then failover) → fewest bytes → disk → leaders →
first followers → failover. Template strategy: templates → leaders → first followers (those two only when the
templates left leaders uneven) → failover (keeping every topic's leaders within their intervals, as the
templates lay them: the rotation order evens each topic's pairs, which is not always the most even failover).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certificate import count_targets, missed_targets
from ..errors import PlanningError, RequestError
from ..metrics import above_capacity, disk_use, compare
from ..model import ClusterState
from ..stages.disk import balance_disk
from ..stages.fewest_bytes import fewest_bytes
from ..stages.followers import balance_followers
from ..stages.leaders import balance_leaders
from ..stages.replicas import ReplicaResult, balance_replicas
from ..summary import format_bytes
from ..templates.place import TemplateResult, place_by_templates
from .base import Context, Invariant, Outcome, Stage
from .budget import TopicBudget
from .failover_budget import FailoverBudget, order_kept
from .failover_step import Failover
from .precheck import leaders_balanced, must_change


@dataclass(frozen=True)
class ReplicaEvidence:
    """Stage 1's evidence: the solve it ran, and the fewest moves for the certificate's targets when it solved
    exactly those (None otherwise: the certificate solves them itself)."""

    method: str  # "split", "pooled", "keep", "must-move only"
    result: ReplicaResult | None
    fewest: int | None


class ReplicaCounts(Stage):
    """Stage 1: replica counts by flow (split, pooled or full keep network, chosen inside)."""

    name, label = "replicas", "stage 1: replicas"
    keeps = ()

    def applies(self, ctx: Context) -> bool:
        req = ctx.request
        if "replicas" not in req.stages:
            if ctx.resolved.must_change:
                raise RequestError("stages", "RF changes and broker removals need the replicas stage",
                                   ",".join(req.stages))
            return False
        return req.balance != "bytes" or must_change(ctx.resolved)

    def run(self, ctx: Context) -> Outcome:
        r, req, cur = ctx.resolved, ctx.request, ctx.current
        if req.balance == "bytes":
            res = balance_replicas(cur, r.target_rf, r.movable, per_topic=False, prefer=r.prefer, count_targets=False)
            return Outcome(res.replicas, ReplicaEvidence("must-move only", res, None),
                           ("stage 1 (balance bytes): only what must move, no count targets",))
        res = ctx.remembered("stage 1", lambda: balance_replicas(
            cur, r.target_rf, r.movable, per_topic=req.per_topic, prefer=r.prefer, lower_bound=ctx.moves_bound,
            topics_after_moves=req.topics_after_moves))
        notes = (_stage1_note(res),) + (_spread_note(res),) * req.topics_after_moves
        return Outcome(res.replicas, ReplicaEvidence(res.network, res, _fewest(ctx, res.replicas)), notes,
                       _count_invariants(ctx, res.replicas))


def _fewest(ctx: Context, replicas: np.ndarray) -> int | None:
    """Stage 1's moves when its plan meets the certificate's targets: then they are the flow optimum for them."""
    r = ctx.resolved
    planned = r.before.with_replicas(replicas)
    targets = count_targets(r.before, r.target_rf, r.movable, ctx.request.strict_per_topic)
    if missed_targets(targets, r.before, planned, r.movable):
        return None
    return compare(r.before, planned).moves


def _count_invariants(ctx: Context, replicas: np.ndarray) -> tuple[Invariant, ...]:
    """"count targets": when stage 1 met them, the stages after it keep them."""
    r = ctx.resolved
    targets = count_targets(r.before, r.target_rf, r.movable, ctx.request.strict_per_topic)
    if missed_targets(targets, r.before, r.before.with_replicas(replicas), r.movable):
        return ()
    return (Invariant("count targets", lambda s: not missed_targets(targets, r.before, s, r.movable)),)


def _stage1_note(res: ReplicaResult) -> str:
    if res.network in ("pooled", "split"):
        how = ("pruned pools reached the lower bound" if res.pruned else
               f"{res.network} relaxation optimum {res.flow_bound:,} moves, realized exactly")
        return f"stage 1: {res.network} network ({res.nodes:,} nodes, {res.arcs:,} arcs); {how}"
    return (f"stage 1: full keep network ({res.nodes:,} nodes, {res.arcs:,} arcs); the pooled optimum "
            f"({res.flow_bound} moves) could not be realized")


def _spread_note(res: ReplicaResult) -> str:
    return (f"per-topic spread: chosen among the plans with the fewest moves for count balance (the {res.network} "
            "network minimizes a graded per-topic excess after the moves; no move is spent on it)")


class FewestBytes(Stage):
    """Objective bytes: among the plans with stage 1's moves and balance, the fewest bytes."""

    name, label = "bytes", "stage 1: fewest bytes"
    keeps = ("count targets", "fewest moves")

    def applies(self, ctx: Context) -> bool:
        return ctx.request.objective == "bytes" and ctx.ran == ["replicas"] and ctx.request.balance != "bytes"

    def run(self, ctx: Context) -> Outcome:
        r = ctx.resolved
        # per-topic targets bind here only when strict: bytes rank right after the moves, above per-topic spread
        res = fewest_bytes(r.before, ctx.current, r.target_rf, r.movable, per_topic=ctx.request.strict_per_topic,
                           prefer=r.prefer)
        moves = compare(r.before, ctx.current).moves
        keep = Invariant("fewest moves", lambda s: compare(r.before, s).moves == moves)
        return Outcome(res.replicas, res, (res.note,), (keep,))


class Disk(Stage):
    """Disk balance (balance count+bytes or bytes), or capacity repair when stage 1 left a broker above it."""

    name, label = "disk", "disk balance"

    def applies(self, ctx: Context) -> bool:
        req, b = ctx.request, ctx.current.brokers
        if "replicas" not in req.stages:
            return False
        cap_known = ctx.current.has_sizes and bool((b.capacity[b.live] >= 0).any())
        return req.disk_balance or (cap_known and above_capacity(ctx.current))

    def run(self, ctx: Context) -> Outcome:
        r, req = ctx.resolved, ctx.request
        on = req.disk_balance
        res = balance_disk(r.before, ctx.current, r.target_rf, r.movable, tolerance=req.disk_tolerance if on else 1e9,
                           counts=req.balance != "bytes", per_topic=req.per_topic)
        if res.score.capacity_excess > 0:
            raise PlanningError(_capacity_message(ctx.current.with_replicas(res.replicas)))
        note = (f"disk balance: {res.method}" if on else
                f"capacity repair: stage 1 put a broker above its disk capacity; {res.method}")
        return Outcome(res.replicas, res, (note,))


def _capacity_message(after: ClusterState) -> str:
    b = after.brokers
    d = disk_use(after)
    over = np.flatnonzero((b.capacity >= 0) & (d > b.capacity) & b.live)
    i = int(over[np.argmax(d[over] - b.capacity[over])])
    return (f"disk capacity cannot be met: broker {int(b.ids[i])} would still hold {format_bytes(int(d[i]))} "
            f"against its capacity {format_bytes(int(b.capacity[i]))} ({len(over)} broker"
            f"{'s' if len(over) != 1 else ''} above capacity after disk balancing); add brokers or capacity, or "
            "relax the request")


class Leaders(Stage):
    """Stage 2: leader counts by reordering replicas (no data moves). ``only_if_uneven``: the template chain's
    repair, run only when the templates left leaders outside their intervals."""

    name, label = "leaders", "stage 2: leaders"
    changes_sets = False
    keeps = ("count targets", "fewest moves")

    def __init__(self, only_if_uneven: bool = False):
        self.only_if_uneven = only_if_uneven

    def applies(self, ctx: Context) -> bool:
        if self.only_if_uneven:
            return "templates" in ctx.ran and not leaders_balanced(ctx.current, ctx.request.per_topic)
        return "leaders" in ctx.request.stages and not order_kept(ctx)

    def run(self, ctx: Context) -> Outcome:
        cur, per_topic = ctx.current, ctx.request.per_topic
        # keeping the first replica after stage 1 costs nothing: it is the original leader when that stayed,
        # otherwise the broker that took the leader's slot (a replacement takes over its broker's leaderships)
        new = balance_leaders(cur, cur.replicas[:, 0].copy(), ctx.resolved.movable, per_topic=per_topic)
        notes = ()
        if self.only_if_uneven:
            notes = ("template strategy: leaders were uneven after the templates (racks of unequal size, weights or "
                     "topics left out); stages 2 and 3 reordered them",)
        return Outcome(new, None, notes, leader_invariants(cur.with_replicas(new), per_topic))


def leader_invariants(state: ClusterState, per_topic: bool) -> tuple[Invariant, ...]:
    """"leader balance" (every broker's leaders within its interval) and, with ``per_topic``, "topic leader
    balance" (every topic's too): each established when ``state`` meets it. Separate, because the failover stage
    keeps the first always and the second only when the request balances topics strictly."""
    out = ()
    if leaders_balanced(state, False):
        out += (Invariant("leader balance", lambda s: leaders_balanced(s, False)),)
    if per_topic and leaders_balanced(state, True):
        out += (Invariant("topic leader balance", lambda s: leaders_balanced(s, True)),)
    return out


class Followers(Stage):
    """Stage 3: first followers (the (leader, first follower) pairs that decide failover), by reordering."""

    name, label = "followers", "stage 3: followers"
    changes_sets = False
    changes_leaders = False
    keeps = ("count targets", "fewest moves", "leader balance", "topic leader balance")

    def __init__(self, after_leaders_only: bool = False):
        self.after_leaders_only = after_leaders_only

    def applies(self, ctx: Context) -> bool:
        if self.after_leaders_only:
            kept = getattr(ctx.evidence.get("templates"), "kept_input", False)
            return bool(ctx.ran) and (ctx.ran[-1] == "leaders" or kept)
        return "followers" in ctx.request.stages and not order_kept(ctx)

    def run(self, ctx: Context) -> Outcome:
        return Outcome(balance_followers(ctx.current, ctx.resolved.movable))


class Templates(Stage):
    """Template strategy: rotation-order templates matched to the partitions (placement and order together)."""

    name, label = "templates", "templates"

    def applies(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> Outcome:
        r = ctx.resolved
        res = place_by_templates(r.before, r.target_rf, r.movable, per_topic=ctx.request.per_topic)
        return Outcome(res.replicas, res, (_template_note(res),))


def _template_note(res: TemplateResult) -> str:
    if res.kept_input:
        return ("template strategy: the replica counts are already at their targets, so the templates are not laid "
                "(leaders and first followers are only reordered where that evens them)")
    how = ("exact Hungarian matching per group" if res.sparse_groups == 0 else
           f"exact matching for {res.groups - res.sparse_groups} groups, candidate-pair matching for "
           f"{res.sparse_groups} large ones")
    return (f"template strategy: {res.groups} group{'s' if res.groups != 1 else ''} laid on rotation-order "
            f"templates; {how}; {res.moves} moves against the templates' own bound {res.bound}"
            + (f"; {res.adjusted} template slots given to other brokers to meet the count targets"
               if res.adjusted else ""))


def flow_chain() -> tuple[Stage, ...]:
    return (ReplicaCounts(), TopicBudget(), FailoverBudget(), FewestBytes(), Disk(), Leaders(), Followers(),
            Failover())


def template_chain() -> tuple[Stage, ...]:
    return (Templates(), Leaders(only_if_uneven=True), Followers(after_leaders_only=True),
            Failover(topic_leaders=True))
