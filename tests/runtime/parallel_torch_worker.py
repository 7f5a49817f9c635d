"""One rank of the PyTorch parallel-engine tests (run by tests/runtime/ranks.py, not by pytest).

Every case trains the same small model twice under one engine, eagerly and with CUDAGraphedLayer
placed as the case says, and records this rank's parameters (its shard, under a sharding engine)
after every step. ``AUTOGRAPH_CG_TEST_DEVICE=cuda`` runs on rank % device_count with real graphs;
the process group's backend is ``AUTOGRAPH_CG_TEST_PG`` (gloo by default);
``AUTOGRAPH_CG_TEST_ENGINES`` (comma-separated) keeps only those engines' cases.
"""

from __future__ import annotations

import os
import pickle
import sys
from contextlib import nullcontext
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from autograph_cg.runtime import CUDAGraphedLayer, layer_stats

D, BATCH, STEPS = 8, 4, 6

# engine: "ddp" (default), "fsdp" (FSDP1, needs CUDA), "fully_shard" (FSDP2), "tp" (tensor parallel),
# "gpipe" / "1f1b" (pipelining: a stage of two blocks per rank). place: where the wrapper goes
# ("blocks": each block, "whole": the whole model the engine is given, "outside": around the engine's
# module). ddp: DDP's options; accumulate: micro-batches per step, all but the last under
# no_sync(); set_to_none: how the optimizer clears grads; spare: each block holds a Linear its forward
# never uses. eager: the wrapped layers run eagerly, with this in their reason.
CASES: dict[str, dict[str, Any]] = {
    "DDP, blocks": {"place": "blocks"},
    "DDP, blocks, find_unused_parameters": {"place": "blocks", "ddp": {"find_unused_parameters": True}, "spare": True},
    "DDP, blocks, an output the loss does not use": {
        "place": "blocks", "ddp": {"find_unused_parameters": True}, "spare": "output"
    },
    "DDP, blocks, static_graph": {"place": "blocks", "ddp": {"static_graph": True}},
    "DDP, blocks, no_sync accumulation": {"place": "blocks", "accumulate": 2},
    "DDP, blocks, zero_grad(set_to_none=False)": {"place": "blocks", "set_to_none": False},
    "DDP, blocks, gradient_as_bucket_view": {"place": "blocks", "ddp": {"gradient_as_bucket_view": True}, "accumulate": 2},
    "DDP, whole": {"place": "whole"},
    "DDP, whole, static_graph, set_to_none=False": {"place": "whole", "ddp": {"static_graph": True}, "set_to_none": False},
    "DDP, whole, find_unused_parameters": {"place": "whole", "ddp": {"find_unused_parameters": True}, "spare": True},
    "DDP, outside": {"place": "outside", "eager": "DistributedDataParallel"},
    "FSDP1, blocks": {"engine": "fsdp", "place": "blocks", "eager": "FSDP"},
    "FSDP2, blocks": {"engine": "fully_shard", "place": "blocks", "eager": "FSDP"},
    "FSDP2, on the wrapper": {"engine": "fully_shard", "place": "whole", "eager": "FSDP"},
    "tensor parallel, blocks": {"engine": "tp", "place": "blocks", "eager": "DTensor"},
    "pipeline GPipe, blocks": {"engine": "gpipe", "place": "blocks"},
    "pipeline 1F1B, whole stage": {"engine": "1f1b", "place": "whole"},
}


def cases(device: str, engines: str | None = None) -> list[str]:
    """The cases that run on this device (FSDP1 needs CUDA), of the given engines if any."""
    keep = set(engines.split(",")) if engines else None
    return [
        name for name, case in CASES.items()
        if (device == "cuda" or case.get("engine") != "fsdp") and (keep is None or case.get("engine", "ddp") in keep)
    ]


class Block(nn.Module):
    def __init__(self, d: int, spare: bool | str) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.spare = nn.Linear(d, d) if spare else None
        self.aside = spare == "output"

    def forward(self, x: torch.Tensor) -> Any:
        h = self.fc2(nn.functional.gelu(self.fc1(x)))
        return (h, self.spare(x)) if self.aside else h


