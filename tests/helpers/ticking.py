"""Following a Compare page (or its Discover study) without a server: tick it as its periodic callback would."""
import time


def follow(page, predicate, timeout: float = 180.0, each=None) -> None:
    """Tick `page` (anything with `tick()`, `message` and `state`) until `predicate()` holds; `each()` runs after
    every tick (to record what the page showed). A tick that could not draw, or the timeout, fails the test."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        page.tick()
        assert not page.message.startswith("Could not update the page"), page.message
        if each is not None:
            each()
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out: state {page.state!r}, message {page.message!r}")


def assert_opened(explorer, run_id: int, metric: str, wait_until) -> None:
    """After a click on a run's row: the Explorer shows the Training page, has opened stored run `run_id`, and its
    curve `metric` holds exactly the stored values."""
    import numpy as np

    assert explorer.page.pages.active == 0
    wait_until(lambda: explorer.session.state == "finished" and f"opened stored run {run_id}" in
               explorer.session.message and metric in explorer.curves.buffers
               and len(explorer.curves.buffers[metric].data) > 0, explorer)
    _, values = explorer.store.metrics.read(run_id, [metric])[metric]
    np.testing.assert_allclose(explorer.curves.buffers[metric].data[metric], values)
