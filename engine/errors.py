"""Errors the engine raises, each carrying a message that says what went wrong and what to do.

Every error derives from `InvlabError`, so a caller (the CLI, the dashboard) can catch the engine's own
failures in one place and show the message as it is.
"""


class InvlabError(Exception):
    """Base class for errors meant to be shown to the user as they are."""


class ConfigError(InvlabError, ValueError):
    """A configuration value is invalid (names the parameter and the allowed values)."""


class DataError(InvlabError, ValueError):
    """A data set is unknown, missing, corrupt, or an option applied to it is invalid."""


class ShapeError(InvlabError, ValueError):
    """An array handed to a public entry point has the wrong shape."""


class NumericalError(InvlabError, RuntimeError):
    """A numerical failure the engine could not recover from (Cholesky even with the largest jitter)."""


class NonFiniteLossError(NumericalError):
    """A training step produced a non-finite loss or gradient; the model was left at its last good state."""

    kernel_fault = False  # True when a user's kernel was not finite on finite inputs: a smaller step will not help


def printable(text) -> str:
    """`text` (a name a file or a user supplies) as it may go into a message for a terminal: every control
    character, terminal escapes included, shown as `?`."""
    return "".join(ch if ch.isprintable() else "?" for ch in str(text))
