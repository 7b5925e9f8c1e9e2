"""Readers and writers for Kafka's file formats (reassignment JSON, describe text, log-dirs JSON, broker files)."""
