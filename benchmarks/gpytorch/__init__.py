"""Benchmarks of the lab's kernels and inducing variables hosted in GPyTorch models (`invlab.gpytorch`)."""
