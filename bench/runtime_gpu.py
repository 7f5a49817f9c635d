"""Benchmark of the CUDA-graph runtime on one GPU (a benchmark, not a test).

Three models: 24 pre-LN MLP blocks (mlp24: d=256, batch 8), 8 ``nn.TransformerEncoderLayer``s
(tfm8: d=256, batch 4, seq 64) and 8 decoder blocks as model libraries write them (dec8: pre-norm
RMSNorm, rotary positions, causal attention through ``F.scaled_dot_product_attention``, gated SiLU
MLP; d=256, 8 heads, batch 8, seq 128). For each it prints the time of a training step (zero_grad,
forward, loss, backward) and of an inference forward for: eager; ``torch.cuda.make_graphed_callables``
per layer and on the whole model; ``CUDAGraphedLayer`` per block and on the whole model; one raw CUDA
graph of the whole step; ``CUDAGraphedLayer`` per block with ``fuse=False`` (each block replays its
own graphs: the per-call cost); ``torch.compile(mode="reduce-overhead")`` (with
``torch.compiler.cudagraph_mark_step_begin()`` each step); ``CUDAGraphedLayer`` over
``torch.compile(model)`` (Inductor without its own graphs); and the GPU-busy time of the eager step
from the profiler (sum of device activity). Compilation happens in the untimed warmup calls
("warmup s" says how long they took). Peak memory is the allocator's peak above what was allocated
before the model existed, with cuBLAS's cached workspaces dropped first so each variant counts the
ones it allocates. The ratios of the goals compare variants timed in alternation, all alive at once:
the steps are bound by the host, whose speed drifts within a run.

    python bench/runtime_gpu.py [--iters 30] [--models mlp24 tfm8 dec8] [--compile with|without|only] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any, Callable

from torch_needed import torch_or_none

GOALS = {
    "whole model, training: CUDAGraphedLayer / GPU busy": 1.3,
    "whole model, inference: CUDAGraphedLayer / GPU busy": 1.15,
    "per block, training: CUDAGraphedLayer / make_graphed_callables": 0.7,
    "per block, training: CUDAGraphedLayer per block / whole model": 1.3,
    "per block, training: CUDAGraphedLayer per block, fuse=False / make_graphed_callables": None,
    "training: CUDAGraphedLayer over torch.compile / reduce-overhead": 1.0,
    "inference: CUDAGraphedLayer over torch.compile / reduce-overhead": 1.0,
    "training: CUDAGraphedLayer whole model / reduce-overhead": None,  # reported beside the above
    "inference: CUDAGraphedLayer whole model / reduce-overhead": None,
    "peak memory, training: CUDAGraphedLayer (worst) / eager": 1.2,
    "peak memory once warm, training: CUDAGraphedLayer (worst) / eager": 1.2,
}

MGC_LAYER, OURS_BLOCK, OURS_WHOLE = "make_graphed_callables per layer", "CUDAGraphedLayer per block", "CUDAGraphedLayer whole model"
OURS_UNFUSED = "CUDAGraphedLayer per block, fuse=False"
REDUCE, OURS_COMPILED = "torch.compile reduce-overhead", "CUDAGraphedLayer over torch.compile"
# Timed in alternation, per mode: the variants the ratios of the goals compare.
ALTERNATED = {
    "train": (MGC_LAYER, OURS_BLOCK, OURS_UNFUSED, OURS_WHOLE, REDUCE, OURS_COMPILED),
    "infer": (OURS_WHOLE, REDUCE, OURS_COMPILED),
}


def _cell(value: Any, column: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return f"{value:.2f}" if column < 2 else f"{value:.1f}"


def build_models(torch: Any) -> dict[str, tuple[str, Callable[[], Any], tuple[int, ...]]]:
    """Short name -> (title, model factory, input shape); every model is a Sequential of blocks."""
    nn, F = torch.nn, torch.nn.functional

    class MLPBlock(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(F.gelu(self.fc1(self.ln(x))))

    class RMSNorm(nn.Module):
        def __init__(self, d: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))
            self.eps = eps

        def forward(self, x: Any) -> Any:
            dtype = x.dtype
            x = x.float()
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * x.to(dtype)

    def rotate_half(x: Any) -> Any:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    class Rotary(nn.Module):
        def __init__(self, head_dim: int, max_seq: int, base: float = 10000.0) -> None:
            super().__init__()
            inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
            freqs = torch.outer(torch.arange(max_seq).float(), inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)

        def forward(self, q: Any, k: Any) -> tuple[Any, Any]:
            cos, sin = self.cos[: q.shape[-2]], self.sin[: q.shape[-2]]
            return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin

    class Attention(nn.Module):
        def __init__(self, d: int, heads: int, max_seq: int) -> None:
            super().__init__()
            self.heads, self.head_dim = heads, d // heads
            self.q_proj = nn.Linear(d, d, bias=False)
            self.k_proj = nn.Linear(d, d, bias=False)
            self.v_proj = nn.Linear(d, d, bias=False)
            self.o_proj = nn.Linear(d, d, bias=False)
            self.rotary = Rotary(self.head_dim, max_seq)

        def forward(self, x: Any) -> Any:
            b, t, _ = x.shape
            q, k, v = (
                proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
                for proj in (self.q_proj, self.k_proj, self.v_proj)
            )
            q, k = self.rotary(q, k)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))

    class GatedMLP(nn.Module):
        def __init__(self, d: int, hidden: int) -> None:
            super().__init__()
            self.gate_proj = nn.Linear(d, hidden, bias=False)
            self.up_proj = nn.Linear(d, hidden, bias=False)
            self.down_proj = nn.Linear(hidden, d, bias=False)

        def forward(self, x: Any) -> Any:
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class DecoderBlock(nn.Module):
        def __init__(self, d: int, heads: int, max_seq: int) -> None:
            super().__init__()
            self.input_layernorm = RMSNorm(d)
            self.self_attn = Attention(d, heads, max_seq)
            self.post_attention_layernorm = RMSNorm(d)
            self.mlp = GatedMLP(d, 704)  # about 8/3 d, a multiple of 64

        def forward(self, x: Any) -> Any:
            h = x + self.self_attn(self.input_layernorm(x))
            return h + self.mlp(self.post_attention_layernorm(h))

    return {
        "mlp24": ("mlp24 (d=256, batch 8)", lambda: nn.Sequential(*[MLPBlock(256) for _ in range(24)]), (8, 256)),
        "tfm8": (
            "tfm8 (d=256, batch 4, seq 64)",
            lambda: nn.Sequential(*[nn.TransformerEncoderLayer(256, 8, batch_first=True) for _ in range(8)]),
            (4, 64, 256),
        ),
        "dec8": (
            "dec8 (decoder blocks: RMSNorm, rotary, SDPA, gated SiLU MLP; d=256, 8 heads, batch 8, seq 128)",
            lambda: nn.Sequential(*[DecoderBlock(256, 8, 128) for _ in range(8)]),
            (8, 128, 256),
        ),
    }


class Bench:
    def __init__(self, torch: Any, iters: int) -> None:
        self.torch, self.iters = torch, iters

    def time_ms(self, fn: Callable[[], None], base: int) -> tuple[float, float, float, float]:
        """Median time per call; peak memory above ``base`` over everything (captures included)
        and once warm; seconds of the 10 warmup calls (compilation, captures)."""
        torch = self.torch
        start = time.perf_counter()
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        warmup_s = time.perf_counter() - start
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
        return statistics.median(runs), (max(peak_all, peak_warm) - base) / mb, (peak_warm - base) / mb, warmup_s

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


def step_of(torch: Any, model: Any, x: Any, train: bool) -> Callable[[], None]:
    """A training step (zero_grad, forward, mean-square loss, backward) or an inference forward."""
    if not train:
        def infer() -> None:
            with torch.no_grad():
                model(x)
        return infer

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()

    return step


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
        return step_of(torch, model, x_for(train), train)

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

    def stepper_compiled(model: Any, train: bool) -> Callable[[], None]:
        step = stepper(model, train)

        def marked() -> None:
            torch.compiler.cudagraph_mark_step_begin()  # reduce-overhead's graphs: a new step begins
            step()

        return marked

    def reduce_overhead(train: bool) -> Any:
        model = fresh(train)
        compiled = torch.compile(model, mode="reduce-overhead")
        return compiled, stepper_compiled(compiled, train)

    def ours_over_compiled(train: bool) -> Any:
        model = fresh(train)
        wrapped = CUDAGraphedLayer(torch.compile(model))  # Inductor's default mode: no graphs of its own
        return wrapped, stepper(wrapped, train)

    def ours_per_block(train: bool) -> Any:
        model = fresh(train)
        wrapped = torch.nn.Sequential(*[CUDAGraphedLayer(block) for block in model])
        return wrapped, stepper(wrapped, train)

    def ours_unfused(train: bool) -> Any:
        model = fresh(train)
        wrapped = torch.nn.Sequential(*[CUDAGraphedLayer(block, fuse=False) for block in model])
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
        MGC_LAYER: mgc_per_layer,
        "make_graphed_callables whole model": mgc_whole,
        OURS_BLOCK: ours_per_block,
        OURS_UNFUSED: ours_unfused,
        OURS_WHOLE: ours_whole,
        "raw whole-step CUDA graph": raw_graph,
        REDUCE: reduce_overhead,
        OURS_COMPILED: ours_over_compiled,
    }


COMPILED = (REDUCE, OURS_COMPILED)
SELECTIONS = {  # --compile: which variants run
    "with": lambda name: True,
    "without": lambda name: name not in COMPILED,
    "only": lambda name: name in COMPILED or name in ("eager", OURS_WHOLE),
}


def measure(
    torch: Any, bench: Bench, make: Callable[[], Any], shape: tuple[int, ...], chosen: Callable[[str], bool]
) -> dict[str, Any]:
    from autograph_cg.runtime.stats import _registry as wrapped_layers  # by uid: names of freed layers recur

    clear_blas = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)
    # Each model compiles from a clean cache: compiled models of one process share Dynamo's code objects, whose
    # recompile limit (8) the earlier models would use up, leaving the later ones silently eager.
    torch._dynamo.reset()
    out: dict[str, Any] = {}
    kept: dict[tuple[str, str], Callable[[], None]] = {}  # the variants timed in alternation afterwards
    for name, build in variants(torch, make, shape).items():
        if not chosen(name):
            continue
        for train in (True, False):
            mode = "train" if train else "infer"
            gc.collect()
            clear_blas()  # every variant pays for the cuBLAS workspaces it uses, eager too
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            seen = set(wrapped_layers.keys())
            keep, step = build(train)
            ms, peak_mb, steady_mb, warmup_s = bench.time_ms(step, base)
            out[f"{name}|{mode}|ms"] = ms
            out[f"{name}|{mode}|peak_mb"] = peak_mb
            out[f"{name}|{mode}|steady_mb"] = steady_mb
            out[f"{name}|{mode}|warmup_s"] = warmup_s
            if name == "eager":
                out[f"GPU busy (profiler)|{mode}|ms"] = bench.busy_ms(step)
            new = [wrapped_layers[uid].as_dict() for uid in sorted(set(wrapped_layers.keys()) - seen)]
            if new:
                out[f"{name}|{mode}|runtime"] = {
                    "captures": sum(s["captures"] for s in new),
                    "eager_calls": sum(s["eager_calls"] for s in new),
                    "eager_backwards": sum(s["eager_backwards"] for s in new),
                    "capture_ms": round(sum(s["capture_ms"] for s in new), 1),
                    "fallbacks": sorted({r for s in new for r in s["fallbacks"]}),
                }
            if name in ALTERNATED[mode]:
                kept[(name, mode)] = step
            del keep, step, new
    # The ratios compare host-bound variants: timed in alternation, so all see the same host.
    for mode, names in ALTERNATED.items():
        times = bench.interleaved_ms({name: kept[(name, mode)] for name in names if (name, mode) in kept})
        for name, ms in times.items():
            out[f"{name}|{mode}|ms interleaved"] = ms
    del kept
    return out


ROWS = [
    "eager",
    MGC_LAYER,
    "make_graphed_callables whole model",
    OURS_BLOCK,
    OURS_UNFUSED,
    OURS_WHOLE,
    "raw whole-step CUDA graph",
    REDUCE,
    OURS_COMPILED,
    "GPU busy (profiler)",
]


def ratios(r: dict[str, Any]) -> dict[str, float]:
    """The goals' ratios of the variants that ran."""
    alt = lambda name, mode: r[f"{name}|{mode}|ms interleaved"]  # noqa: E731
    formulas = {
        "whole model, training: CUDAGraphedLayer / GPU busy": lambda: r[f"{OURS_WHOLE}|train|ms"] / r["GPU busy (profiler)|train|ms"],
        "whole model, inference: CUDAGraphedLayer / GPU busy": lambda: r[f"{OURS_WHOLE}|infer|ms"] / r["GPU busy (profiler)|infer|ms"],
        "per block, training: CUDAGraphedLayer / make_graphed_callables": lambda: alt(OURS_BLOCK, "train") / alt(MGC_LAYER, "train"),
        "per block, training: CUDAGraphedLayer per block / whole model": lambda: alt(OURS_BLOCK, "train") / alt(OURS_WHOLE, "train"),
        "per block, training: CUDAGraphedLayer per block, fuse=False / make_graphed_callables": lambda: alt(OURS_UNFUSED, "train")
        / alt(MGC_LAYER, "train"),
        "training: CUDAGraphedLayer over torch.compile / reduce-overhead": lambda: alt(OURS_COMPILED, "train") / alt(REDUCE, "train"),
        "inference: CUDAGraphedLayer over torch.compile / reduce-overhead": lambda: alt(OURS_COMPILED, "infer") / alt(REDUCE, "infer"),
        "training: CUDAGraphedLayer whole model / reduce-overhead": lambda: alt(OURS_WHOLE, "train") / alt(REDUCE, "train"),
        "inference: CUDAGraphedLayer whole model / reduce-overhead": lambda: alt(OURS_WHOLE, "infer") / alt(REDUCE, "infer"),
        "peak memory, training: CUDAGraphedLayer (worst) / eager": lambda: max(
            r[f"{n}|train|peak_mb"] for n in (OURS_BLOCK, OURS_UNFUSED, OURS_WHOLE)
        ) / r["eager|train|peak_mb"],
        "peak memory once warm, training: CUDAGraphedLayer (worst) / eager": lambda: max(
            r[f"{n}|train|steady_mb"] for n in (OURS_BLOCK, OURS_UNFUSED, OURS_WHOLE)
        ) / r["eager|train|steady_mb"],
    }
    values = {}
    for goal, formula in formulas.items():
        try:
            values[goal] = formula()
        except KeyError:  # a variant it needs did not run (--compile)
            continue
    return values


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = []
    for model, r in results.items():
        lines.append(f"\n### {model}\n")
        lines.append(
            "| variant | training step ms | inference ms | peak MB training (with capture / warm) "
            "| peak MB inference | warmup s training / inference |"
        )
        lines.append("| --- | ---: | ---: | ---: | ---: | ---: |")
        for n in ROWS:
            cells = [r.get(f"{n}|train|ms"), r.get(f"{n}|infer|ms"), r.get(f"{n}|train|peak_mb"), r.get(f"{n}|infer|peak_mb")]
            if cells[2] is not None:
                cells[2] = f"{cells[2]:.1f} / {r[f'{n}|train|steady_mb']:.1f}"
            warm = r.get(f"{n}|train|warmup_s")
            cells.append(None if warm is None else f"{warm:.1f} / {r[f'{n}|infer|warmup_s']:.1f}")
            lines.append(f"| {n} | " + " | ".join(_cell(c, i) for i, c in enumerate(cells)) + " |")
        for mode, names in ALTERNATED.items():
            timed = ", ".join(f"{n} {r[f'{n}|{mode}|ms interleaved']:.2f} ms" for n in names if f"{n}|{mode}|ms interleaved" in r)
            lines.append(f"\nTimed in alternation ({'training' if mode == 'train' else 'inference'}, 7 rounds): {timed}.")
        lines.append("\n| goal | measured | target | met |")
        lines.append("| --- | ---: | ---: | --- |")
        for goal, value in ratios(r).items():
            target = GOALS[goal]
            if target is None:
                lines.append(f"| {goal} | {value:.2f} | (reported) | |")
            else:
                lines.append(f"| {goal} | {value:.2f} | ≤ {target} | {'yes' if value <= target else 'no'} |")
        for key, stats in r.items():
            if key.endswith("|runtime"):
                lines.append(f"\n- runtime, {key.rsplit('|', 1)[0].replace('|', ', ')}: {stats}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=30, help="timed iterations per repeat (3 repeats)")
    parser.add_argument("--models", nargs="+", help="which models (default: all): mlp24 tfm8 dec8")
    parser.add_argument(
        "--compile", choices=sorted(SELECTIONS), default="with",
        help="the torch.compile variants: with the others (default), without them, or only them "
        "(with eager and the whole-model wrapper): compilation is most of a run's time",
    )
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args(argv)
    if args.iters < 1:
        print("runtime_gpu: --iters must be at least 1", file=sys.stderr)
        return 2
    torch = torch_or_none("runtime_gpu", cuda=True)
    if torch is None:
        return 2
    models = build_models(torch)
    unknown = sorted(set(args.models or ()) - set(models))
    if unknown:
        print(f"runtime_gpu: unknown model {unknown[0]!r} (known: {', '.join(models)})", file=sys.stderr)
        return 2
    bench = Bench(torch, args.iters)
    results = {
        title: measure(torch, bench, make, shape, SELECTIONS[args.compile])
        for name, (title, make, shape) in models.items()
        if not args.models or name in args.models
    }
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args.iters} iterations x 3 repeats (median)")
    print(table(results))
    if args.json:
        meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "iters": args.iters}
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
