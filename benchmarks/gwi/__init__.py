"""Gaussian Wasserstein inference (paper 003): against the SVGP, the step's scaling, the eigenvalue estimators."""
