"""Breaks in a curve's line where its steps jump: a watched loop that logged every step and then nothing for hundreds
of steps (an evaluation, a pause, a stage that logs elsewhere) would otherwise be joined by a straight line that looks
like data. A step gap more than `GAP_FACTOR` times the metric's usual spacing (the median of its recent spacings,
once `MIN_SPACINGS` are known) gets one point with no value (NaN) in its middle, which Bokeh draws as a break. A
sparse metric logged at an even spacing (a test error every 100 steps) is never broken."""
from __future__ import annotations

from collections import deque

import numpy as np

GAP_FACTOR = 10.0
MIN_SPACINGS = 5
KEPT_SPACINGS = 256  # the recent spacings the usual one is taken from


class GapBreaks:
    """The breaks of one line as its points arrive in step order (`add`), remembering its last step and recent
    spacings; `clear()` when the line starts again."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        """A new line: no step or spacing known."""
        self.last: int | None = None
        self.spacings: deque = deque(maxlen=KEPT_SPACINGS)

    def add(self, steps: np.ndarray, *columns: np.ndarray) -> tuple[np.ndarray, ...]:
        """(steps, *columns) with a break inserted in every long gap, between the last step seen and the first of
        `steps` too: its step halfway, NaN in every column."""
        steps = np.asarray(steps, dtype=np.int64)
        if not len(steps):
            return (steps, *columns)
        before = np.array([] if self.last is None else [self.last], dtype=np.int64)
        gaps = np.diff(np.concatenate([before, steps]))  # gaps[i] ends at steps[i + 1 - len(before)]
        known = np.concatenate([np.asarray(self.spacings, dtype=np.float64), gaps[gaps > 0].astype(np.float64)])
        self.last = int(steps[-1])
        self.spacings.extend(int(g) for g in gaps[gaps > 0][-KEPT_SPACINGS:])
        if len(known) < MIN_SPACINGS:
            return (steps, *columns)
        long = np.nonzero(gaps > GAP_FACTOR * max(float(np.median(known)), 1.0))[0]
        if not len(long):
            return (steps, *columns)
        at = long + 1 - len(before)  # the index in `steps` each break goes before
        previous = np.where(at > 0, steps[np.maximum(at - 1, 0)], before[0] if len(before) else 0)
        middle = previous + (steps[at] - previous) // 2
        return (np.insert(steps, at, middle),
                *(np.insert(np.asarray(c, dtype=np.float64), at, np.nan) for c in columns))


def with_breaks(steps, *columns) -> tuple[np.ndarray, ...]:
    """`GapBreaks().add` for a whole line at once (a previous run's)."""
    return GapBreaks().add(np.asarray(steps, dtype=np.int64), *columns)
