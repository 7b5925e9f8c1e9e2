"""flowbalance: plans Apache Kafka partition reassignments with the fewest replica moves, by flow networks.

The library API (docs/library.md)::

    import flowbalance as fb
    loaded = fb.load_cluster("describe.txt", brokers="brokers.csv")
    p = fb.plan(loaded.state, fb.PlanRequest(remove=(19,)))
    files = fb.plan_files(p)          # the plan, rollback and election texts
    report = fb.build_report(p)       # the same dict as ``report --json``

``p.certificate`` says what the plan proves: its moves against the bound they are proven against.
"""
from .certificate import Certificate, MovesVerdict, certificate_fields
from .errors import InputError, PlanningError, RequestError
from .frontier import Frontier, frontier, frontier_summary
from .load import load_cluster, load_texts, mark_removed
from .metrics import compare, measure
from .model import Broker, Brokers, ClusterState, Partition
from .place import NewTopic, PlaceRequest, Placement, place, place_summary, place_text
from .planfile import read_plan
from .planner import Plan, PlanFiles, certify_plan, plan, plan_files
from .report import build_report
from .request import PlanRequest
from .resolve import Resolved, resolve
from .status import held_rows, plan_input
from .verify import PlanVerificationError

__version__ = "0.1.0"

__all__ = [
    "Broker", "Brokers", "Certificate", "ClusterState", "Frontier", "InputError", "MovesVerdict", "NewTopic",
    "Partition", "Placement", "PlaceRequest", "Plan",
    "PlanFiles", "PlanRequest", "PlanVerificationError", "PlanningError", "RequestError", "Resolved", "build_report", "certificate_fields",
    "certify_plan", "compare", "frontier", "frontier_summary", "held_rows", "load_cluster", "load_texts", "mark_removed", "measure", "place", "place_summary",
    "place_text", "plan", "plan_files",
    "plan_input", "read_plan", "resolve", "__version__",
]
