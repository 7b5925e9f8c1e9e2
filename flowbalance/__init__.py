"""flowbalance: plans Apache Kafka partition reassignments with the fewest replica moves, by flow networks.

Library entry points: ``load_cluster`` (read Kafka dumps into a ``ClusterState``) and ``measure`` (metrics).
"""
from .errors import InputError, PlanningError
from .load import load_cluster, mark_removed
from .metrics import compare, measure
from .model import Broker, Brokers, ClusterState, Partition

__version__ = "0.1.0"

__all__ = [
    "Broker", "Brokers", "ClusterState", "InputError", "Partition", "PlanningError",
    "compare", "load_cluster", "mark_removed", "measure", "__version__",
]
