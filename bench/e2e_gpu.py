"""End to end on a GPU: rewrite real model packages, train and run them graphed, compare with eager.

Two steps, the first here (it needs libcst), the second on the GPU machine (it needs only torch):

    python bench/e2e_gpu.py prepare                  # timm 1.0.31 + fixtures/torch_lm -> .carry/e2e/{eager,graphed,unknown}
    python bench/e2e_gpu.py run --validate --json e2e.json

`prepare` copies timm 1.0.31 (from the corpus cache, fetched with pip where missing) and the repo's
PyTorch fixture package three times: `eager` untouched, `graphed` rewritten by `autograph-cg rewrite`,
`unknown` rewritten with `--wrap-unknown` (which also wraps classes whose verdict is unknown).
`run` runs each model (random init from a seed, no pretrained weights) in one process per copy, plus
`whole`: the eager copy with the whole model wrapped by hand in one CUDAGraphedLayer (what `validate`
finds capturable at the root). Inference outputs after the graphs are captured, then STEPS SGD steps;
it compares the loss curves and the outputs with the eager run's, and prints per model and run the
share of layer instantiations inside graphs, step times, speedups, peak memory and the runtime's
fallbacks with their reasons.
`--validate` also runs `autograph-cg validate` on each model (on the eager copy) and lists where the
analyzer's verdicts and the run disagree. Without a GPU it runs on the CPU stand-in (for debugging).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO / ".carry" / "e2e"
TIMM = ("timm", "1.0.31")
# name -> (batch, description); timm models take 224x224 images and 1000 classes
MODELS: dict[str, tuple[int, str]] = {
    "resnet18": (8, "timm resnet18, {batch}x3x224x224"),
    "vit_tiny_patch16_224": (8, "timm vit_tiny_patch16_224, {batch}x3x224x224"),
    "convnext_atto": (8, "timm convnext_atto, {batch}x3x224x224"),
    "torch_lm": (8, "fixtures/torch_lm, {batch}x64 tokens"),
    "mixer_s16_224": (8, "timm mixer_s16_224, {batch}x3x224x224"),
}
COPIES = {"eager": None, "graphed": [], "unknown": ["--wrap-unknown"]}  # prepared copy -> rewrite flags
# run -> (copy, wrap the whole model by hand): "whole" is what `validate` finds capturable at the root
RUNS = {"eager": ("eager", False), "graphed": ("graphed", False), "unknown": ("unknown", False), "whole": ("eager", True)}
TOLERANCE = 1e-3  # largest relative difference of a loss or an output that still counts as identical
LM_SEQ = 64


# ---------------------------------------------------------------- prepare (here)
def prepare(target: Path) -> dict[str, Any]:
    """Three copies of timm and torch_lm; the graphed ones rewritten with the CLI. Returns the rewrite summaries."""
    sys.path.insert(0, str(REPO / "bench"))
    from corpus import fetch_one

    timm_root = fetch_one(*TIMM).path / "timm"
    if target.exists():
        shutil.rmtree(target)
    summary: dict[str, Any] = {}
    for variant, flags in COPIES.items():
        dest = target / variant
        shutil.copytree(timm_root, dest / "timm", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(REPO / "fixtures" / "torch_lm", dest / "torch_lm", ignore=shutil.ignore_patterns("__pycache__"))
        if flags is None:
            continue
        for package in ("timm", "torch_lm"):
            cmd = [sys.executable, "-m", "autograph_cg", "rewrite", str(dest / package), "--format", "json", "--no-cache", "-q", *flags]
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
            if proc.returncode != 0:
                raise SystemExit(f"rewrite of {dest / package} failed ({proc.returncode}): {proc.stderr.strip()}")
            data = json.loads(proc.stdout)
            summary[f"{variant}/{package}"] = {k: data[k] for k in ("files_scanned", "sites", "files_changed", "files_skipped")}
            print(f"{variant}/{package}: {data['sites']} sites wrapped in {data['files_changed']} files "
                  f"({data['files_scanned']} scanned, {data['files_skipped']} skipped)  [rewrite {' '.join(flags)}]".rstrip())
    (target / "prepare.json").write_text(json.dumps(summary, indent=1))
    return summary


# ---------------------------------------------------------------- models (worker and validate)
def build(name: str, batch: int, device: str) -> tuple[Any, tuple, Any]:
    """(model, inputs, loss(model, output, *inputs)) from a seed; no pretrained weights."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    if name == "torch_lm":
        from torch_lm import loss_fn, make_model

        model, inputs = make_model(seed=0, batch=batch, seq_len=LM_SEQ, device=device)
        return model, inputs, loss_fn
    import timm

    model = timm.create_model(name, pretrained=False).to(device)
    images = torch.randn(batch, 3, 224, 224).to(device)
    labels = torch.randint(0, 1000, (batch,)).to(device)
    return model, (images,), lambda _model, out, *_: F.cross_entropy(out, labels.to(out.device))


