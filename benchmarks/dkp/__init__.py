"""Deep kernel processes (paper 004): DIWP against the NNGP and the SVGP, and the step's scaling."""
