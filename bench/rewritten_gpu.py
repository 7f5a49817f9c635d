"""transformers rewritten by `autograph-cg rewrite`, trained next to the untouched library on one GPU.

For BERT-, GPT-2- and Llama-style models (small configs, random init, no cache), one process per variant:
``eager`` (the installed library), ``rewritten`` (the rewritten copy first on the path: the default plan),
``rewritten+compile`` (the same with every wrapper compiling its layer, what ``rewrite --compile`` writes),
``by hand`` (the installed library with each decoder or encoder layer wrapped by hand),
``whole+compile`` (the installed library's whole model in one wrapper that compiles it first, what a
plan that wrapped the root with ``compile`` would give), and ``reduce-overhead`` (the whole model
under ``torch.compile(mode="reduce-overhead")``). Per variant: the
training step and the inference call (median ms), the losses of the first steps against eager's, the
eval output after `from_pretrained` of the checkpoint eager saved with `save_pretrained`, how many layers
sit inside graphs, and the runtime's fallbacks. `--pass-use-cache-false`: every call passes `use_cache=False`, as
training code that turns the cache off does (a decoder model's graph is guarded on it: left out, the library's
decorator fills it from the config, so the wrapper cannot know it is off).

`--paired`: the speeds again, all variants of a model in one process, built from the rewritten copy (``eager``
is it with every wrapper undone), their training steps and inference calls timed in alternating rounds, so that
a host whose speed drifts between processes (the GPU host's eager step varied 7-14 ms between runs) slows
every variant alike.

`--generate`: greedy generation with the cache on (the configs' `use_cache` turned on), the rewritten model against
itself with every wrapper undone: the tokens must be equal, and the guarded wrappers run eagerly with their reason.

    python3 bench/rewritten_gpu.py --rewritten /tmp/rw [--models bert,gpt2,llama] [--variants ...] [--paired]
        [--optimizer adamw|adamw-fused|sgd|none] [--json out]
    python3 bench/rewritten_gpu.py --rewritten /tmp/rw --models gpt2,llama --generate
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("eager", "rewritten", "rewritten+compile", "by hand", "whole+compile", "reduce-overhead")
BATCH, SEQ, WARMUP, TIMED = 8, 128, 8, 20
OPTIMIZERS = ("adamw", "adamw-fused", "sgd", "none")
OPTIMIZER_ENV = "AUTOGRAPH_CG_BENCH_OPTIMIZER"


def optimizer(model: Any) -> Any:
    """The training step's optimizer, the same for every variant; chosen by the parent's `--optimizer`.

    ``adamw`` is torch's default AdamW (its multi-tensor path: host work per parameter on every step, which no graph
    of the model removes), ``adamw-fused`` its one-kernel path, ``sgd`` plain SGD, ``none`` no update (forward and
    backward alone, what the model's layers take of a step): they show how much of a step the optimizer holds once
    the model runs from graphs.
    """
    import torch

    kind = os.environ.get(OPTIMIZER_ENV, "adamw")
    if kind == "none":
        return _NoUpdate(model)
    if kind == "sgd":
        return torch.optim.SGD(model.parameters(), lr=1e-3)
    return torch.optim.AdamW(model.parameters(), lr=1e-4, fused=kind == "adamw-fused")


class _NoUpdate:
    """A training step without the optimizer's update: gradients are computed and dropped."""

    def __init__(self, model: Any) -> None:
        self.params = list(model.parameters())

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        pass


def build(name: str) -> tuple[Any, Any, str]:
    import torch
    import transformers

    torch.manual_seed(0)
    common = dict(vocab_size=1024, attn_implementation="sdpa", use_cache=False)
    if name == "bert":
        cfg = transformers.BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                                      max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0, **common)
        return transformers.BertForMaskedLM(cfg), "layer", "bert.encoder"
    if name == "gpt2":
        cfg = transformers.GPT2Config(n_embd=256, n_layer=4, n_head=4, n_positions=SEQ, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0, **common)
        return transformers.GPT2LMHeadModel(cfg), "h", "transformer"
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=SEQ, **common)
    return transformers.LlamaForCausalLM(cfg), "layers", "model"


