"""The runtime's host work per call, on the CPU (a benchmark, not a test).

24 small pre-LN MLP blocks (d=8, batch 4) train with ``zero_grad(set_to_none=True)``, forward,
mean-square loss and backward, wrapped per block or as a whole in ``CUDAGraphedLayer`` with the
CPU stand-in. After capture (and, per block, once the blocks run as one fused run) every graph's
replay is replaced by one that does nothing, so what is timed is the work around the replays:
keys, checks, copies, clones, the autograd boundary, the gradient bank, and PyTorch's own module
and autograd overhead. ``--no-fuse`` wraps the blocks with ``fuse=False``: each replays on its own. The floor is the same model with each
block behind the least such a boundary does: an autograd function that copies in and clones out,
each way. ``--profile`` adds the 25 functions with the most own time per layer and step.

    python bench/runtime_host.py [--steps 2000] [--profile] [--no-fuse]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from typing import Any, Callable

from torch_needed import torch_or_none

BLOCKS, D, BATCH = 24, 8, 4


def _Boundary(torch: Any, block: Any) -> Any:
    """A block behind the least an autograd boundary with static buffers does per call."""

    class Copy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, owner: Any, x: Any) -> Any:
            owner.static_in.copy_(x)
            ctx.owner = owner
            return owner.static_out.clone()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            ctx.owner.static_in.copy_(grad)
            return None, ctx.owner.static_out.clone()

    class Boundary(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = block
            self.static_in, self.static_out = torch.zeros(BATCH, D), torch.zeros(BATCH, D)

        def forward(self, x: Any) -> Any:
            return Copy.apply(self, x)

    return Boundary()


def build(torch: Any, whole: bool | None, fuse: bool = True) -> tuple[Any, list, Callable[[], None]]:
    from autograph_cg.runtime import CUDAGraphedLayer

    nn = torch.nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln, self.fc1, self.fc2 = nn.LayerNorm(D), nn.Linear(D, D), nn.Linear(D, D)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln(x))))

    torch.manual_seed(0)
    if whole is None:  # the floor: an autograd boundary that copies in and clones out, each way
        wrapped = []
        model = nn.Sequential(*[_Boundary(torch, Block()) for _ in range(BLOCKS)])
    elif whole:
        model = CUDAGraphedLayer(nn.Sequential(*[Block() for _ in range(BLOCKS)]), backend="standin")
        wrapped = [model]
    else:
        wrapped = [CUDAGraphedLayer(Block(), backend="standin", fuse=fuse) for _ in range(BLOCKS)]
        model = nn.Sequential(*wrapped)
    x = torch.randn(BATCH, D, requires_grad=whole is None)  # the floor's boundary has no parameter

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()

    return model, wrapped, step


def silence_replays(wrapped: list) -> int:
    """Make every captured graph's replay a no-op (the layers' own and their fused runs'); returns
    how many graphs there are."""
    count = 0
    from autograph_cg.runtime.graphed import state_of

    runners = [state_of(layer).runner for layer in wrapped]
    runners += [chain.runner for runner in runners for chain in runner.chains.values()]
    for runner in runners:
        for entry in runner.entries.values():
            for slot in entry.slots:
                for graph in (slot.fwd, slot.bwd):
                    if graph is not None:
                        graph.replay = lambda: None
                        count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="timed training steps per variant")
    parser.add_argument("--profile", action="store_true", help="also list where the time goes")
    parser.add_argument("--no-fuse", action="store_true", help="per block: each block replays on its own")
    args = parser.parse_args(argv)
    if args.steps < 1:
        print("runtime_host: --steps must be at least 1", file=sys.stderr)
        return 2
    torch = torch_or_none("runtime_host")
    if torch is None:
        return 2
    for whole in (False, True, None):
        _, wrapped, step = build(torch, whole, fuse=not args.no_fuse)
        for _ in range(10):  # warmup, capture, a few replays and the fused run's capture
            step()
        graphs = silence_replays(wrapped)
        for _ in range(50):
            step()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        us = (time.perf_counter() - start) / args.steps * 1e6
        layers = 1 if whole else BLOCKS
        name = {False: "per block", True: "whole model", None: "floor, per block"}[whole]
        print(f"{name}: {us:.1f} us per step, {us / layers:.1f} us per wrapped layer and step ({graphs} graphs)")
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(300):
                step()
            profile.disable()
            rows = sorted(
                ((tt, nc, f"{fn.rsplit('/', 1)[-1]}:{line}({fname})")
                 for (fn, line, fname), (_, nc, tt, _, _) in pstats.Stats(profile).stats.items()),  # type: ignore[attr-defined]
                reverse=True,
            )
            for tt, nc, where in rows[:25]:
                print(f"  {tt / 300 / layers * 1e6:7.2f} us per layer and step  {nc // 300:5d} calls per step  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
