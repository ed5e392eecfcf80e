"""The RKHS invariance machine (paper 002): the fast gradient and the paper's experiments."""
