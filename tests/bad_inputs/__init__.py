"""The published list of bad inputs (docs/bad_inputs.md), one module per kind of input."""
