"""The dashboard: its cost to training, every family's default in the page, a click's latency, the lessons."""