class Stack(nn.Sequential):
    """Blocks in a row; a block's second output (an aside the loss never uses) is dropped."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self:
            x = block(x)
            x = x[0] if isinstance(x, tuple) else x
        return x


def _engine(engine: str, model: nn.Module, case: dict, device: torch.device) -> nn.Module:
    """The module the training loop calls: ``model`` under ``engine``."""
    if engine == "ddp":
        return DDP(model, device_ids=[device.index] if device.type == "cuda" else None, **case.get("ddp", {}))
    if engine == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel

        return FullyShardedDataParallel(model, device_id=device)
    if engine == "fully_shard":
        from torch.distributed.fsdp import fully_shard

        return fully_shard(model)
    if engine == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        for block in model:  # the blocks, wrapped or not: wrapping leaves the model's structure as it was
            parallelize_module(block, mesh, {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
        return model
    raise ValueError(engine)


def _pipeline(engine: str, model: nn.Module, rank: int, device: torch.device) -> Callable[[Any, Any], None]:
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    world = dist.get_world_size()
    stage = PipelineStage(model, rank, world, device)
    schedule = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[engine]
    run = schedule(stage, n_microbatches=4, loss_fn=lambda y, t: (y - t).pow(2).mean())

    def step(x: Any, target: Any) -> None:
        if rank == 0:
            run.step(x)
        elif rank == world - 1:
            run.step(target=target)
        else:
            run.step()

    return step


def train(name: str, case: dict, wrapped: bool, rank: int, device: torch.device) -> tuple[list, list]:
    graphs = "cuda" if device.type == "cuda" else "standin"
    engine = case.get("engine", "ddp")
    pipelined = engine in ("gpipe", "1f1b")

    def wrap(layer: nn.Module, i: int = 0) -> nn.Module:
        return CUDAGraphedLayer(layer, num_warmup_steps=1, backend=graphs, name=f"{name}/{i}")

    torch.manual_seed(0)
    blocks = [Block(D, case.get("spare", False)) for _ in range(4 if pipelined else 3)]
    if pipelined:
        blocks = blocks[2 * rank : 2 * rank + 2]
    model: nn.Module = Stack(*blocks).to(device)
    place = case["place"] if wrapped else None
    if place == "blocks":
        model = Stack(*[wrap(b, i) for i, b in enumerate(model)])
    elif place == "whole":
        model = wrap(model)
    if pipelined:
        step = _pipeline(engine, model, rank, device)
        top = model
    else:
        top = _engine(engine, model, case, device)
        if place == "outside":
            top = wrap(top)

        def step(x: Any, target: Any) -> None:
            top(x).pow(2).mean().backward()

    opt = torch.optim.SGD(top.parameters(), lr=0.1)
    # Data parallelism: each rank its own data; the other engines share it.
    gen = torch.Generator().manual_seed(1000 + rank if engine == "ddp" else 1000)
    accumulate = case.get("accumulate", 1)
    snapshots, presence = [], []
    for _ in range(STEPS):
        for micro in range(accumulate):
            x, target = (torch.randn(BATCH, D, generator=gen).to(device) for _ in range(2))
            with nullcontext() if micro == accumulate - 1 else top.no_sync():
                step(x, target)
        presence.append(tuple(p.grad is None for p in top.parameters()))
        opt.step()
        opt.zero_grad(set_to_none=case.get("set_to_none", True))
        local = [p.to_local() if hasattr(p, "to_local") else p for p in top.parameters()]  # a DTensor's shard
        snapshots.append(torch.cat([p.detach().flatten() for p in local]).cpu().numpy())
    stats = [s for s in layer_stats() if s["name"].startswith(f"{name}/")]
    return snapshots, stats, presence


def main(rank: int, world: int, port: str, out: str) -> None:
    device = torch.device("cpu")
    if os.environ.get("AUTOGRAPH_CG_TEST_DEVICE") == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    backend = os.environ.get("AUTOGRAPH_CG_TEST_PG", "gloo")
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    results = {}
    try:
        for name in cases(device.type, os.environ.get("AUTOGRAPH_CG_TEST_ENGINES")):
            print(f"rank {rank}: {name}", flush=True)
            eager, _, eager_presence = train(name, CASES[name], False, rank, device)
            graphed, stats, presence = train(name, CASES[name], True, rank, device)
            results[name] = {"eager": eager, "wrapped": graphed, "stats": stats, "presence": (presence, eager_presence)}
    finally:
        dist.destroy_process_group()
    with open(out, "wb") as fh:
        pickle.dump(results, fh)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")[0], sys.argv[4])
