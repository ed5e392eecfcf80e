"""The status's time left follows the run's pace, not each snapshot's step rate: a rate that alternates between fast
and slow snapshots (views computed on one, not the next) gives a steady estimate, and a lasting change of pace is
followed within a few updates."""
from invlab.dashboard.explorer.status import StatusBar


def _left_after(status: StatusBar, rates) -> list[float]:
    out = []
    for rate in rates:
        status.param.update(steps_per_sec=rate, step=status.step + 10)
        out.append(status.seconds_left())
    return out


def test_the_time_left_does_not_swing_with_each_snapshots_rate():
    status = StatusBar(state="running", total=10_000, step=100)
    left = _left_after(status, [10.0, 40.0] * 10)[4:]  # the first few come as the estimate settles
    assert max(left) / min(left) < 1.5, left  # unsmoothed: 4× between one second and the next


def test_the_time_left_follows_a_lasting_change_of_pace():
    status = StatusBar(state="running", total=10_000, step=100)
    _left_after(status, [10.0] * 10)
    left = _left_after(status, [40.0] * 12)[-1]
    remaining = (status.total - status.step) / 40.0
    assert abs(left - remaining) / remaining < 0.2, (left, remaining)


def test_a_new_run_starts_its_estimate_afresh():
    status = StatusBar(state="running", total=10_000, step=100)
    _left_after(status, [5.0] * 10)
    status.param.update(state="idle", step=0)  # a Reset: the next run's pace is its own
    status.param.update(state="running")
    left = _left_after(status, [50.0])[-1]
    assert abs(left - (status.total - status.step) / 50.0) < 1.0, left
