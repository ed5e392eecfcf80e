"""Invariance Lab engine: invariant, convolutional, RKHS, Wasserstein and deep-kernel-process models in PyTorch."""
