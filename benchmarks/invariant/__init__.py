"""Invariant GPs with learned augmentations (paper 000): the paper's experiments and the step time against S."""