def worker(name: str, variant: str, no_cache: bool = False) -> dict[str, Any]:
    import torch

    import autograph_cg.runtime as runtime

    if variant == "rewritten+compile":  # what `rewrite --compile` writes: every wrapper compiles its layer
        plain = runtime.CUDAGraphedLayer

        def compiling(layer: Any, *args: Any, **kwargs: Any) -> Any:
            return plain(layer, *args, compile=True, **kwargs)

        runtime.CUDAGraphedLayer = compiling  # type: ignore[assignment,misc]
    model, blocks, owner = build(name)
    model = model.cuda()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 1024, (BATCH, SEQ), generator=g).cuda()
    # Checkpoints both ways: eager saves its initial weights with save_pretrained; every variant loads
    # them with from_pretrained (the rewritten copy loads the untouched library's checkpoint) and its
    # eval output is compared with eager's.
    ckpt = Path(os.environ.get("AUTOGRAPH_CG_BENCH_CKPT", "/tmp/autograph-cg-rewritten")) / name
    if variant == "eager":
        model.save_pretrained(ckpt)
    loaded = type(model).from_pretrained(ckpt).cuda().eval()
    with torch.no_grad():
        loaded_sum = float(loaded(input_ids=ids).logits.double().sum())
    del loaded
    model.train()
    if variant == "by hand":
        for block in model.get_submodule(owner).get_submodule(blocks):
            runtime.CUDAGraphedLayer(block)
    if variant == "whole+compile":
        runtime.CUDAGraphedLayer(model, compile=True)
    step_model = torch.compile(model, mode="reduce-overhead") if variant == "reduce-overhead" else model
    opt = optimizer(model)

    extra = {"use_cache": False} if no_cache else {}

    def train_step() -> float:
        opt.zero_grad(set_to_none=True)
        out = step_model(input_ids=ids, labels=ids, **extra)
        out.loss.backward()
        opt.step()
        return out.loss

    losses, times = [], []
    for i in range(WARMUP + TIMED):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = train_step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        losses.append(float(loss))
    model.eval()
    infer = []
    with torch.no_grad():
        for i in range(WARMUP + TIMED):
            torch.cuda.synchronize()
            start = time.perf_counter()
            step_model(input_ids=ids, **extra)
            torch.cuda.synchronize()
            infer.append(time.perf_counter() - start)
    stats = runtime.layer_stats()
    inside = sum(1 for s in stats if s["state"] == "graphed")
    return {
        "model": name,
        "variant": variant,
        "train_ms": statistics.median(times[WARMUP:]) * 1e3,
        "infer_ms": statistics.median(infer[WARMUP:]) * 1e3,
        "losses": losses,
        "loaded_logits_sum": loaded_sum,
        "wrappers": len(stats),
        "graphed": inside,
        "fallbacks": sorted({r for s in stats for r in s["fallbacks"]} | {s["disabled_reason"] for s in stats if s["disabled_reason"]}),
    }


ROUNDS, PER_ROUND = 6, 25  # --paired: rounds of alternating variants, steps of each per round


