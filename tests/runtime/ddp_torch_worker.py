"""One rank of the DistributedDataParallel tests (run by tests/runtime/ranks.py, not by pytest).

Every case trains the same 3-block model twice under DDP, eagerly and with CUDAGraphedLayer placed
as the case says, each rank on its own data, and records the parameters after every step.
``AUTOGRAPH_CG_TEST_DEVICE=cuda`` runs on rank % device_count with real graphs; the process group's
backend is ``AUTOGRAPH_CG_TEST_PG`` (gloo by default).
"""

from __future__ import annotations

import os
import pickle
import sys
from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from autograph_cg.runtime import CUDAGraphedLayer, layer_stats

D, BATCH, STEPS = 8, 4, 6

# place: where the wrapper goes ("blocks": each block inside DDP's module, "whole": DDP's whole
# module, "outside": around DDP itself); ddp: DDP's options; accumulate: micro-batches per step, all
# but the last under no_sync(); set_to_none: how the optimizer clears grads; spare: each block holds
# a Linear its forward never uses.
CASES: dict[str, dict[str, Any]] = {
    "blocks": {"place": "blocks"},
    "blocks, find_unused_parameters": {"place": "blocks", "ddp": {"find_unused_parameters": True}, "spare": True},
    "blocks, static_graph": {"place": "blocks", "ddp": {"static_graph": True}},
    "blocks, no_sync accumulation": {"place": "blocks", "accumulate": 2},
    "blocks, zero_grad(set_to_none=False)": {"place": "blocks", "set_to_none": False},
    "blocks, gradient_as_bucket_view": {"place": "blocks", "ddp": {"gradient_as_bucket_view": True}, "accumulate": 2},
    "whole": {"place": "whole"},
    "whole, static_graph, set_to_none=False": {"place": "whole", "ddp": {"static_graph": True}, "set_to_none": False},
    "whole, find_unused_parameters": {"place": "whole", "ddp": {"find_unused_parameters": True}, "spare": True},
    "outside": {"place": "outside"},
}


class Block(nn.Module):
    def __init__(self, d: int, spare: bool) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.spare = nn.Linear(d, d) if spare else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x)))


def train(name: str, case: dict, wrapped: bool, rank: int, device: torch.device) -> tuple[list, list]:
    graphs = "cuda" if device.type == "cuda" else "standin"

    def wrap(layer: nn.Module, i: int = 0) -> nn.Module:
        return CUDAGraphedLayer(layer, num_warmup_steps=1, backend=graphs, name=f"{name}/{i}")

    torch.manual_seed(0)
    model = nn.Sequential(*[Block(D, case.get("spare", False)) for _ in range(3)]).to(device)
    place = case["place"] if wrapped else None
    if place == "blocks":
        model = nn.Sequential(*[wrap(b, i) for i, b in enumerate(model)])
    elif place == "whole":
        model = wrap(model)
    ids = [device.index] if device.type == "cuda" else None
    ddp: nn.Module = DDP(model, device_ids=ids, **case.get("ddp", {}))
    if place == "outside":
        ddp = wrap(ddp)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
    accumulate = case.get("accumulate", 1)
    snapshots = []
    for _ in range(STEPS):
        for micro in range(accumulate):
            x = torch.randn(BATCH, D, generator=gen).to(device)
            with nullcontext() if micro == accumulate - 1 else ddp.no_sync():
                ddp(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=case.get("set_to_none", True))
        snapshots.append(torch.cat([p.detach().flatten() for p in model.parameters()]).cpu().numpy())
    stats = [s for s in layer_stats() if s["name"].startswith(f"{name}/")]
    return snapshots, stats


def main(rank: int, world: int, port: str, out: str) -> None:
    device = torch.device("cpu")
    if os.environ.get("AUTOGRAPH_CG_TEST_DEVICE") == "cuda":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    backend = os.environ.get("AUTOGRAPH_CG_TEST_PG", "gloo")
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    results = {}
    try:
        for name, case in CASES.items():
            print(f"rank {rank}: {name}", flush=True)
            eager, _ = train(name, case, False, rank, device)
            graphed, stats = train(name, case, True, rank, device)
            results[name] = {"eager": eager, "wrapped": graphed, "stats": stats}
    finally:
        dist.destroy_process_group()
    with open(out, "wb") as fh:
        pickle.dump(results, fh)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")[0], sys.argv[4])
