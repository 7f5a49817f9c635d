"""Wrapped layers under DistributedDataParallel train exactly as eager DDP, on every rank, step by step.

Two ranks over gloo on the CPU stand-in (one launch for the module); the GPU variants run the same
worker with real graphs: two ranks over NCCL on two GPUs, and two gloo ranks sharing one GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.runtime.ranks import run_ranks

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from tests.runtime.ddp_torch_worker import CASES  # noqa: E402  (needs torch.distributed)

WORLD = 2


def check(results: list[dict], name: str, atol: float) -> None:
    place = CASES[name]["place"]
    for rank, res in enumerate(results):
        r = res[name]
        for step, (got, want) in enumerate(zip(r["wrapped"], r["eager"])):
            assert np.allclose(got, want, atol=atol, rtol=0), (
                f"rank {rank}, step {step}: wrapped differs from eager DDP by {np.abs(got - want).max():.3g}"
            )
        stats = r["stats"]
        if place == "outside":
            (s,) = stats
            assert s["state"] == "eager" and "DistributedDataParallel" in s["disabled_reason"]
            assert s["forward_replays"] == 0
        else:
            assert stats and all(s["backward_replays"] > 0 and s["eager_backwards"] == 0 for s in stats), stats
    for step in range(len(results[0][name]["wrapped"])):
        ranks = [res[name]["wrapped"][step] for res in results]
        assert all(np.array_equal(ranks[0], other) for other in ranks[1:]), f"ranks disagree at step {step}"
    firsts = [res[name]["eager"][0] for res in results]  # the reference: eager DDP keeps ranks equal
    assert np.allclose(firsts[0], firsts[1], atol=atol, rtol=0)


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    return run_ranks("tests.runtime.ddp_torch_worker", WORLD, tmp_path_factory.mktemp("ddp"))


@pytest.mark.parametrize("name", list(CASES))
def test_wrapped_ddp_matches_eager_ddp_on_every_rank(cpu_results: list[dict], name: str) -> None:
    check(cpu_results, name, atol=1e-6)


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
    check(nccl_results, name, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CASES))
def test_wrapped_ddp_matches_eager_ddp_two_ranks_on_one_gpu(shared_gpu_results: list[dict], name: str) -> None:
    check(shared_gpu_results, name, atol=1e-5)
