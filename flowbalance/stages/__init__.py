"""The three chained planning stages: replica counts, leaders by reordering, (leader, first follower) pairs.

Each stage optimizes one thing exactly and must not undo the stages before it (as in Cruise Control's goal chain).
"""
