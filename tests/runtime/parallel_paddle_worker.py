"""One rank of the Paddle data-parallel tests (run by tests/runtime/ranks.py, not by pytest).

The process group is fleet's (collective, data-parallel degree = world size, gloo on CPU), so a case
can use ``paddle.DataParallel`` on the global group or ``fleet.distributed_model`` on fleet's
data-parallel group. Every case trains the same 3-block model twice, eagerly and with
CUDAGraphedLayer placed as the case says, each rank on its own data, and records the parameters
after every step.
"""

from __future__ import annotations

import os
import pickle
import sys
from contextlib import nullcontext
from typing import Any

import numpy as np

D, BATCH, STEPS = 8, 4, 6

# place: "blocks" (each block inside DataParallel's layer), "whole" (its whole layer), "outside"
# (around DataParallel); engine: "DataParallel" or "fleet" (fleet.distributed_model); accumulate:
# micro-batches per step, all but the last under no_sync(); set_to_zero: how the optimizer clears
# grads; spare: each block holds a Linear its forward never uses; eager: the wrapped layers run
# eagerly, with this in their reason.
CASES: dict[str, dict[str, Any]] = {
    "blocks": {"place": "blocks"},
    "blocks, find_unused_parameters": {"place": "blocks", "dp": {"find_unused_parameters": True}, "spare": True},
    "blocks, no_sync accumulation": {"place": "blocks", "accumulate": 2},
    "blocks, clear_grad(set_to_zero=False)": {"place": "blocks", "set_to_zero": False},
    "whole, no_sync, clear_grad(set_to_zero=False)": {"place": "whole", "accumulate": 2, "set_to_zero": False},
    "fleet data-parallel group, blocks": {"place": "blocks", "engine": "fleet"},
    "fleet data-parallel group, whole": {"place": "whole", "engine": "fleet", "accumulate": 2},
    "outside": {"place": "outside", "eager": "DataParallel"},
}


def train(name: str, case: dict, wrapped: bool, rank: int) -> tuple[list, list]:
    import paddle
    from paddle import nn
    from paddle.distributed import fleet

    from autograph_cg.runtime import CUDAGraphedLayer, layer_stats

    class Block(nn.Layer):
        def __init__(self, d: int, spare: bool) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.spare = nn.Linear(d, d) if spare else None

        def forward(self, x: Any) -> Any:
            return self.fc2(nn.functional.gelu(self.fc1(x)))

    def wrap(layer: Any, i: int = 0) -> Any:
        return CUDAGraphedLayer(layer, num_warmup_steps=1, backend="standin", name=f"{name}/{i}")

    paddle.seed(0)
    model = nn.Sequential(*[Block(D, case.get("spare", False)) for _ in range(3)])
    place = case["place"] if wrapped else None
    if place == "blocks":
        model = nn.Sequential(*[wrap(b, i) for i, b in enumerate(model)])
    elif place == "whole":
        model = wrap(model)
    if case.get("engine") == "fleet":
        dp = fleet.distributed_model(model)
        assert isinstance(dp, paddle.DataParallel) and dp.group.nranks == 2, dp
    else:
        dp = paddle.DataParallel(model, **case.get("dp", {}))
    if place == "outside":
        dp = wrap(dp)
    opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=dp.parameters())
    rng = np.random.default_rng(1000 + rank)  # each rank its own data
    accumulate = case.get("accumulate", 1)
    snapshots = []
    for _ in range(STEPS):
        for micro in range(accumulate):
            x = paddle.to_tensor(rng.standard_normal((BATCH, D)).astype("float32"))
            with nullcontext() if micro == accumulate - 1 else dp.no_sync():
                dp(x).pow(2).mean().backward()
        opt.step()
        opt.clear_grad(set_to_zero=case.get("set_to_zero", True))
        snapshots.append(np.concatenate([p.numpy().ravel() for p in model.parameters()]))
    stats = [s for s in layer_stats() if s["name"].startswith(f"{name}/")]
    return snapshots, stats


def main(rank: int, world: int, ports: list[str], out: str) -> None:
    endpoints = [f"127.0.0.1:{port}" for port in ports]
    os.environ.update(
        PADDLE_DISTRI_BACKEND="gloo",
        PADDLE_TRAINER_ID=str(rank),
        PADDLE_TRAINERS_NUM=str(world),
        PADDLE_CURRENT_ENDPOINT=endpoints[rank],
        PADDLE_TRAINER_ENDPOINTS=",".join(endpoints),
    )
    from paddle.distributed import fleet

    strategy = fleet.DistributedStrategy()
    strategy.hybrid_configs = {"dp_degree": world, "mp_degree": 1, "pp_degree": 1}
    fleet.init(is_collective=True, strategy=strategy)
    results = {}
    for name, case in CASES.items():
        print(f"rank {rank}: {name}", flush=True)
        eager, _ = train(name, case, False, rank)
        graphed, stats = train(name, case, True, rank)
        results[name] = {"eager": eager, "wrapped": graphed, "stats": stats}
    with open(out, "wb") as fh:
        pickle.dump(results, fh)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4])
