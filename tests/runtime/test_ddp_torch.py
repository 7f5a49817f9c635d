"""Wrapped layers under DistributedDataParallel train exactly as eager DDP, on every rank, step by step.

Two ranks over gloo on the CPU stand-in (one launch for the module); the GPU variants run the same
worker with real graphs: two ranks over NCCL on two GPUs, and two gloo ranks sharing one GPU.
"""

from __future__ import annotations

import pytest

from tests.runtime.ranks import assert_wrapped_matches_eager, run_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from tests.runtime.ddp_torch_worker import CASES  # noqa: E402  (needs torch.distributed)

WORLD = 2


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    return run_ranks("tests.runtime.ddp_torch_worker", WORLD, tmp_path_factory.mktemp("ddp"))


@pytest.mark.parametrize("name", list(CASES))
def test_wrapped_ddp_matches_eager_ddp_on_every_rank(cpu_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(cpu_results, name, CASES[name]["place"], atol=1e-6)


def _gpu_results(tmp_path_factory: pytest.TempPathFactory, backend: str) -> list[dict]:
    env = {
        "AUTOGRAPH_CG_TEST_DEVICE": "cuda",
        "AUTOGRAPH_CG_TEST_PG": backend,
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    }
    return run_ranks("tests.runtime.ddp_torch_worker", WORLD, tmp_path_factory.mktemp(f"ddp-{backend}"), env)


@pytest.fixture(scope="module")
def nccl_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    if torch.cuda.device_count() < WORLD:
        pytest.skip(f"needs {WORLD} CUDA devices")
    return _gpu_results(tmp_path_factory, "nccl")


@pytest.fixture(scope="module")
def shared_gpu_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return _gpu_results(tmp_path_factory, "gloo")


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_wrapped_ddp_matches_eager_ddp_over_nccl(nccl_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(nccl_results, name, CASES[name]["place"], atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_wrapped_ddp_matches_eager_ddp_two_ranks_on_one_gpu(shared_gpu_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(shared_gpu_results, name, CASES[name]["place"], atol=1e-5)