def validate_factory(name: str) -> Any:
    """`autograph-cg validate e2e_gpu:<name>`: a small batch on the CPU; validate moves it to the GPU."""
    return lambda: build(name, 2, "cpu")


resnet18 = validate_factory("resnet18")
vit_tiny_patch16_224 = validate_factory("vit_tiny_patch16_224")
convnext_atto = validate_factory("convnext_atto")
mixer_s16_224 = validate_factory("mixer_s16_224")
torch_lm = validate_factory("torch_lm")


# ---------------------------------------------------------------- worker (one process per model and copy)
def worker(src: Path, name: str, steps: int, batch: int, out: Path, whole: bool) -> None:
    sys.path.insert(0, str(src))
    sys.path.insert(1, str(REPO))
    import numpy as np
    import torch

    from autograph_cg.runtime import CUDAGraphedLayer, layer_stats
    from autograph_cg.validate.frameworks import TorchFramework
    from autograph_cg.validate.passes import graphed_share

    module = "torch_lm" if name == "torch_lm" else "timm"
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ.setdefault("AUTOGRAPH_CG_BACKEND", "standin")
    model, inputs, loss_fn = build(name, batch, device)
    origin = sys.modules[module].__file__ or ""
    if not origin.startswith(str(src)):
        raise SystemExit(f"{module} was imported from {origin}, not from {src}")
    call = CUDAGraphedLayer(model) if whole else model
    inside, total = graphed_share(TorchFramework(), call)
    cuda = device == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def peak_mb() -> float:
        return torch.cuda.max_memory_allocated() / 2**20 if cuda else 0.0

    warm = 10  # calls or steps before timing: warmup and capture of every key happen here
    model.eval()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        for _ in range(warm):
            output = call(*inputs)
        np.save(out.with_suffix(".npy"), output.float().cpu().numpy())
        sync()
        start = time.perf_counter()
        for _ in range(steps):
            call(*inputs)
        sync()
        infer_ms = (time.perf_counter() - start) / steps * 1e3
    infer_peak = peak_mb()

    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    torch.manual_seed(1)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    losses = []
    for step in range(steps):
        if step == warm:
            sync()
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model, call(*inputs), *inputs)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    sync()
    train_ms = (time.perf_counter() - start) / (steps - warm) * 1e3
    train_peak = peak_mb()

    stats = layer_stats()
    fallbacks: Counter = Counter()  # reason -> number of wrapped layers that saw it
    for s in stats:
        fallbacks.update(s["fallbacks"].keys())
        if s["disabled_reason"]:
            fallbacks[f"eager from then on: {s['disabled_reason']}"] += 1
    result = {
        "model": name,
        "source": origin,
        "device": torch.cuda.get_device_name() if cuda else "cpu (stand-in graphs)",
        "torch": torch.__version__,
        "layers_in_graphs": inside,
        "layers": total,
        "wrapped": len(stats),
        "graphed": sum(1 for s in stats if s["state"] == "graphed"),
        "captures": sum(s["captures"] for s in stats),
        "capture_ms": round(sum(s["capture_ms"] for s in stats), 1),
        "forward_replays": sum(s["forward_replays"] for s in stats),
        "backward_replays": sum(s["backward_replays"] for s in stats),
        "eager_calls": sum(s["eager_calls"] for s in stats),
        "eager_backwards": sum(s["eager_backwards"] for s in stats),
        "fallbacks": dict(fallbacks),
        "infer_ms": infer_ms,
        "train_ms": train_ms,
        "infer_peak_mb": infer_peak,
        "train_peak_mb": train_peak,
        "losses": torch.stack(losses).tolist(),
    }
    out.write_text(json.dumps(result))


