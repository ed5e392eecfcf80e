"""The pace the status's time left is computed from: the run's step rate as each snapshot gives it swings between
snapshots (one computed views, the next did not; another page started training), so the time left is taken from an
exponential moving average of the seconds per step (`WEIGHT` of each new rate: a lasting change of pace is followed
within a few seconds, a swing between two snapshots moves the estimate a little). Seconds per step are averaged rather
than steps per second, since time left is steps × seconds per step. A run that starts again (its step goes back)
starts its average afresh, and the rate of the run before is not taken into it."""
from __future__ import annotations

import math

WEIGHT = 0.25  # of each new snapshot's rate; the page gets about one a second


class StepPace:
    """The smoothed seconds per step of the run the status shows."""

    def __init__(self):
        self.seconds_per_step: float | None = None
        self._step: int | None = None

    def at(self, step: int) -> bool:
        """The run shown is at `step` now; a step lower than the last means another run, whose pace is its own: its
        average starts afresh, and True is returned."""
        again = self._step is not None and step < self._step
        if again:
            self.seconds_per_step = None
        self._step = step
        return again

    def add(self, steps_per_sec: float | None) -> None:
        """The step rate now (NaN or None: not known; ignored), added each time the step or the rate changes (about
        once a second while the run trains)."""
        if steps_per_sec is None or not math.isfinite(steps_per_sec) or steps_per_sec <= 0:
            return
        now = 1.0 / steps_per_sec
        old = self.seconds_per_step
        self.seconds_per_step = now if old is None else old + WEIGHT * (now - old)

    def steps_per_sec(self) -> float | None:
        """The smoothed rate; None until a rate is known."""
        return None if self.seconds_per_step is None else 1.0 / self.seconds_per_step
