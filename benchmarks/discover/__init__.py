"""Benchmarks of `invlab discover` (see README.md here)."""
