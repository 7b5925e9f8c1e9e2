"""The three chained planning stages: replica counts, leaders by reordering, (leader, first follower) pairs.

Each stage optimizes one thing exactly and must not undo the stages before it (as in Cruise Control's goal chain).
Stage 1 lives in ``pooled`` (the pooled relaxation, realized exactly: the normal path at any size), ``replicas``
(the full keep network: the fallback, and the reference the tests compare against) and ``direct`` (pure
rebalances by max flow); stage 2 in ``leaders``; stage 3 in ``followers``.
"""
