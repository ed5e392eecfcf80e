"""docs/gpytorch.md, run as written: every ```python block is run on its own (a reader copies one block), from a
fresh folder with the data directory inside it, and what the page promises is checked on what the blocks leave.
The page's blocks run once for the module (tiny data, few steps)."""
from __future__ import annotations

import contextlib
import io
import re
import traceback

import pytest

from tests.helpers.readme import ROOT

pytest.importorskip("gpytorch")

PAGE = ROOT / "docs" / "gpytorch.md"


def page_blocks() -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[dict]:
    """For each block: its code, the namespace it leaves, what it printed and the traceback of its error, if any."""
    out = []
    for index, code in enumerate(page_blocks()):
        folder = tmp_path_factory.mktemp(f"block{index}")
        namespace: dict = {}
        printed = io.StringIO()
        with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(printed):
            mp.chdir(folder)
            mp.setenv("INVLAB_DATA", str(folder / "data"))
            try:
                exec(compile(code, f"docs/gpytorch.md, block {index + 1}", "exec"), namespace)
                error = None
            except Exception:  # reported by the test of that block
                error = traceback.format_exc()
        out.append({"code": code, "namespace": namespace, "printed": printed.getvalue(), "error": error})
    return out


@pytest.mark.parametrize("index", range(len(page_blocks())), ids=lambda i: f"block {i + 1}")
def test_every_python_block_of_the_docs_page_runs_on_its_own(index, runs):
    assert runs[index]["error"] is None, runs[index]["error"]


def test_the_docs_page_builds_inducing_patches_before_the_approximate_gp_and_trains_it(runs):
    """One block starts the inducing patches at patches of the training images before the model exists, builds the
    ApproximateGP from them and trains it with GPyTorch's VariationalELBO to a useful test accuracy."""
    import gpytorch

    from invlab.gpytorch import ConvKernel, InducingPatches, InterDomainVariationalStrategy

    hosted = [run for run in runs if isinstance(run["namespace"].get("model"), gpytorch.models.ApproximateGP)]
    assert len(hosted) == 1, "the page trains one ApproximateGP, in a block that runs"
    (run,) = hosted
    code, namespace = run["code"], run["namespace"]
    assert code.index("InducingPatches.from_images(") < code.index("model = "), "patches first, then the model"
    model, patches = namespace["model"], namespace["patches"]
    assert isinstance(model.variational_strategy, InterDomainVariationalStrategy) and isinstance(patches,
                                                                                                   InducingPatches)
    assert any(isinstance(m, ConvKernel) for m in model.covar_module.modules())
    assert model.variational_strategy.inducing_points.shape == patches.Z.shape
    accuracy = re.search(r"test accuracy ([0-9.]+)", run["printed"])
    assert accuracy and float(accuracy.group(1)) > 0.8, run["printed"]


def test_the_docs_page_shows_an_image_orbit_on_flattened_images_with_input_shape(runs):
    """A block gives InvariantKernel input_shape=(C, H, W), and the model it trains predicts the same at a test image
    and at its mirror image."""
    from invlab.gpytorch import InvariantKernel

    def invariant(run):
        model = run["namespace"].get("model")
        return model is not None and any(isinstance(m, InvariantKernel) and m.input_shape == (1, 8, 8)
                                         for m in model.modules())

    shown = [run for run in runs if invariant(run)]
    assert len(shown) == 1, "the page trains one model with InvariantKernel(..., input_shape=(1, 8, 8))"
    (run,) = shown
    assert "input_shape=(1, 8, 8)" in run["code"]
    change = re.search(r"largest change of the prediction under a mirror: ([0-9.e+-]+)", run["printed"])
    assert change and float(change.group(1)) < 1e-8, run["printed"]
