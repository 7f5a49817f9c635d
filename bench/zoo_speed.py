"""The zoo's training and inference speed wrapped as `rewrite` wraps it, against eager, on CUDA.

    python3 bench/zoo_speed.py [--only bert,timm/resnet18] [--library timm] [--steps 40] [--jobs 2] [--json F]

Per model, in a process of its own: two copies built by its factory (`bench/zoo.py`) with the same weights; one is
wrapped as `validate`'s plan pass wraps it (every layer a site of the plan builds, nested ones too, each with its
site's guard, the wrapper's defaults otherwise), the other stays eager. Training steps (AdamW `fused=True`, what
transformers' `Trainer` builds by default) and inference calls run in turns, eager then wrapped, each timed to the
GPU's end; the medians after the first `--warmup` are compared. One line per model, and a last line counting the
models slower than eager. Exit 1 when a model is slower than eager in training or could not be run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import zoo


def measure(name: str, steps: int, warmup: int, cache_dir: str) -> dict[str, Any]:
    """One model: medians of eager and wrapped training steps and inference calls, and the wrappers' counters."""
    import torch

    from autograph_cg.api import Options, analyze
    from autograph_cg.runtime import CUDAGraphedLayer, stats_of
    from autograph_cg.validate.births import recording
    from autograph_cg.validate.frameworks import framework_of
    from autograph_cg.validate.passes import loss_of, plan_picker, run_stats, unwrap, wrap_where
    from autograph_cg.validate.runner import package_root
    from autograph_cg.validate.target import Subject, build

    if not torch.cuda.is_available():
        raise RuntimeError("needs a CUDA device")
    factory = zoo.models()[name][1]
    eager = build(factory, name)
    fw = framework_of(eager.model)
    if fw.name != "torch":
        raise RuntimeError("PyTorch models only: Paddle runs on the CPU stand-in here")
    analysis = analyze([package_root(fw, eager.model)], Options(cache_dir=cache_dir))
    assert analysis.plan is not None
    with recording() as births:
        wrapped = build(factory, name)
    fw.load(wrapped.model, fw.state(eager.model))
    eager_model, inputs = fw.to_cuda(unwrap(fw, eager.model), eager.inputs)
    wrapped_model, _ = fw.to_cuda(unwrap(fw, wrapped.model), wrapped.inputs)

    names: dict[int, str] = {}

    def wrap(layer: Any, path: str, guard: Any) -> Any:
        names[id(layer)] = path
        return CUDAGraphedLayer(layer, name=path, guard=dict(guard) or None)

    call, wrappers = wrap_where(fw, wrapped_model, plan_picker(analysis.plan, births), wrap, nested=True)
    variants = {"eager": (Subject(eager_model, inputs, eager.loss_fn), eager_model),
                "wrapped": (Subject(wrapped_model, inputs, wrapped.loss_fn), call)}
    optimizers = {k: torch.optim.AdamW(fw.trainable(subject.model), lr=1e-4, fused=True) for k, (subject, _) in variants.items()}

    def train_step(key: str) -> float:
        subject, run = variants[key]
        opt = optimizers[key]
        torch.cuda.synchronize()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_of(fw, subject, run(*inputs)).backward()
        opt.step()
        torch.cuda.synchronize()
        return time.perf_counter() - start

    def infer(key: str) -> float:
        _, run = variants[key]
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.no_grad():
            run(*inputs)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    times: dict[tuple[str, str], list[float]] = {}
    for phase, one, mode in (("train", train_step, True), ("infer", infer, False)):
        for _, run in variants.values():
            run.train(mode)
        for i in range(steps):
            order = ("eager", "wrapped") if i % 2 == 0 else ("wrapped", "eager")
            for key in order:
                elapsed = one(key)
                if i >= warmup:
                    times.setdefault((phase, key), []).append(elapsed)
    median = {f"{phase}_{key}_ms": round(statistics.median(v) * 1e3, 3) for (phase, key), v in times.items()}
    stats = run_stats(wrappers)
    return {
        "model": name, **median, "wrappers": stats.wrapped, "sites": len(analysis.plan.sites),
        "replays": stats["forward_replays"] + stats["fused_calls"], "eager_calls": stats["eager_calls"],
        "fallbacks": stats.fallbacks, "disabled": list(stats.disabled),
        "wrapped": {names[id(w)]: _calls(stats_of(w)) for w in wrappers},
    }


