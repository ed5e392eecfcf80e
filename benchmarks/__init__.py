"""Side-by-side benchmarks: scripts that print a ratio measured in one run (STYLE.md lesson 11), not timed tests."""
