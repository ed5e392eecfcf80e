"""Deep kernel processes (Aitchison, Yang & Ober 2021): DIWP against the NNGP and the SVGP, and the step's scaling."""