def _calls(stats: dict[str, Any]) -> str:
    """How one wrapper's calls went: `captures/replays/fused/nested/eager`."""
    return "/".join(str(stats[k]) for k in ("captures", "forward_replays", "fused_calls", "nested_calls", "eager_calls"))


def run_one(name: str, steps: int, warmup: int, cache_dir: str, timeout: int) -> dict[str, Any]:
    """`measure` in a process of its own (a model's imports and CUDA state stay apart from the others')."""
    env = zoo.process_env(zoo.site_of(zoo.models()[name][0]))
    cmd = [sys.executable, str(Path(__file__)), "one", name, "--steps", str(steps), "--warmup", str(warmup),
           "--cache-dir", cache_dir]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=zoo.ROOT)
    except subprocess.TimeoutExpired:
        return {"model": name, "error": f"timed out after {timeout} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"model": name, "error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(lines[-1])


def summary(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['model']:34} ERROR {row['error'][:200]}"
    train = row["train_eager_ms"] / row["train_wrapped_ms"]
    infer = row["infer_eager_ms"] / row["infer_wrapped_ms"]
    reasons = "; ".join(f"{k} ×{v}" for k, v in sorted(row["fallbacks"].items(), key=lambda kv: -kv[1]))
    return (f"{row['model']:34} train {row['train_eager_ms']:7.2f} -> {row['train_wrapped_ms']:7.2f} ms ({train:4.2f}x) "
            f"infer {row['infer_eager_ms']:6.2f} -> {row['infer_wrapped_ms']:6.2f} ms ({infer:4.2f}x) | "
            f"{row['wrappers']} wrappers, {row['replays']:.0f} replays, {row['eager_calls']:.0f} eager"
            f"{' (' + reasons[:100] + ')' if reasons else ''}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps, then as many inference calls, per variant")
    parser.add_argument("--warmup", type=int, default=10, help="steps left out of the medians (warmup, capture, check)")
    parser.add_argument("--cache-dir", default="", help="the analyzer's cache, shared by the models' processes")
    if argv and argv[0] == "one":
        parser.add_argument("name")
        args = parser.parse_args(argv[1:])
        print(json.dumps(measure(args.name, args.steps, args.warmup, args.cache_dir or None)), flush=True)
        return 0
    parser.add_argument("--only", default="", help="comma-separated model names (default: every available PyTorch model)")
    parser.add_argument("--library", default="", help="only the models of this library")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    models = zoo.models()
    names = args.only.split(",") if args.only else [
        n for n, (lib, _) in models.items() if lib != "paddlenlp" and lib != "paddle" and zoo.available(lib)
    ]
    unknown = [n for n in names if n not in models]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    if args.library:
        names = [n for n in names if models[n][0] == args.library]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        cache = args.cache_dir or tmp
        rows = list(pool.map(lambda n: run_one(n, args.steps, args.warmup, cache, args.timeout), names))
    for row in rows:
        print(summary(row), flush=True)
    slower = [r["model"] for r in rows if "error" not in r and r["train_wrapped_ms"] > r["train_eager_ms"]]
    errors = sum("error" in r for r in rows)
    print(f"{len(rows)} models, {errors} not run, {len(slower)} slower than eager in training"
          f"{': ' + ', '.join(slower) if slower else ''}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if slower or errors else 0


if __name__ == "__main__":
    sys.exit(main())
