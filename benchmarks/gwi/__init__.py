"""Gaussian Wasserstein inference (Wild, Hu & Sejdinovic 2022): against the SVGP, the step's scaling, the eigenvalue
estimators."""
