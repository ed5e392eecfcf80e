"""Convolutional GPs (paper 001): the paper's experiments and one training step against GPflow."""
