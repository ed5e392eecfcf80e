"""Independent computations the tests compare the engine against (import as `tests.helpers.<module>`)."""
