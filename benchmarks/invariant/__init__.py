"""Invariant GPs with learned augmentations (van der Wilk et al. 2018): the paper's experiments and the step time
against S."""
