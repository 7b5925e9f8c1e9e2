"""Benchmarks: ``python -m benchmarks`` (or ``make bench``). Figures are printed, never asserted."""
