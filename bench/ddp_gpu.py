"""Benchmark of wrapped layers under DistributedDataParallel over NCCL (a benchmark, not a test).

One process per visible GPU (or ``--gpus``), started with ``torch.multiprocessing.spawn``. For every
model of ``bench/runtime_gpu.py`` (``build_models``: mlp24, tfm8, and any model added there, such as
a decoder-block stack) each rank times a training step (``zero_grad(set_to_none=True)``, forward,
mean-square loss, backward) on its own data and records the allocator's peak above what was allocated
before the model, for eager, ``CUDAGraphedLayer`` per block and on the whole model:

- alone, before the process group exists: the single-GPU step;
- in the process group without DDP: what telling a reducer about replayed backwards costs alone
  (the parameters' accumulation nodes run after each backward replay);
- under DDP (the wrapper inside DDP's module).

Rank 0 prints one table per model, a column per rank. With one GPU it is a one-rank NCCL group: DDP's
bucketing and a one-rank all-reduce, without the wire.

    python bench/ddp_gpu.py [--gpus N] [--iters 30] [--json results.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any, Callable

from runtime_gpu import Bench, build_models
from torch_needed import torch_or_none

VARIANTS = ("eager", "CUDAGraphedLayer per block", "CUDAGraphedLayer whole model")
SETTINGS = ("alone", "process group, no DDP", "DDP")


def build(torch: Any, make: Callable[[], Any], variant: str, ddp: bool, rank: int) -> Any:
    from autograph_cg.runtime import CUDAGraphedLayer

    torch.manual_seed(0)
    model = make().cuda()
    if variant == "CUDAGraphedLayer per block":
        model = torch.nn.Sequential(*[CUDAGraphedLayer(block) for block in model])
    elif variant == "CUDAGraphedLayer whole model":
        model = CUDAGraphedLayer(model)
    if ddp:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    return model


def measure(torch: Any, bench: Bench, rank: int, setting: str) -> dict[str, Any]:
    """This rank's step time and peak memory of every model and variant in one setting."""
    from autograph_cg.runtime import layer_stats

    clear_blas = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)
    out: dict[str, Any] = {}
    for model_name, make, shape in build_models(torch).values():
        for variant in VARIANTS:
            gc.collect()
            clear_blas()
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            seen = {s["name"] for s in layer_stats()}
            model = build(torch, make, variant, setting == "DDP", rank)
            torch.manual_seed(1000 + rank)  # each rank its own data
            x = torch.randn(*shape, device="cuda")

            def step() -> None:
                model.zero_grad(set_to_none=True)
                model(x).float().pow(2).mean().backward()

            ms, peak_mb, _, _ = bench.time_ms(step, base)
            new = [s for s in layer_stats() if s["name"] not in seen]
            out[f"{model_name}|{variant}|{setting}"] = {
                "ms": ms,
                "peak_mb": peak_mb,
                "eager_calls": sum(s["eager_calls"] for s in new),
                "eager_backwards": sum(s["eager_backwards"] for s in new),
            }
            del model, step, new
    return out


def run_rank(rank: int, world: int, port: int, iters: int, sink: str) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    bench = Bench(torch, iters)
    results = measure(torch, bench, rank, "alone")
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        for setting in SETTINGS[1:]:
            results.update(measure(torch, bench, rank, setting))
        gathered: list = [None] * world
        dist.all_gather_object(gathered, results)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        with open(sink, "w") as fh:
            json.dump(gathered, fh)


def table(per_rank: list[dict[str, Any]]) -> str:
    world = len(per_rank)
    models = list(dict.fromkeys(k.split("|")[0] for k in per_rank[0]))
    head = " | ".join(f"rank {r} ms | rank {r} peak MB" for r in range(world))
    lines = []
    for model in models:
        lines += [f"\n### {model}\n", f"| setting | variant | {head} | vs alone (rank 0) |"]
        lines.append("| --- | --- | " + " | ".join("---: | ---:" for _ in range(world)) + " | ---: |")
        for setting in SETTINGS:
            for variant in VARIANTS:
                key = f"{model}|{variant}|{setting}"
                cells = " | ".join(f"{r[key]['ms']:.2f} | {r[key]['peak_mb']:.1f}" for r in per_rank)
                ratio = per_rank[0][key]["ms"] / per_rank[0][f"{model}|{variant}|alone"]["ms"]
                lines.append(f"| {setting} | {variant} | {cells} | {ratio:.2f} |")
        fallbacks = {
            f"{k.split('|', 1)[1]}: {r[k]['eager_calls']} eager calls, {r[k]['eager_backwards']} eager backwards"
            for r in per_rank for k in r
            if k.startswith(f"{model}|") and (r[k]["eager_calls"] or r[k]["eager_backwards"])
        }
        lines += [f"- {line}" for line in sorted(fallbacks)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=0, help="ranks, one per GPU (default: every visible GPU)")
    parser.add_argument("--iters", type=int, default=30, help="timed iterations per repeat (3 repeats)")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    if args.iters < 1:
        print("ddp_gpu: --iters must be at least 1", file=sys.stderr)
        return 2
    torch = torch_or_none("ddp_gpu")
    if torch is None:
        return 2
    import torch.multiprocessing as mp
    visible = torch.cuda.device_count()
    world = args.gpus or visible
    if not visible or not torch.distributed.is_nccl_available():
        print("ddp_gpu: needs a CUDA device and NCCL", file=sys.stderr)
        return 2
    if not 1 <= world <= visible:
        print(f"ddp_gpu: --gpus must be between 1 and {visible}", file=sys.stderr)
        return 2
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    import socket
    import tempfile

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        sink = os.path.join(tmp, "ranks.json")
        mp.spawn(run_rank, args=(world, port, args.iters, sink), nprocs=world, join=True)
        with open(sink) as fh:
            per_rank = json.load(fh)
    print(f"torch {torch.__version__}, {world} x {torch.cuda.get_device_name()}, NCCL, "
          f"{args.iters} iterations x 3 repeats (median)")
    print(table(per_rank))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"torch": torch.__version__, "world": world, "iters": args.iters, "ranks": per_rank}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
