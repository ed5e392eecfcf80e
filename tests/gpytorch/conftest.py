"""Fixtures of the `invlab.gpytorch` tests."""
import pytest
import torch


@pytest.fixture
def float64():
    """float64 as torch's default dtype during the test (GPyTorch builds its constraints' bounds in the default
    dtype, so comparisons to 1e-8 need it), restored afterwards."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)
