"""Wrapped layers under PyTorch's parallel engines train exactly as the engine does eagerly.

DDP with the wrapper inside (blocks or the whole model): graphed, equal to eager DDP on every rank,
step by step. Pipelining (GPipe, 1F1B): graphed, equal per stage. FSDP, tensor parallel, and DDP
inside the wrapper: the wrapped layers run eagerly with the reason, with eager's numbers. Two ranks
over gloo on the CPU stand-in, one launch for the module; the GPU variants run the same worker with
real graphs.
"""

from __future__ import annotations

import pytest

from tests.runtime.ranks import assert_wrapped_matches_eager, run_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from tests.runtime.parallel_torch_worker import CASES, cases  # noqa: E402  (needs torch.distributed)

WORKER = "tests.runtime.parallel_torch_worker"
# The GPU runs keep NVLink multicast off.
GPU_ENV = {"AUTOGRAPH_CG_TEST_DEVICE": "cuda", "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    return run_ranks(WORKER, 2, tmp_path_factory.mktemp("cpu"))


@pytest.mark.parametrize("name", cases("cpu"))
def test_two_gloo_ranks_on_cpu(cpu_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(cpu_results, name, CASES[name], atol=1e-6)


@pytest.fixture(scope="module")
def nccl_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA devices")
    return run_ranks(WORKER, 2, tmp_path_factory.mktemp("nccl"), {**GPU_ENV, "AUTOGRAPH_CG_TEST_PG": "nccl"})


@pytest.mark.gpu
@pytest.mark.parametrize("name", cases("cuda"))
def test_two_nccl_ranks_on_two_gpus(nccl_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(nccl_results, name, CASES[name], atol=1e-5)


@pytest.fixture(scope="module")
def shared_gpu_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    env = {**GPU_ENV, "AUTOGRAPH_CG_TEST_PG": "gloo", "AUTOGRAPH_CG_TEST_ENGINES": "ddp"}
    return run_ranks(WORKER, 2, tmp_path_factory.mktemp("gloo-gpu"), env)


@pytest.mark.gpu
@pytest.mark.parametrize("name", cases("cuda", "ddp"))
def test_two_gloo_ranks_sharing_one_gpu(shared_gpu_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(shared_gpu_results, name, CASES[name], atol=1e-5)


@pytest.fixture(scope="module")
def one_rank_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    env = {**GPU_ENV, "AUTOGRAPH_CG_TEST_PG": "nccl", "AUTOGRAPH_CG_TEST_ENGINES": "ddp,fsdp,fully_shard"}
    return run_ranks(WORKER, 1, tmp_path_factory.mktemp("nccl-1"), env)


@pytest.mark.gpu
@pytest.mark.parametrize("name", cases("cuda", "ddp,fsdp,fully_shard"))
def test_one_nccl_rank(one_rank_results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(one_rank_results, name, CASES[name], atol=1e-5)
