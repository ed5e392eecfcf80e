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