# ---------------------------------------------------------------- run (parent)
def _relative(got: Any, want: Any) -> float:
    import numpy as np

    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    return float(np.abs(got - want).max(initial=0.0) / max(float(np.abs(want).max(initial=0.0)), 1e-30))


def run_worker(base: Path, run_name: str, name: str, steps: int, batch: int, scratch: Path, timeout: int) -> dict[str, Any]:
    copy, whole = RUNS[run_name]
    out = scratch / f"{name}.{run_name}.json"
    cmd = [sys.executable, __file__, "worker", "--src", str(base / copy), "--model", name, "--steps", str(steps),
           "--batch", str(batch), "--out", str(out), *(["--whole"] if whole else [])]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"worker exited {proc.returncode}: {' | '.join(tail)}"}
    data = json.loads(out.read_text())
    data["output_file"] = str(out.with_suffix(".npy"))
    return data


def compare(eager: dict[str, Any], graphed: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    out_e, out_g = np.load(eager["output_file"]), np.load(graphed["output_file"])
    rel_losses = [_relative(g, e) for g, e in zip(graphed["losses"], eager["losses"])]
    loss_rel = max(rel_losses) if len(graphed["losses"]) == len(eager["losses"]) else float("inf")
    out_rel = _relative(out_g, out_e)
    return {
        "loss_max_rel": loss_rel,
        "loss_bitwise": graphed["losses"] == eager["losses"],
        "output_max_rel": out_rel,
        "output_bitwise": bool(np.array_equal(out_g, out_e)),
        "identical": loss_rel <= TOLERANCE and out_rel <= TOLERANCE,
        "train_speedup": eager["train_ms"] / graphed["train_ms"],
        "infer_speedup": eager["infer_ms"] / graphed["infer_ms"],
    }


def run_validate(name: str, src: Path, steps: int, timeout: int, scratch: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "autograph_cg", "validate", f"e2e_gpu:{name}", "--path", str(REPO / "bench"), "--path", str(src),
           "--format", "json", "-q", "--steps", str(steps), "--cache-dir", str(scratch / "cache")]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, check=False)
    if proc.returncode not in (0, 1):
        return {"error": f"validate exited {proc.returncode}: {proc.stderr.strip()[-300:]}"}
    data = json.loads(proc.stdout)
    data["seconds"] = round(time.perf_counter() - started, 1)
    return data


def _ms(x: float) -> str:
    return f"{x:.2f}"


