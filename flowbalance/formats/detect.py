"""Detects an input file's format from its content (the ``fmt`` parameter, ``--format``, forces one)."""
from __future__ import annotations

import re

from ..errors import InputError
from .reassignment import CURRENT_MARK

ASSIGNMENT_FORMATS = ("json", "generate", "describe")

# a bare JSON list of partition objects (or an empty one); a log line "[2024-08-13 00:12:27,203] WARN ..." is not
_JSON_LIST = re.compile(r"\[\s*[{\]]")


def detect_assignment_format(text: str, source: str) -> str:
    """``"generate"`` (also ``--execute`` output), ``"json"`` or ``"describe"``; InputError when none fits."""
    head = text.lstrip()
    if CURRENT_MARK in text:
        return "generate"
    if head.startswith("{") or _JSON_LIST.match(head):
        return "json"
    # "Partition:" and "Replicas:", or Kafka 0.8's "partition:" and "replicas:"
    if "artition:" in text and "eplicas:" in text:
        return "describe"
    first = head.splitlines()[0][:60] if head else ""
    raise InputError(
        source, "", "unknown format: expected reassignment JSON, kafka-reassign-partitions --generate output "
        "or kafka-topics --describe text; a format can be forced", first, remedy=("fmt", None),
    )
