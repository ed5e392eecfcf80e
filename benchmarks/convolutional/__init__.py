"""Convolutional GPs (van der Wilk, Rasmussen & Hensman 2017): the paper's experiments and one training step against
GPflow."""
