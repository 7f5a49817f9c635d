"""Engines a graph can't run under are found by what they leave in the layer, and the layer then
runs eagerly with the engine in its reason: the cases that need no process group (the two-rank
tests run the engines themselves)."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from autograph_cg.runtime import stats_of
from tests.runtime.harness import close, randn

D, B = 8, 4


def train_eagerly_checked(fw, model, ref, steps: int = 3) -> dict:
    for _ in range(steps):
        x = randn(B, D)
        y = model(fw.tensor(x, True))
        assert close(fw.numpy(y), fw.numpy(ref(fw.tensor(x, True))), fw.atol)
        fw.backward(fw.loss(y))
    return stats_of(model)


def test_torch_data_parallel_inside_the_wrapper_keeps_it_eager():
    torch = pytest.importorskip("torch")
    from tests.runtime.harness import TorchHarness

    fw = TorchHarness()
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(torch.nn.DataParallel(fw.twin(ref)), num_warmup_steps=1)
    stats = train_eagerly_checked(fw, wrapped, ref)
    assert stats["state"] == "eager" and "is a DataParallel" in stats["disabled_reason"]


def test_torch_data_parallel_replica_runs_its_own_copy_eagerly():
    """What torch.nn.DataParallel does with a wrapped layer on each GPU: a copy of the module, run in
    a thread, whose runner (and graphs) are the original's."""
    pytest.importorskip("torch")
    from tests.runtime.harness import TorchHarness

    fw = TorchHarness()
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    replica = wrapped._replicate_for_data_parallel()
    stats = train_eagerly_checked(fw, replica, ref)
    assert stats["captures"] == 0 and stats["eager_calls"] == 3
    assert any("DataParallel replica" in reason for reason in stats["fallbacks"])


FLEET = "paddle.distributed.fleet"
PADDLE_ENGINES = [
    f"{FLEET}.meta_parallel.TensorParallel",
    f"{FLEET}.meta_parallel.PipelineParallel",
    f"{FLEET}.meta_parallel.PipelineLayer",
    f"{FLEET}.meta_parallel.ColumnParallelLinear",
    f"{FLEET}.meta_parallel.RowParallelLinear",
    f"{FLEET}.meta_parallel.sharding.group_sharded_stage2.GroupShardedStage2",
    f"{FLEET}.meta_parallel.sharding.group_sharded_stage3.GroupShardedStage3",
]


@pytest.mark.parametrize("path", PADDLE_ENGINES, ids=lambda p: p.rsplit(".", 1)[1])
def test_paddle_fleet_engine_in_the_layer_keeps_it_eager(path: str):
    if importlib.util.find_spec("paddle") is None:
        pytest.skip("paddle is not installed")
    import paddle

    from tests.runtime.harness import PaddleHarness

    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    engine = cls.__new__(cls)  # its own constructor needs fleet's process groups; only its type counts
    paddle.nn.Layer.__init__(engine)

    fw = PaddleHarness()
    fw.seed(0)
    ref = fw.build("MLP", D)

    class Holder(paddle.nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.mlp, self.engine = fw.twin(ref), engine

        def forward(self, x):
            return self.mlp(x)

    stats = train_eagerly_checked(fw, fw.wrap(Holder(), num_warmup_steps=1), ref)
    assert stats["state"] == "eager" and name in stats["disabled_reason"], stats["disabled_reason"]