def print_model(name: str, batch: int, runs: dict[str, dict[str, Any]], diffs: dict[str, dict[str, Any]]) -> None:
    print(f"\n### {MODELS[name][1].format(batch=batch)}\n")
    print("| copy | layers in graphs | wrapped (graphed) | train ms | infer ms | train speedup | infer speedup "
          "| peak MB train | peak MB infer | loss curve max rel diff | output max rel diff |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    for variant, r in runs.items():
        if "error" in r:
            print(f"| {variant} | {r['error']} |")
            continue
        share = f"{r['layers_in_graphs']}/{r['layers']} ({100 * r['layers_in_graphs'] / r['layers']:.0f}%)"
        d = diffs.get(variant)
        speed = (f"{d['train_speedup']:.2f}x", f"{d['infer_speedup']:.2f}x") if d else ("", "")
        loss = (("0 (bitwise)" if d["loss_bitwise"] else f"{d['loss_max_rel']:.1e}") if d else "")
        outp = (("0 (bitwise)" if d["output_bitwise"] else f"{d['output_max_rel']:.1e}") if d else "")
        print(f"| {variant} | {share} | {r['wrapped']} ({r['graphed']}) | {_ms(r['train_ms'])} | {_ms(r['infer_ms'])} "
              f"| {speed[0]} | {speed[1]} | {r['train_peak_mb']:.0f} | {r['infer_peak_mb']:.0f} | {loss} | {outp} |")
    for variant, r in runs.items():
        for reason, layers in sorted(r.get("fallbacks", {}).items()):
            print(f"- {variant}: {layers} wrapped layer(s): {reason}")
        if r.get("eager_backwards"):
            print(f"- {variant}: {r['eager_backwards']} backward(s) ran eagerly on the captured graph")


def print_validation(name: str, data: dict[str, Any]) -> None:
    if "error" in data:
        print(f"- validate {name}: {data['error']}")
        return
    plan = data["plan"]
    print(f"\nvalidate {name} on {data['package']} ({data['backend']}, {data['steps']} steps, {data['seconds']} s): "
          f"plan {plan['outcome']}, {plan['runtime']['wrapped']} layers wrapped, exit {data['exit_code']}")
    by_class = {c["class"]: c for c in data["classes"]}
    for gap in data["disagreements"]:
        c = by_class[gap["class"]]
        why = f" -- {c['reasons'][0]}" if c["reasons"] else ""
        print(f"  {gap['kind']}: {gap['class']} {gap['verdict']}, run {gap['outcome']}: {c['detail']}{why}")
    if not data["disagreements"]:
        print("  no disagreements")


def run(args: argparse.Namespace) -> int:
    base: Path = args.dir
    if not (base / "eager").is_dir():
        print(f"e2e: {base} holds no prepared copies; run `python bench/e2e_gpu.py prepare` first", file=sys.stderr)
        return 2
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"steps": args.steps, "tolerance": TOLERANCE, "models": {}}
    if (base / "prepare.json").is_file():
        results["rewrite"] = json.loads((base / "prepare.json").read_text())
    failed = False
    for name in args.models:
        batch = args.batch or MODELS[name][0]
        package = "torch_lm" if name == "torch_lm" else "timm"
        rewrites = results.get("rewrite", {})
        same = rewrites.get(f"unknown/{package}") == rewrites.get(f"graphed/{package}")  # --wrap-unknown changed nothing
        runs = {r: run_worker(base, r, name, args.steps, batch, scratch, args.timeout) for r in RUNS if not (r == "unknown" and same)}
        diffs = {v: compare(runs["eager"], r) for v, r in runs.items() if v != "eager" and "error" not in r and "error" not in runs["eager"]}
        failed |= any("error" in r for r in runs.values()) or not all(d["identical"] for d in diffs.values())
        print_model(name, batch, runs, diffs)
        entry = {"batch": batch, "runs": {v: {k: x for k, x in r.items() if k != "losses"} for v, r in runs.items()}, "diffs": diffs}
        entry["losses"] = {v: r.get("losses") for v, r in runs.items()}
        if args.validate:
            entry["validate"] = run_validate(name, base / "eager", args.validate_steps, args.timeout, scratch)
            print_validation(name, entry["validate"])
        results["models"][name] = entry
        sys.stdout.flush()
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"\n{'FAILED' if failed else 'ok'}: loss curves and inference outputs of every graphed copy "
          f"{'differ from' if failed else 'match'} eager within a relative {TOLERANCE:g}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="copy and rewrite the packages (here; needs libcst)")
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    r = sub.add_parser("run", help="train and compare (on the GPU machine)")
    r.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    r.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    r.add_argument("--steps", type=int, default=50, help="training steps (and timed inference calls) per run")
    r.add_argument("--batch", type=int, default=0, help="override every model's batch size")
    r.add_argument("--validate", action="store_true", help="also run `autograph-cg validate` on each model")
    r.add_argument("--validate-steps", type=int, default=10)
    r.add_argument("--json", help="write all figures here")
    r.add_argument("--scratch", default=os.environ.get("TMPDIR", "/tmp") + "/autograph-cg-e2e")
    r.add_argument("--timeout", type=int, default=300, help="seconds per child process")
    w = sub.add_parser("worker", help="one model from one copy (internal)")
    w.add_argument("--src", type=Path, required=True)
    w.add_argument("--model", required=True)
    w.add_argument("--steps", type=int, required=True)
    w.add_argument("--batch", type=int, required=True)
    w.add_argument("--out", type=Path, required=True)
    w.add_argument("--whole", action="store_true", help="wrap the whole model in one CUDAGraphedLayer")
    args = parser.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.dir)
        return 0
    if args.cmd == "worker":
        if args.steps <= 10:
            parser.error("--steps must exceed 10 (the untimed warmup)")
        worker(args.src.resolve(), args.model, args.steps, args.batch, args.out, args.whole)
        return 0
    args.dir = args.dir.resolve()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
