"""Detects an input file's format from its content (``--format`` forces one)."""
from __future__ import annotations

from ..errors import InputError
from .reassignment import CURRENT_MARK

ASSIGNMENT_FORMATS = ("json", "generate", "describe")


def detect_assignment_format(text: str, source: str) -> str:
    head = text.lstrip()
    if CURRENT_MARK in text:
        return "generate"
    if head.startswith("{"):
        return "json"
    if "Partition:" in text and "Replicas:" in text:
        return "describe"
    first = head.splitlines()[0][:60] if head else ""
    raise InputError(
        source, "", "unknown format: expected reassignment JSON, kafka-reassign-partitions --generate output "
        "or kafka-topics --describe text (use --format to force one)", first,
    )