def paired_worker(name: str, variants: list[str], no_cache: bool = False) -> list[dict[str, Any]]:
    """Every variant of one model in this process, timed in alternating rounds (`--paired`)."""
    import torch

    import autograph_cg.runtime as runtime
    from autograph_cg.runtime import graphed

    plain, compiling = runtime.CUDAGraphedLayer, [False]

    def factory(layer: Any, *args: Any, **kwargs: Any) -> Any:  # the rewritten copy's wrapper calls land here
        return plain(layer, *args, compile=compiling[0], **kwargs)

    runtime.CUDAGraphedLayer = factory  # type: ignore[assignment,misc]

    def made(variant: str) -> Any:
        compiling[0] = variant == "rewritten+compile"
        model, blocks, owner = build(name)
        model = model.cuda().train()
        if variant.startswith("rewritten"):
            return model
        for layer in model.modules():
            if graphed.is_graphed(layer):
                runtime.unwrap(layer)
        if variant == "by hand":
            for block in model.get_submodule(owner).get_submodule(blocks):
                plain(block)
        elif variant == "whole+compile":
            plain(model, compile=True)
        return model

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, 1024, (BATCH, SEQ), generator=g).cuda()
    extra = {"use_cache": False} if no_cache else {}
    models, steps, calls, losses = {}, {}, {}, {}
    for variant in variants:
        model = made(variant)
        step_model = torch.compile(model, mode="reduce-overhead") if variant == "reduce-overhead" else model
        opt = optimizer(model)

        def train_step(step_model: Any = step_model, opt: Any = opt) -> float:
            opt.zero_grad(set_to_none=True)
            out = step_model(input_ids=ids, labels=ids, **extra)
            out.loss.backward()
            opt.step()
            return out.loss

        def infer(step_model: Any = step_model) -> None:
            with torch.no_grad():
                step_model(input_ids=ids, **extra)

        losses[variant] = [float(train_step()) for _ in range(WARMUP)]
        model.eval()
        for _ in range(WARMUP):
            infer()
        models[variant], steps[variant], calls[variant] = model, train_step, infer
    timed: dict[str, dict[str, list[float]]] = {v: {"train": [], "infer": []} for v in variants}
    for _ in range(ROUNDS):
        for kind, fns in (("train", steps), ("infer", calls)):
            for variant, fn in fns.items():
                models[variant].train(kind == "train")
                for _ in range(PER_ROUND):
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    fn()
                    torch.cuda.synchronize()
                    timed[variant][kind].append(time.perf_counter() - start)
    stats = runtime.layer_stats()
    return [
        {
            "model": name,
            "variant": variant,
            "train_ms": statistics.median(timed[variant]["train"]) * 1e3,
            "infer_ms": statistics.median(timed[variant]["infer"]) * 1e3,
            "losses": losses[variant],
            "paired": True,
        }
        for variant in variants
    ] + [{"model": name, "fallbacks": sorted({r for s in stats for r in s["fallbacks"]} | {s["disabled_reason"] for s in stats if s["disabled_reason"]})}]


def generate_worker(name: str, tokens: int = 12) -> dict[str, Any]:
    """Greedy generation with the cache on through the rewritten copy and through the same model with every wrapper
    undone (same weights): the tokens, and what the wrappers did (guarded ones run eagerly with their reason)."""
    import collections

    import torch

    import autograph_cg.runtime as runtime
    from autograph_cg.runtime import graphed

    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU: with AUTOGRAPH_CG_BACKEND=standin
    models = []
    for undo in (False, True):
        model, _, _ = build(name)
        if undo:
            for layer in model.modules():
                if graphed.is_graphed(layer):
                    runtime.unwrap(layer)
            model.load_state_dict(models[0].state_dict())
        model.config.use_cache = model.generation_config.use_cache = True
        models.append(model.to(device).eval())
    ids = torch.randint(1, 1024, (2, 8), generator=torch.Generator().manual_seed(3)).to(device)
    with torch.no_grad():
        outs = [m.generate(ids, max_new_tokens=tokens, do_sample=False, pad_token_id=0) for m in (*models, models[0])]
    fallbacks: collections.Counter = collections.Counter()
    replays = wrappers = 0
    for layer in models[0].modules():
        if graphed.is_graphed(layer):
            stats = runtime.stats_of(layer)
            wrappers += 1
            replays += stats["forward_replays"]
            fallbacks.update(stats["fallbacks"])
    equal = all(bool((o.cpu() == outs[1].cpu()).all()) for o in (outs[0], outs[2]))
    return {"model": name, "tokens_equal": equal, "wrappers": wrappers, "replays": replays, "fallbacks": dict(fallbacks)}


