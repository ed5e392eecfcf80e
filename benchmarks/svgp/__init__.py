"""The SVGP core timed side by side with GPyTorch."""
