"""The RKHS invariance machine (Zhang, Lee & Teh 2013): the fast gradient and the paper's experiments."""