def generate(rewritten: Path, models: list[str], timeout: int) -> list[dict[str, Any]]:
    rows = []
    for name in models:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(rewritten), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run([sys.executable, __file__, "generate", name], env=env, capture_output=True, text=True, timeout=timeout)
        lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
        row = json.loads(lines[-1]) if lines and not proc.returncode else {"model": name, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
        rows.append(row)
        print(f"{name:6} " + (f"ERROR {row['error'][:200]}" if "error" in row else
              f"generate: tokens equal to unwrapped {row['tokens_equal']}, {row['wrappers']} wrappers, {row['replays']} replays, "
              f"eager calls by reason {row['fallbacks']}"), flush=True)
    return rows


def run(rewritten: Path, models: list[str], variants: list[str], timeout: int, no_cache: bool = False,
        paired: bool = False, optimizer_kind: str = "adamw") -> list[dict[str, Any]]:
    rows = []
    for name in models:
        for variant in [",".join(variants)] if paired else variants:
            path = [str(rewritten)] if paired or variant.startswith("rewritten") else []
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   OPTIMIZER_ENV: optimizer_kind}
            command = [sys.executable, __file__, "paired" if paired else "worker", name, variant]
            proc = subprocess.run(command + (["no-cache"] if no_cache else []), env=env, capture_output=True,
                                  text=True, timeout=timeout)
            lines = [l for l in proc.stdout.splitlines() if l.startswith(("{", "["))]
            if proc.returncode or not lines:
                rows.append({"model": name, "variant": variant, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]})
                print(summary(rows[-1], rows), flush=True)
                continue
            got = json.loads(lines[-1])
            for row in got if paired else [got]:
                rows.append(row)
                print(summary(row, rows) if "variant" in row else f"{name:6} fallbacks {row['fallbacks']}", flush=True)
    return rows


def summary(row: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    if "error" in row:
        return f"{row['model']:6} {row['variant']:18} ERROR {row['error'][:200]}"
    eager = next((r for r in rows if r["model"] == row["model"] and r.get("variant") == "eager" and "error" not in r), None)
    speed = f"{eager['train_ms'] / row['train_ms']:.2f}x / {eager['infer_ms'] / row['infer_ms']:.2f}x" if eager else ""
    if row.get("paired"):
        same = _same(row, eager) if eager else ""
        return (f"{row['model']:6} {row['variant']:18} train {row['train_ms']:7.2f} ms infer {row['infer_ms']:6.2f} ms "
                f"speedup {speed:14} losses vs eager {same}")
    same = loads = ""
    if eager:
        same = _same(row, eager)
        loads = "equal" if row["loaded_logits_sum"] == eager["loaded_logits_sum"] else "DIFFERS"
    return (f"{row['model']:6} {row['variant']:18} train {row['train_ms']:7.2f} ms infer {row['infer_ms']:6.2f} ms "
            f"speedup {speed:14} losses vs eager {same:8} eager's checkpoint loads {loads:7} "
            f"graphed {row['graphed']}/{row['wrappers']} "
            f"fallbacks {'; '.join(row['fallbacks'])[:150]}")


def _same(row: dict[str, Any], eager: dict[str, Any]) -> str:
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(row["losses"], eager["losses"]))
    return "bitwise" if worst == 0 else f"{worst:.1e}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "worker":
        print(json.dumps(worker(argv[1], argv[2], argv[3:] == ["no-cache"])), flush=True)
        return 0
    if argv and argv[0] == "generate":
        print(json.dumps(generate_worker(argv[1])), flush=True)
        return 0
    if argv and argv[0] == "paired":
        print(json.dumps(paired_worker(argv[1], argv[2].split(","), argv[3:] == ["no-cache"])), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rewritten", type=Path, required=True, help="the folder holding the rewritten transformers")
    parser.add_argument("--models", default="bert,gpt2,llama")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--json", default="")
    parser.add_argument("--pass-use-cache-false", action="store_true", help="every call passes use_cache=False")
    parser.add_argument("--paired", action="store_true", help="all variants of a model in one process, timed in turns")
    parser.add_argument("--generate", action="store_true", help="greedy generation with the cache on, against unwrapped")
    parser.add_argument("--optimizer", choices=OPTIMIZERS, default="adamw", help="the training step's optimizer "
                        "(default: torch's default AdamW)")
    args = parser.parse_args(argv)
    rows = generate(args.rewritten, args.models.split(","), args.timeout) if args.generate else run(args.rewritten, args.models.split(","), args.variants.split(","), args.timeout, args.pass_use_cache_false,
               args.paired, args.optimizer)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
