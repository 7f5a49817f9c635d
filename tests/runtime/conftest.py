"""Fixtures: ``fw`` runs a test on PyTorch CPU and Paddle CPU (stand-in graphs) and on PyTorch CUDA (real graphs)."""

from __future__ import annotations

import importlib.util

import pytest

from tests.runtime.harness import PaddleHarness, TorchHarness


def _harness(name: str):
    if name == "torch-cuda":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("no CUDA device")
        return TorchHarness("cuda")
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed")
    return TorchHarness() if name == "torch" else PaddleHarness()


@pytest.fixture(params=["torch", "paddle", pytest.param("torch-cuda", marks=pytest.mark.gpu)])
def fw(request: pytest.FixtureRequest):
    """A framework harness; each test runs once per framework and device."""
    harness = _harness(request.param)
    harness.seed(0)
    return harness


@pytest.fixture(params=["torch", "paddle"])
def cpu_fw(request: pytest.FixtureRequest):
    """Stand-in only: for behaviour that is exact on CPU and statistical on a GPU."""
    harness = _harness(request.param)
    harness.seed(0)
    return harness


@pytest.fixture(params=["torch", pytest.param("torch-cuda", marks=pytest.mark.gpu)])
def torch_fw(request: pytest.FixtureRequest):
    """PyTorch only: for behaviour Paddle itself lacks (a second backward through a PyLayer crashes
    Paddle 3.3.1) or that the runtime can only check with PyTorch (storage use counts)."""
    harness = _harness(request.param)
    harness.seed(0)
    return harness
