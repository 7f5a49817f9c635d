"""Benchmark of the CUDA-graph runtime on one GPU (a benchmark, not a test).

For a stack of 24 pre-LN MLP blocks (d=256, batch 8) and 8 ``nn.TransformerEncoderLayer``s
(d=256, batch 4, seq 64) it prints, in one run, the time of a training step (zero_grad, forward,
loss, backward) and of an inference forward for: eager; ``torch.cuda.make_graphed_callables`` per
layer and on the whole model; ``CUDAGraphedLayer`` per block and on the whole model; one raw CUDA
graph of the whole step; and the GPU-busy time of the eager step from the profiler (sum of device
activity). Peak memory is the allocator's peak above what was allocated before the model existed,
with cuBLAS's cached workspaces dropped first so each variant counts the ones it allocates. The
per-block goal compares the two per-layer variants timed in alternation, both alive at once.

    python bench/runtime_gpu.py [--iters 30] [--json results.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any, Callable

GOALS = {
    "whole model, training: CUDAGraphedLayer / GPU busy": 1.3,
    "whole model, inference: CUDAGraphedLayer / GPU busy": 1.15,
    "per block, training: CUDAGraphedLayer / make_graphed_callables": 0.7,
    "peak memory, training: CUDAGraphedLayer (worst) / eager": 1.2,
    "peak memory once warm, training: CUDAGraphedLayer (worst) / eager": 1.2,
}


PER_BLOCK_PAIR = ("make_graphed_callables per layer", "CUDAGraphedLayer per block")


def _cell(value: Any, column: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return f"{value:.2f}" if column < 2 else f"{value:.1f}"


def build_models(torch: Any) -> dict[str, tuple[Callable[[], Any], tuple[int, ...]]]:
    nn = torch.nn

    class MLPBlock(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln(x))))

    return {
        "mlp24 (d=256, batch 8)": (lambda: nn.Sequential(*[MLPBlock(256) for _ in range(24)]), (8, 256)),
        "tfm8 (d=256, batch 4, seq 64)": (
            lambda: nn.Sequential(
                *[nn.TransformerEncoderLayer(256, 8, batch_first=True) for _ in range(8)]
            ),
            (4, 64, 256),
        ),
    }


class Bench:
    def __init__(self, torch: Any, iters: int) -> None:
        self.torch, self.iters = torch, iters

    def time_ms(self, fn: Callable[[], None], base: int) -> tuple[float, float, float]:
        """Median time per call; peak memory above ``base`` over everything (captures included)
        and once warm."""
        torch = self.torch
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        peak_all = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(self.iters):
                fn()
            torch.cuda.synchronize()
            runs.append((time.perf_counter() - start) / self.iters * 1e3)
        peak_warm = torch.cuda.max_memory_allocated()
        mb = 2**20
        return statistics.median(runs), (max(peak_all, peak_warm) - base) / mb, (peak_warm - base) / mb

    def interleaved_ms(self, fns: dict[str, Callable[[], None]], rounds: int = 7) -> dict[str, float]:
        """Median time per call of each step, timed in alternation (a, b, a, b, ...): a drift in
        host speed during the run (other tenants, clocks) then moves all of them alike."""
        torch = self.torch
        for fn in fns.values():
            for _ in range(10):
                fn()
        runs: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(rounds):
            for name, fn in fns.items():
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(self.iters):
                    fn()
                torch.cuda.synchronize()
                runs[name].append((time.perf_counter() - start) / self.iters * 1e3)
        return {name: statistics.median(r) for name, r in runs.items()}

    def busy_ms(self, fn: Callable[[], None]) -> float:
        """Device-busy time per call: the union of all GPU activity intervals in the profiler trace."""
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile

        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(self.iters):
                fn()
            torch.cuda.synchronize()
        spans = sorted(
            (e.start_ns(), e.start_ns() + e.duration_ns())
            for e in prof.profiler.kineto_results.events()
            if e.device_type() == torch.autograd.DeviceType.CUDA
        )
        busy_ns, end = 0, 0
        for start, stop in spans:
            if stop > end:
                busy_ns += stop - max(start, end)
                end = stop
        return busy_ns / self.iters / 1e6


def variants(torch: Any, make: Callable[[], Any], shape: tuple[int, ...]) -> dict[str, Callable[[bool], Any]]:
    """Each returns a zero-argument step for training (True) or inference (False), on a fresh model."""
    from autograph_cg.runtime import CUDAGraphedLayer

    def fresh(train: bool) -> Any:
        torch.manual_seed(0)
        model = make().cuda()
        return model.train(train)

    def x_for(train: bool, requires_grad: bool = False) -> Any:
        return torch.randn(*shape, device="cuda", requires_grad=requires_grad)

    def stepper(model: Any, train: bool) -> Callable[[], None]:
        x = x_for(train)
        if not train:
            def infer() -> None:
                with torch.no_grad():
                    model(x)
            return infer

        def step() -> None:
            model.zero_grad(set_to_none=True)
            model(x).float().pow(2).mean().backward()

        return step

    def eager(train: bool) -> Any:
        model = fresh(train)
        return model, stepper(model, train)

    def mgc_per_layer(train: bool) -> Any:
        model = fresh(train)
        samples = tuple((x_for(train, requires_grad=i > 0),) for i in range(len(model)))
        torch.cuda.make_graphed_callables(tuple(model), samples)
        return model, stepper(model, train)

    def mgc_whole(train: bool) -> Any:
        model = fresh(train)
        graphed = torch.cuda.make_graphed_callables(model, (x_for(train),))
        return model, stepper(graphed, train)

    def ours_per_block(train: bool) -> Any:
        model = fresh(train)
        wrapped = torch.nn.Sequential(*[CUDAGraphedLayer(block) for block in model])
        return wrapped, stepper(wrapped, train)

    def ours_whole(train: bool) -> Any:
        model = fresh(train)
        wrapped = CUDAGraphedLayer(model)
        return wrapped, stepper(wrapped, train)

    def raw_graph(train: bool) -> Any:
        model = fresh(train)
        step = stepper(model, train)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        model.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        x = x_for(train)
        with torch.cuda.graph(graph):
            if train:
                model(x).float().pow(2).mean().backward()
            else:
                with torch.no_grad():
                    model(x)
        return (model, graph), graph.replay

    return {
        "eager": eager,
        "make_graphed_callables per layer": mgc_per_layer,
        "make_graphed_callables whole model": mgc_whole,
        "CUDAGraphedLayer per block": ours_per_block,
        "CUDAGraphedLayer whole model": ours_whole,
        "raw whole-step CUDA graph": raw_graph,
    }


def measure(torch: Any, bench: Bench, make: Callable[[], Any], shape: tuple[int, ...]) -> dict[str, Any]:
    from autograph_cg.runtime import layer_stats

    clear_blas = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)
    out: dict[str, Any] = {}
    for name, build in variants(torch, make, shape).items():
        for train in (True, False):
            mode = "train" if train else "infer"
            gc.collect()
            clear_blas()  # every variant pays for the cuBLAS workspaces it uses, eager too
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            seen = {s["name"] for s in layer_stats()}
            keep, step = build(train)
            ms, peak_mb, steady_mb = bench.time_ms(step, base)
            out[f"{name}|{mode}|ms"] = ms
            out[f"{name}|{mode}|peak_mb"] = peak_mb
            out[f"{name}|{mode}|steady_mb"] = steady_mb
            if name == "eager":
                out[f"GPU busy (profiler)|{mode}|ms"] = bench.busy_ms(step)
            new = [s for s in layer_stats() if s["name"] not in seen]
            if new:
                out[f"{name}|{mode}|runtime"] = {
                    "captures": sum(s["captures"] for s in new),
                    "eager_calls": sum(s["eager_calls"] for s in new),
                    "eager_backwards": sum(s["eager_backwards"] for s in new),
                    "capture_ms": round(sum(s["capture_ms"] for s in new), 1),
                    "fallbacks": sorted({r for s in new for r in s["fallbacks"]}),
                }
            del keep, step, new
    # The per-block ratio compares two host-bound variants: timed in alternation, so both see the
    # same host.
    built = {name: variants(torch, make, shape)[name](True) for name in PER_BLOCK_PAIR}
    times = bench.interleaved_ms({name: step for name, (_, step) in built.items()})
    for name, ms in times.items():
        out[f"{name}|train|ms interleaved"] = ms
    del built
    return out


def table(results: dict[str, dict[str, Any]]) -> str:
    names = [
        "eager",
        "make_graphed_callables per layer",
        "make_graphed_callables whole model",
        "CUDAGraphedLayer per block",
        "CUDAGraphedLayer whole model",
        "raw whole-step CUDA graph",
        "GPU busy (profiler)",
    ]
    lines = []
    for model, r in results.items():
        lines.append(f"\n### {model}\n")
        lines.append(
            "| variant | training step ms | inference ms | peak MB training (with capture / warm) "
            "| peak MB inference |"
        )
        lines.append("| --- | ---: | ---: | ---: | ---: |")
        for n in names:
            cells = [r.get(f"{n}|train|ms"), r.get(f"{n}|infer|ms"), r.get(f"{n}|train|peak_mb"), r.get(f"{n}|infer|peak_mb")]
            if cells[2] is not None:
                cells[2] = f"{cells[2]:.1f} / {r[f'{n}|train|steady_mb']:.1f}"
            lines.append(f"| {n} | " + " | ".join(_cell(c, i) for i, c in enumerate(cells)) + " |")
        busy_t, busy_i = r["GPU busy (profiler)|train|ms"], r["GPU busy (profiler)|infer|ms"]
        ours = "CUDAGraphedLayer"
        ratios = {
            "whole model, training: CUDAGraphedLayer / GPU busy": r[f"{ours} whole model|train|ms"] / busy_t,
            "whole model, inference: CUDAGraphedLayer / GPU busy": r[f"{ours} whole model|infer|ms"] / busy_i,
            "per block, training: CUDAGraphedLayer / make_graphed_callables": r[f"{ours} per block|train|ms interleaved"]
            / r["make_graphed_callables per layer|train|ms interleaved"],
            "peak memory, training: CUDAGraphedLayer (worst) / eager": max(
                r[f"{ours} per block|train|peak_mb"], r[f"{ours} whole model|train|peak_mb"]
            ) / r["eager|train|peak_mb"],
            "peak memory once warm, training: CUDAGraphedLayer (worst) / eager": max(
                r[f"{ours} per block|train|steady_mb"], r[f"{ours} whole model|train|steady_mb"]
            ) / r["eager|train|steady_mb"],
        }
        a, b = (r[f"{n}|train|ms interleaved"] for n in PER_BLOCK_PAIR)
        lines.append(f"\nPer block, timed in alternation (7 rounds): {PER_BLOCK_PAIR[0]} {a:.2f} ms, {PER_BLOCK_PAIR[1]} {b:.2f} ms.")
        lines.append("\n| goal | measured | target | met |")
        lines.append("| --- | ---: | ---: | --- |")
        for goal, value in ratios.items():
            lines.append(f"| {goal} | {value:.2f} | ≤ {GOALS[goal]} | {'yes' if value <= GOALS[goal] else 'no'} |")
        for key, stats in r.items():
            if key.endswith("|runtime"):
                lines.append(f"\n- runtime, {key.rsplit('|', 1)[0].replace('|', ', ')}: {stats}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30, help="timed iterations per repeat (3 repeats)")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    if args.iters < 1:
        print("runtime_gpu: --iters must be at least 1", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("runtime_gpu: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("runtime_gpu: needs a CUDA device", file=sys.stderr)
        return 2
    bench = Bench(torch, args.iters)
    results = {name: measure(torch, bench, make, shape) for name, (make, shape) in build_models(torch).items()}
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args.iters} iterations x 3 repeats (median)")
    print(table(results))
    if args.json:
        meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "iters": args.iters}
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
