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


# name: (ranks, process-group backend, engines (None: all), GPUs needed)
GPU_LAUNCHES = {
    "two NCCL ranks on two GPUs": (2, "nccl", None, 2),
    "two gloo ranks sharing one GPU": (2, "gloo", "ddp", 1),
    "one NCCL rank": (1, "nccl", "ddp,fsdp,fully_shard", 1),
}


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory):
    """Each GPU launch's results, launched once, at its first test."""
    done: dict[str, list[dict]] = {}

    def results(launch: str) -> list[dict]:
        world, backend, engines, gpus = GPU_LAUNCHES[launch]
        if torch.cuda.device_count() < gpus:
            pytest.skip(f"needs {gpus} CUDA device(s)")
        if launch not in done:
            env = {**GPU_ENV, "AUTOGRAPH_CG_TEST_PG": backend, "AUTOGRAPH_CG_TEST_ENGINES": engines or ""}
            done[launch] = run_ranks(WORKER, world, tmp_path_factory.mktemp("gpu"), env)
        return done[launch]

    return results


@pytest.mark.gpu
@pytest.mark.parametrize(
    "launch, name", [(launch, name) for launch, spec in GPU_LAUNCHES.items() for name in cases("cuda", spec[2])]
)
def test_on_gpus(launched, launch: str, name: str) -> None:
    assert_wrapped_matches_eager(launched(launch), name, CASES[name], atol=1e-5)
