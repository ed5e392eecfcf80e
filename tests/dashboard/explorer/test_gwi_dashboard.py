"""The GWI family in the dashboard (no browser): its W2 parts become live curves and its views render."""

import numpy as np

from invlab.dashboard import Explorer
from invlab.models.gwi.model import W2_PARTS
from invlab.train import RunConfig


def test_gwi_shows_its_w2_curves_spectrum_and_terms_in_the_dashboard(wait_until):
    config = RunConfig(model="gwi", data={"dataset": "diabetes"},
                       model_config={"inducing_factor": 2.0, "reference_steps": 20, "num_spectrum": 30},
                       train={"steps": 200, "eval_every": 20, "log_every": 2, "batch_size": 64})
    e = Explorer(config, store=False)
    try:
        e.__panel__()
        assert "num_spectrum" in e.page.model_group[0]._widgets and "spectrum" in e.page.model_group[0]._widgets
        e.start()
        wait_until(lambda: e.session.step >= 10 and all(p in e.curves.buffers for p in W2_PARTS), e)
        wait_until(lambda: {"w2_spectrum", "w2_terms", "hyperparameters"} <= set(e.view_panes), e)
        e.pause()
        # secondary curves go out every few seconds, and at once when the run stops (paused, or already finished)
        wait_until(lambda: e.session.state in ("paused", "finished"), e)
        for part in ("w2",) + W2_PARTS:
            data = e.curves.buffers[part].data
            assert len(data) >= 2 and np.isfinite(data[part]).all()
    finally:
        e.close()
