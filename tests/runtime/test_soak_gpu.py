"""Soak: 10,000 training replays of one wrapped layer on a GPU keep allocated memory flat and eager's numbers.

Run on the device machine with `-s` to see the memory curve: `python -m pytest tests/runtime/test_soak_gpu.py -m gpu -s`.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]

REPLAYS = 10_000
MARKS = (1, 10, 100, 1_000, 2_500, 5_000, 7_500, 10_000)
GROWTH_BOUND = 64 * 1024  # bytes: a leak of one small tensor per replay would pass it within a few dozen steps
# The reference point: by then the eager twin has re-created the cuBLAS workspaces that the capture
# dropped (once; see CudaGraph.capture), so what follows is the runtime's own curve.
REFERENCE = 10


def test_ten_thousand_training_replays_keep_memory_flat() -> None:
    from autograph_cg.runtime import CUDAGraphedLayer, stats_of

    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)).cuda()
    wrapped = CUDAGraphedLayer(copy.deepcopy(eager), num_warmup_steps=2, backend="cuda")
    x, target = torch.randn(32, 64, device="cuda"), torch.randn(32, 64, device="cuda")
    pairs = [(model, torch.optim.SGD(model.parameters(), lr=1e-3)) for model in (eager, wrapped)]

    def step(model: object, opt: torch.optim.Optimizer) -> None:
        opt.zero_grad(set_to_none=True)
        F.mse_loss(model(x), target).backward()
        opt.step()

    curve: dict[int, int] = {}
    while stats_of(wrapped)["forward_replays"] < REPLAYS:
        for model, opt in pairs:
            step(model, opt)
        replays = stats_of(wrapped)["forward_replays"]
        if replays in MARKS:
            curve[replays] = torch.cuda.memory_allocated()
    torch.cuda.synchronize()
    print(f"\nsoak: memory_allocated at replay {REFERENCE} = {curve[REFERENCE]} B, at replay {REPLAYS} = {curve[REPLAYS]} B; curve {curve}")

    stats = stats_of(wrapped)
    assert (stats["captures"], stats["recaptures"], stats["eager_calls"], stats["eager_backwards"]) == (1, 0, 0, 0)
    assert stats["forward_replays"] == stats["backward_replays"] == REPLAYS
    after = [v for mark, v in curve.items() if mark >= REFERENCE]
    assert max(after) - curve[REFERENCE] <= GROWTH_BOUND, curve
    assert curve[REPLAYS] - curve[REFERENCE] <= GROWTH_BOUND, curve
    for p, q in zip(eager.parameters(), wrapped.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-3, atol=1e-4)
