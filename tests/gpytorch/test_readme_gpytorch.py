"""The README's "For GPyTorch users" section, run as written: a GPyTorch `ExactGP` with the lab's `ConvKernel` learns
its hyperparameters by GPyTorch's exact marginal likelihood on the bundled digits and separates 4 from 9."""
import pytest

from tests.helpers.readme import run_python_blocks, section_blocks

pytest.importorskip("gpytorch")


def test_the_gpytorch_snippet_runs_as_written(tmp_path, monkeypatch, capsys):
    from invlab.gpytorch import ConvKernel

    blocks = section_blocks("For GPyTorch users")
    assert [kind for kind, _ in blocks] == ["python"]
    namespace = run_python_blocks(blocks, tmp_path, monkeypatch)
    conv = namespace["model"].covar_module.base_kernel
    assert isinstance(conv, ConvKernel) and conv.num_patches == 36
    printed = capsys.readouterr().out.split()
    assert printed[:2] == ["test", "accuracy"]
    assert float(printed[2]) == pytest.approx(namespace["accuracy"], abs=5e-4) and namespace["accuracy"] > 0.9


def test_the_docs_pages_approximate_gp_runs_as_written():
    """docs/gpytorch.md's ApproximateGP with inducing patches: built as written, it gives q(f) on 28×28 images and a
    finite ELBO with GPyTorch's VariationalELBO."""
    import re

    import gpytorch
    import torch

    from invlab.gpytorch import InducingPatches
    from tests.helpers.readme import ROOT

    page = (ROOT / "docs" / "gpytorch.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], "docs/gpytorch.md", "exec"), namespace)
    model = namespace["ConvGP"](InducingPatches(torch.rand(5, 9, dtype=torch.float64))).double()
    X, y = torch.rand(7, 784, dtype=torch.float64), torch.randint(0, 2, (7,)).double()
    out = model(X)
    assert out.mean.shape == (7,) and bool((out.variance > 0).all())
    mll = gpytorch.mlls.VariationalELBO(gpytorch.likelihoods.BernoulliLikelihood(), model, num_data=7)
    assert torch.isfinite(mll(out, y))
