"""The warning a plan earns when it makes disk use markedly less even (sizes known).

The default plan balances replica counts, not bytes: on a cluster whose partitions differ in size it can move a
few large partitions onto one broker. When the largest disk use over its weighted share (max/mean) grows by more
than ``WORSE_BY`` (10 %), ``plan``, ``report --plan``, their ``--json`` and the HTML page all show this one
warning, with the bytes of the brokers that gain the most, instead of only a hint line.
"""
from __future__ import annotations

import numpy as np

from .metrics import StateMetrics
from .model import ClusterState
from .summary import format_bytes

WORSE_BY = 0.10  # max/mean after above (1 + WORSE_BY) × before
LISTED = 5


def disk_worse_warning(after: ClusterState, mb: StateMetrics, ma: StateMetrics) -> dict | None:
    """A ``disk_balance_worse`` warning (report warning keys: kind, state, message, items) when the plan raises
    disk max/mean by more than ``WORSE_BY``; None when sizes are unknown or it does not."""
    if mb.bytes is None or ma.bytes is None:
        return None
    before_ratio, after_ratio = mb.bytes_max_over_mean, ma.bytes_max_over_mean
    if not before_ratio or not after_ratio or after_ratio <= before_ratio * (1 + WORSE_BY):
        return None
    gain = ma.bytes.astype(np.int64) - mb.bytes.astype(np.int64)
    order = np.lexsort((after.brokers.ids, -gain))
    top = [int(i) for i in order[:LISTED] if gain[i] > 0]
    ids = after.brokers.ids
    grows = ", ".join(f"broker {int(ids[i])} {format_bytes(int(mb.bytes[i]))} → {format_bytes(int(ma.bytes[i]))}"
                      for i in top[:2])
    message = (f"the plan makes disk use less even: max/mean {before_ratio:.2f} → {after_ratio:.2f} "
               f"(+{100 * (after_ratio / before_ratio - 1):.0f} %); {grows}; a plan with balance "
               "count+bytes evens disk use too")
    return {"kind": "disk_balance_worse", "state": "after", "message": message,
            "items": [int(ids[i]) for i in top]}
