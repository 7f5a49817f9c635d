"""Where a wrapped timm model's training memory goes, phase by phase, with the first-replay check on and off.

For each model and run (``eager``: the untouched copy; ``graphed``: the copy `rewrite` made;
``whole``: the untouched copy wrapped whole by hand), one process: five inference calls, then eight SGD
steps, with ``memory_allocated`` and the peak since the previous mark after each call, forward,
backward and optimizer step (captures happen in the first steps, so the training peak includes
them). ``--verify off`` builds every wrapper with ``verify=False``. Uses the copies that
``bench/e2e_gpu.py prepare`` makes (``.carry/e2e/{eager,graphed}``).

    python3 bench/memory_gpu.py [--models resnet18 convnext_atto] [--verify on off] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DIR = REPO / ".carry" / "e2e"
RUNS = {"eager": "eager", "graphed": "graphed", "whole": "eager"}  # run -> prepared copy
MB = 2**20


def worker(src: Path, name: str, run: str, verify: bool) -> dict[str, Any]:
    sys.path[:0] = [str(src), str(REPO)]
    import torch
    import torch.nn.functional as F

    import autograph_cg.runtime as runtime

    plain = runtime.CUDAGraphedLayer

    def wrap(layer: Any, *args: Any, **kwargs: Any) -> Any:
        return plain(layer, *args, **{"verify": verify, **kwargs})

    runtime.CUDAGraphedLayer = wrap  # type: ignore[assignment,misc]  # before the copy imports it
    import timm

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).cuda()
    x = torch.randn(8, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (8,), device="cuda")
    call = wrap(model) if run == "whole" else model
    marks: list[tuple[str, float, float]] = []

    def mark(what: str) -> None:
        torch.cuda.synchronize()
        marks.append((what, torch.cuda.memory_allocated() / MB, torch.cuda.max_memory_allocated() / MB))
        torch.cuda.reset_peak_memory_stats()

    mark("built")
    model.eval()
    with torch.no_grad():
        for i in range(5):
            call(x)
            mark(f"infer {i}")
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for i in range(8):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(call(x), y)
        mark(f"forward {i}")
        loss.backward()
        mark(f"backward {i}")
        opt.step()
        del loss
        mark(f"step {i}")
    stats = runtime.layer_stats()
    return {
        "model": name,
        "run": run,
        "verify": verify,
        "marks": marks,
        "infer_peak_mb": max(peak for what, _, peak in marks if what.startswith("infer")),
        "train_peak_mb": max(peak for what, _, peak in marks if not what.startswith(("infer", "built"))),
        "held_after_mb": marks[-1][1],
        "capture_ms": sum(s["capture_ms"] for s in stats),
        "wrappers": [(s["name"], s["state"], s["captures"], s["disabled_reason"]) for s in stats],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "worker":
        print(json.dumps(worker(Path(argv[1]), argv[2], argv[3], argv[4] == "on")))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--models", nargs="+", default=["resnet18", "convnext_atto"])
    parser.add_argument("--verify", nargs="+", default=["on", "off"], choices=["on", "off"])
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)
    rows = []
    print("| model | run | verify | peak MB inference | peak MB training (captures included) | x eager | held after MB | capture ms |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.models:
        eager_peak = None
        for run, copy in RUNS.items():
            for verify in (["on"] if run == "eager" else args.verify):
                cmd = [sys.executable, __file__, "worker", str(args.dir.resolve() / copy), name, run, verify]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
                if proc.returncode or not lines:
                    print(f"| {name} | {run} | {verify} | error: {(proc.stderr.strip().splitlines() or ['?'])[-1][:150]} |")
                    continue
                row = json.loads(lines[-1])
                rows.append(row)
                eager_peak = row["train_peak_mb"] if run == "eager" else eager_peak
                ratio = f"{row['train_peak_mb'] / eager_peak:.2f}" if eager_peak else ""
                shown = "" if run == "eager" else verify
                print(f"| {name} | {run} | {shown} | {row['infer_peak_mb']:.0f} | {row['train_peak_mb']:.0f} | {ratio} "
                      f"| {row['held_after_mb']:.0f} | {row['capture_ms']:.0f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
