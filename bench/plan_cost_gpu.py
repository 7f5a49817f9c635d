"""Calibration of the plan's cost model on one GPU: what one graph saves per kernel, what a wrapper costs per call.

Synthetic layers with k kernels in forward, k = 1, 2, 4, ..., 64, in two families: a chain of k
elementwise ops (``tanh``) and a chain of k small ``Linear(256, 256)`` layers, on a batch of 8x128
tokens (d=256). ``--layers`` such layers run in a row, eager and with one ``CUDAGraphedLayer`` per
layer, timed in alternation, for training (zero_grad, forward, loss, backward) and inference
(forward under no_grad in eval mode). Wrapped two ways: "alone" (``fuse=False``: each layer replays
its own graphs, the cost of a wrapper between unwrapped code) and "in a run" (the default: the
layers, always called back to back, replay as one fused run). Per k it prints microseconds per layer
eager and wrapped, the time saved, and the kernel launches per layer counted in a profiler trace of
the eager step (forward only for inference; forward and backward for training). Per family, mode
and wrapping, and over both families, a least-squares fit of saved = a * launches - c gives the
saving per kernel launch (a) and the wrapper's fixed cost per call (c): a wrapper pays when
a * launches > c.

    python bench/plan_cost_gpu.py [--iters 20] [--layers 16] [--json costs.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from typing import Any, Callable

from torch_needed import torch_or_none

KS = (1, 2, 4, 8, 16, 32, 64)
D, BATCH, SEQ = 256, 8, 128


def build_layer(torch: Any, family: str, k: int) -> Any:
    nn = torch.nn

    class Elementwise(nn.Module):
        def __init__(self, k: int) -> None:
            super().__init__()
            self.k = k

        def forward(self, x: Any) -> Any:
            for _ in range(self.k):
                x = torch.tanh(x)
            return x

    if family == "elementwise":
        return Elementwise(k)
    return nn.Sequential(*[nn.Linear(D, D) for _ in range(k)])


def launches_per_call(torch: Any, step: Callable[[], None], iters: int) -> float:
    """Device activities (kernels, copies, fills) per step in a profiler trace."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
    events = [e for e in prof.profiler.kineto_results.events() if e.device_type() == torch.autograd.DeviceType.CUDA]
    return len(events) / iters


def fit(points: list[tuple[float, float]]) -> dict[str, float]:
    """Least squares of saved = a * launches - c."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    a = sum((x - mx) * (y - my) for x, y in points) / sxx
    c = a * mx - my
    residual = (sum((y - (a * x - c)) ** 2 for x, y in points) / n) ** 0.5
    return {"us_per_launch": a, "us_per_call": c, "break_even_launches": c / a if a > 0 else float("inf"), "rms_us": residual}


WRAPPINGS = {"alone": False, "in a run": True}  # how each layer is wrapped -> fuse


def measure(torch: Any, bench: Any, family: str, k: int, layers: int, train: bool) -> dict[str, float]:
    from runtime_gpu import step_of

    from autograph_cg.runtime import CUDAGraphedLayer, stats_of

    torch.manual_seed(0)
    x = torch.randn(BATCH, SEQ, D, device="cuda", requires_grad=train)
    models = {"eager": torch.nn.Sequential(*[build_layer(torch, family, k) for _ in range(layers)])}
    for name, fuse in WRAPPINGS.items():
        layers_ = [CUDAGraphedLayer(build_layer(torch, family, k), fuse=fuse) for _ in range(layers)]
        models[name] = torch.nn.Sequential(*layers_)
    steps = {name: step_of(torch, model.cuda().train(train), x, train) for name, model in models.items()}
    times = bench.interleaved_ms(steps)
    launches = launches_per_call(torch, steps["eager"], 5) / layers
    for name in WRAPPINGS:
        for layer in models[name]:
            stats = stats_of(layer)
            if stats["disabled_reason"] or stats["eager_calls"] or stats["eager_backwards"] or stats["fallbacks"]:
                raise SystemExit(f"plan_cost_gpu: a wrapped layer ran eagerly ({family}, k={k}, {name}): {stats}")
    per_layer = {name: ms * 1e3 / layers for name, ms in times.items()}
    row = {"k": k, "launches_per_layer": launches, "eager_us_per_layer": per_layer["eager"]}
    for name in WRAPPINGS:
        row[f"{name}: wrapped_us_per_layer"] = per_layer[name]
        row[f"{name}: saved_us_per_layer"] = per_layer["eager"] - per_layer[name]
    return row


def report(results: dict[str, list[dict[str, float]]]) -> tuple[str, dict[str, dict[str, float]]]:
    lines, fits = [], {}
    for mode in ("train", "infer"):
        for family in ("elementwise", "linear"):
            rows = results[f"{family}|{mode}"]
            lines.append(f"\n### {family}, {'training' if mode == 'train' else 'inference'}\n")
            lines.append(
                "| k | launches per layer | eager us per layer | wrapped alone us | saved alone us "
                "| wrapped in a run us | saved in a run us |"
            )
            lines.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            for row in rows:
                cells = [f"{row['k']}", f"{row['launches_per_layer']:.1f}", f"{row['eager_us_per_layer']:.1f}"]
                for name in WRAPPINGS:
                    cells += [f"{row[f'{name}: wrapped_us_per_layer']:.1f}", f"{row[f'{name}: saved_us_per_layer']:.1f}"]
                lines.append("| " + " | ".join(cells) + " |")
        for family in ("elementwise", "linear", "both"):
            rows = results[f"{family}|{mode}"] if family != "both" else (
                results[f"elementwise|{mode}"] + results[f"linear|{mode}"]
            )
            for name in WRAPPINGS:
                points = [(r["launches_per_layer"], r[f"{name}: saved_us_per_layer"]) for r in rows]
                fits[f"{family}|{mode}|{name}"] = fit(points)
    lines.append("\n### Fit: saved = a * launches - c\n")
    lines.append("| family | mode | wrapped | a: us saved per launch | c: us per wrapped call | break-even launches | rms us |")
    lines.append("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for key, f in fits.items():
        family, mode, name = key.split("|")
        lines.append(
            f"| {family} | {mode} | {name} | {f['us_per_launch']:.2f} | {f['us_per_call']:.1f} "
            f"| {f['break_even_launches']:.1f} | {f['rms_us']:.1f} |"
        )
    return "\n".join(lines), fits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=20, help="steps per timed round (7 rounds, alternating)")
    parser.add_argument("--layers", type=int, default=16, help="layers in a row")
    parser.add_argument("--json", help="also write the figures and fits to this file")
    args = parser.parse_args(argv)
    if args.iters < 1 or args.layers < 1:
        print("plan_cost_gpu: --iters and --layers must be at least 1", file=sys.stderr)
        return 2
    torch = torch_or_none("plan_cost_gpu", cuda=True)
    if torch is None:
        return 2
    from runtime_gpu import Bench

    bench = Bench(torch, args.iters)
    results: dict[str, list[dict[str, float]]] = {}
    for mode in ("train", "infer"):
        for family in ("elementwise", "linear"):
            results[f"{family}|{mode}"] = [
                measure(torch, bench, family, k, args.layers, mode == "train") for k in KS
            ]
            gc.collect()
            torch.cuda.empty_cache()
    text, fits = report(results)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {args.layers} layers, d={D}, "
          f"batch {BATCH}x{SEQ}, {args.iters} steps x 7 alternating rounds (median)")
    print(text)
    if args.json:
        meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "iters": args.iters, "layers": args.layers}
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": results, "fits": fits}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
