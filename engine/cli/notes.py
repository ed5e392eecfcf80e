"""Python warnings raised while a command works, said as plain `note:` sentences.

Python prints a warning as `/path/to/module.py:81: RuntimeWarning: …` followed by the source line: a path and a
line of code that mean nothing to a user. While a command runs inside `WarningsAsNotes`, each warning is one line in
words instead, said once, with what to do where the product knows it (a Cholesky that needed more jitter than asked
for, typical of float32)."""
from __future__ import annotations

import re
import warnings
from typing import Callable

_JITTER = re.compile(r"^(?P<what>.+) was not positive definite with jitter (?P<asked>\S+); used (?P<used>\S+)$")


class WarningsAsNotes:
    """A context in which every Python warning is passed to `say` as one `note: …` line (each distinct text once),
    without Python's source path and line. The filters in force (`-W`, PYTHONWARNINGS) still decide which warnings
    are raised. `dtype`: the precision the run computes in, once known (named where it explains a warning)."""

    def __init__(self, say: Callable[[str], None]):
        self.say, self.dtype = say, None
        self._said: set[str] = set()
        self._context = warnings.catch_warnings()

    def __enter__(self) -> "WarningsAsNotes":
        self._context.__enter__()
        warnings.showwarning = self._show
        return self

    def __exit__(self, *exc) -> None:
        self._context.__exit__(*exc)

    def sentence(self, message: str) -> str:
        """The note for warning text `message`: in words, with what to do where that is known."""
        jitter = _JITTER.match(message.strip())
        if jitter is None:
            return message.strip()
        precision = str(self.dtype).replace("torch.", "") if self.dtype is not None else None
        more = ", or --dtype float64 for more precision" if precision == "float32" else ""
        return (f"{jitter['what']} was not positive definite with jitter {jitter['asked']}"
                + (f" in {precision}" if precision else "")
                + f", so {jitter['used']} was used and the run goes on (give --jitter {jitter['used']} to start "
                + f"there{more})")

    def _show(self, message, category, filename, lineno, file=None, line=None) -> None:
        text = self.sentence(str(message))
        if text not in self._said:
            self._said.add(text)
            self.say(f"note: {text}")


__all__ = ["WarningsAsNotes"]
