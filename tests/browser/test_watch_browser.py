"""A loop you wrote, watched live in a real Chromium: a hand-written Adam loop on the default SVGP writes its run with
`invlab.train.watch` (another process), the page opens it by link (as Runs → Open run does), and its ELBO curve
grows in the browser while the loop writes; the page never continues it."""
import os
import subprocess
import sys

import pytest

from pagekit import browser_page, column_length, page_texts, poll
from tests.dashboard.session.test_watch_follow import LOOP, ROOT


@pytest.fixture
def watched(served_home):
    """(page url, the user's loop process, its run id) once the loop, writing to the shared server's store, has
    written its first 20 steps."""
    url, folder = served_home
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    loop = subprocess.Popen([sys.executable, "-c", LOOP, str(folder / "data")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        run_id, step = map(int, loop.stdout.readline().split())
        assert step == 20
        yield url, loop, run_id
    finally:
        if loop.poll() is None:
            loop.kill()
        loop.wait()


def test_the_page_draws_a_watched_loop_while_it_writes(watched):
    url, loop, run_id = watched
    with browser_page() as (page, errors):
        page.goto(url + f"?run={run_id}")
        poll(lambda: column_length(page, "elbo") == 20)
        poll(lambda: any("still being trained by another process" in text for text in page_texts(page)))
        loop.stdin.write("\n")
        loop.stdin.flush()
        assert loop.stdout.readline().split() == [str(run_id), "40"]
        poll(lambda: column_length(page, "elbo") == 40)  # the curve grew in the browser
        loop.stdin.write("\n")
        loop.stdin.flush()
        assert loop.wait(timeout=60) == 0
        poll(lambda: any("is now finished at step 40" in text for text in page_texts(page)))
        assert column_length(page, "elbo") == 40
        assert not errors, errors


# every image the page draws: (glyph type, width, height) in data units, from the glyph or its data columns
IMAGES_JS = """() => {
  const out = [];
  const size = (g, d, key) => {
    const spec = g[key];
    if (spec && typeof spec === "object" && "field" in spec && d[spec.field]) return d[spec.field][0];
    if (spec && typeof spec === "object" && "value" in spec) return spec.value;
    return typeof spec === "number" ? spec : (d[key] ? d[key][0] : null);
  };
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.glyph && m.data_source && (m.glyph.type === "ImageRGBA" || m.glyph.type === "Image")) {
        const d = m.data_source.data;
        if (d.image && d.image.length) out.push([m.glyph.type, size(m.glyph, d, "dw"), size(m.glyph, d, "dh")]);
      }
  return out;
}"""

QUADS_JS = """() => {
  let n = 0;
  for (const doc of Bokeh.documents)
    for (const m of doc._all_models.values())
      if (m.glyph && m.glyph.type === "Quad" && m.data_source && m.data_source.data.left)
        n = Math.max(n, m.data_source.data.left.length);
  return n;
}"""


def test_a_watched_loops_snapshot_shows_its_image_grid_and_spectrum_on_the_page(served_home):
    import numpy as np

    from invlab import diagnostics as dg
    from invlab.train import watch

    class Mine:
        """A user's model whose views are a 2 × 3 grid of 4 × 4 samples and an eigenvalue spectrum."""

        calls = 0

        def diagnostics(self):
            self.calls += 1
            rng = np.random.default_rng(self.calls)
            return {"samples": dg.ImageGrid(title=f"My samples at snapshot {self.calls}",
                                            images=rng.random((2, 3, 4, 4))),
                    "spectrum": dg.Spectrum(title="My eigenvalues", values=np.sort(rng.random(12)) + 0.1)}

    url, folder = served_home
    with watch(Mine(), name="pictures", data_dir=folder / "data") as run:
        run.log(1, loss=1.0)
        run.snapshot()
        with browser_page() as (page, errors):
            page.goto(url + f"?run={run.run_id}")
            poll(lambda: any("My samples at snapshot 1" in text for text in page_texts(page)))
            poll(lambda: any("My eigenvalues" in text for text in page_texts(page)))
            # the grid is one tiled image: 3 images of 4 px and 2 gutters across, 2 and 1 down
            assert poll(lambda: [size for size in page.evaluate(IMAGES_JS) if size[1:] == [14, 9]])
            assert poll(lambda: page.evaluate(QUADS_JS) > 0)  # the spectrum's histogram bars
            run.log(2, loss=0.5)
            run.snapshot()  # the loop goes on: the page shows the new pictures
            poll(lambda: any("My samples at snapshot 2" in text for text in page_texts(page)))
            assert not errors, errors


def test_a_watched_gpytorch_models_inducing_patches_and_spectrum_are_on_the_page(served_home):
    """A GPyTorch ApproximateGP with the lab's ConvKernel, watched: the page that opens its run draws its inducing
    patches as images (six 3 × 3 patches in one row: 6·3 + 5 gutters across, 3 down), its K_uu spectrum and its
    hyperparameters, as for the lab's own runs."""
    pytest.importorskip("gpytorch")
    import torch

    from invlab.train import watch
    from tests.gpytorch.test_watch_gpytorch import conv_model

    model, X, y = conv_model()
    url, folder = served_home
    with watch(model, name="gpytorch conv", data_dir=folder / "data") as run:
        with torch.no_grad():
            run.log(1, loss=1.0)
        run.snapshot()
        with browser_page() as (page, errors):
            page.goto(url + f"?run={run.run_id}")
            poll(lambda: any("Inducing patches (6 of 6)" in text for text in page_texts(page)))
            poll(lambda: any("K_uu eigenvalues (M = 6)" in text for text in page_texts(page)))
            assert poll(lambda: [size for size in page.evaluate(IMAGES_JS) if size[1:] == [23, 3]])
            assert poll(lambda: page.evaluate(QUADS_JS) > 0)
            # the hyperparameters' table: each name, with where it sits in the model beside it
            poll(lambda: any("invlab-scalars" in text and "outputscale" in text and "(covar_module.base_kernel)" in text
                             for text in page_texts(page)))
            assert not errors, errors
