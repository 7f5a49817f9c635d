"""Whole models of a real model library wrapped in one CUDAGraphedLayer, trained next to eager: exact or eager.

For each model (small configs of transformers' BERT, GPT-2, Llama and T5, random init from seed 0), copies
train from the same weights on the same batches with AdamW for ``--steps`` steps: ``eager``, a second
``eager`` (what eager differs from itself), ``wrapped`` (the whole model in one ``CUDAGraphedLayer``; again
with ``verify=False`` to time the first-replay check), and ``eager, capture path``: transformers takes
another code path while a CUDA stream captures (``is_tracing()``: attention masks built as tensors where
eagerly it passes ``None`` or ``is_causal``), which rounds differently; this eager run is told it captures,
so it takes the path the graph recorded; ``eager, capture path from capture`` takes it from the step the
wrapper captures on (its warmup steps run eagerly on the usual path): what the wrapped run computes if its
graph is exact. Per step the losses and every parameter's gradient are compared with eager's, and which
parameters have a gradient at all. Prints one row per model and writes JSON. ``--sdp math`` keeps SDPA
on its math kernel, which both of transformers' paths then share.

    python3 bench/exact_gpu.py [--steps 100] [--models bert,gpt2,llama,t5] [--sdp math] [--json exact.json]
    AUTOGRAPH_CG_BACKEND=standin python bench/exact_gpu.py --device cpu --steps 3   # the CPU stand-in
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import sys
import time
from typing import Any, Callable, Iterator

BATCH, SEQ, VOCAB = 4, 32, 512


def configs(transformers: Any, attn: str) -> dict[str, Callable[[], tuple[Any, Callable[[Any, dict], Any]]]]:
    """Per model: a factory of (model, loss of a batch)."""
    common = dict(vocab_size=VOCAB, attn_implementation=attn)

    def bert() -> tuple[Any, Callable]:
        cfg = transformers.BertConfig(
            hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=64, **common,
        )
        # BertModel: its pooler's output is not in the loss, so eager leaves the pooler without gradients.
        return transformers.BertModel(cfg), lambda m, b: m(input_ids=b["ids"]).last_hidden_state.square().mean()

    def gpt2() -> tuple[Any, Callable]:
        cfg = transformers.GPT2Config(n_embd=256, n_layer=2, n_head=4, n_positions=64, resid_pdrop=0.0,
                                      embd_pdrop=0.0, attn_pdrop=0.0, **common)
        return transformers.GPT2LMHeadModel(cfg), lambda m, b: m(input_ids=b["ids"], labels=b["ids"], use_cache=False).loss

    def llama() -> tuple[Any, Callable]:
        cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                       **common)
        return transformers.LlamaForCausalLM(cfg), lambda m, b: m(input_ids=b["ids"], labels=b["ids"], use_cache=False).loss

    def t5() -> tuple[Any, Callable]:
        cfg = transformers.T5Config(d_model=256, d_ff=512, num_layers=2, num_heads=4, d_kv=64, dropout_rate=0.0,
                                    decoder_start_token_id=0, **common)
        return transformers.T5ForConditionalGeneration(cfg), lambda m, b: m(
            input_ids=b["ids"], labels=b["labels"], use_cache=False
        ).loss

    return {"bert": bert, "gpt2": gpt2, "llama": llama, "t5": t5}


def batches(torch: Any, steps: int, device: str) -> list[dict]:
    g = torch.Generator().manual_seed(1)
    return [
        {k: torch.randint(1, VOCAB, (BATCH, SEQ), generator=g).to(device) for k in ("ids", "labels")}
        for _ in range(steps)
    ]


def sync(torch: Any) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def train(
    torch: Any, model: Any, loss_of: Callable, data: list[dict], follow: list | None = None, clock: list | None = None
) -> tuple[list, list, float, list]:
    """Losses and per step the gradients (None where there is none); seconds for all steps; the
    parameters after each step. With ``follow`` (another run's parameters after each step), each step
    starts from that run's parameters: a difference is then that step's own, not one compounded
    by the optimizer (AdamW turns a rounding difference in a near-zero gradient into a whole step).
    ``clock`` (a one-item list) is set to each step's number before the step runs."""
    clock = clock if clock is not None else [0]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    params = list(model.parameters())
    losses, grads, after = [], [], []
    sync(torch)
    start = time.perf_counter()
    for step, batch in enumerate(data):
        clock[0] = step
        opt.zero_grad(set_to_none=True)
        loss = loss_of(model, batch)
        loss.backward()
        losses.append(loss.detach().clone())
        grads.append([None if p.grad is None else p.grad.detach().clone() for p in params])
        opt.step()
        if follow is not None:
            with torch.no_grad():
                for p, value in zip(params, follow[step]):
                    p.copy_(value)
        else:
            after.append([p.detach().clone() for p in params])
    sync(torch)
    return losses, grads, time.perf_counter() - start, after


# A gradient is compared relative to its own largest value, but never to less than this share of the
# largest gradient of its step (as validate does): a gradient that is zero in exact arithmetic (the bias
# of an attention key) holds rounding noise, which differs between any two summation orders.
NOISE_FLOOR = 1e-4


def difference(torch: Any, got: tuple, want: tuple, names: list[str]) -> dict[str, Any]:
    """Largest relative difference of the losses and the gradients, whether gradient presence matches,
    the first step that differs (with its most different gradient) and each step's difference."""
    loss = max(float((a - b).abs() / b.abs().clamp_min(1e-12)) for a, b in zip(got[0], want[0]))
    grad, presence, first, steps = 0.0, True, None, []
    for step, (mine, ref) in enumerate(zip(got[1], want[1])):
        worst = (0.0, "")
        floor = NOISE_FLOOR * max((float(b.abs().max()) for b in ref if b is not None), default=0.0)
        for name, a, b in zip(names, mine, ref):
            if (a is None) != (b is None):
                presence = False
            elif a is not None:
                worst = max(worst, (float((a - b).abs().max()) / max(float(b.abs().max()), floor, 1e-30), name))
        grad = max(grad, worst[0])
        steps.append(worst[0])
        step_loss = float((got[0][step] - want[0][step]).abs())
        if first is None and (worst[0] or step_loss):
            first = {"step": step, "loss": step_loss, "grad": worst[0], "parameter": worst[1]}
    bitwise = loss == 0.0 and grad == 0.0
    return {"loss": loss, "grad": grad, "presence": presence, "bitwise": bitwise, "first": first, "steps": steps}


@contextlib.contextmanager
def capture_path(transformers: Any, on: Callable[[], bool]) -> Iterator[None]:
    """Make transformers believe a CUDA stream captures (its ``is_tracing()`` then says so) while ``on()``."""
    utils = transformers.utils.import_utils
    if not hasattr(utils, "is_cuda_stream_capturing"):
        yield
        return
    saved = utils.is_cuda_stream_capturing
    utils.is_cuda_stream_capturing = lambda: on() or saved()
    try:
        yield
    finally:
        utils.is_cuda_stream_capturing = saved


RUNS = ("eager", "eager again", "eager, capture path", "eager, capture path from capture", "wrapped", "wrapped, verify=False")
WARMUP = 3  # CUDAGraphedLayer's num_warmup_steps: the wrapped run's first three steps run eagerly


@contextlib.contextmanager
def kernels(torch: Any, sdp: str) -> Iterator[None]:
    """SDPA limited to its math kernel, or as it chooses."""
    if sdp == "any":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--models", default="bert,gpt2,llama,t5")
    parser.add_argument("--json", default="")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--follow", action="store_true", help="each step from eager's parameters (per-step differences)")
    parser.add_argument("--attn", default="sdpa", help="the models' attn_implementation: sdpa or eager")
    parser.add_argument("--deterministic", action="store_true", help="torch.use_deterministic_algorithms(True)")
    parser.add_argument("--sdp", choices=("any", "math"), default="any", help="the SDPA kernels allowed")
    args = parser.parse_args()
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import transformers

    from autograph_cg.runtime import CUDAGraphedLayer, stats_of

    if args.deterministic:
        torch.use_deterministic_algorithms(True)

    data = batches(torch, args.steps, args.device)
    rows = []
    for name in args.models.split(","):
        torch.manual_seed(0)
        base, loss_of = configs(transformers, args.attn)[name]()
        base = base.to(args.device).train()
        runs: dict[str, tuple] = {}
        stats: dict[str, Any] = {}
        names = [n for n, _ in base.named_parameters()]
        for run in RUNS:
            model = copy.deepcopy(base)
            if run.startswith("wrapped"):
                model = CUDAGraphedLayer(model, verify=run == "wrapped", name=f"{name} {run}")
            torch.manual_seed(2)
            clock = [0]
            on = {
                "eager, capture path": lambda: True,
                "eager, capture path from capture": lambda: clock[0] >= WARMUP,
            }.get(run, lambda: False)
            with capture_path(transformers, on), kernels(torch, args.sdp):
                runs[run] = train(
                    torch, model, loss_of, data, runs["eager"][3] if args.follow and run != "eager" else None, clock
                )
            if run.startswith("wrapped"):
                stats[run] = stats_of(model)
            del model
        row = {
            "model": name,
            "steps": args.steps,
            "follow": args.follow,
            "noise": difference(torch, runs["eager again"], runs["eager"], names),
            "wrapped": difference(torch, runs["wrapped"], runs["eager"], names),
            "capture path": difference(torch, runs["eager, capture path"], runs["eager"], names),
            "wrapped vs capture path": difference(torch, runs["wrapped"], runs["eager, capture path"], names),
            "wrapped vs capture path from capture": difference(
                torch, runs["wrapped"], runs["eager, capture path from capture"], names
            ),
            "unchecked": difference(torch, runs["wrapped, verify=False"], runs["eager"], names),
            "seconds": {run: round(r[2], 4) for run, r in runs.items()},
            "stats": stats,
        }
        check = stats["wrapped"]
        row["verify_cost"] = (runs["wrapped"][2] - runs["wrapped, verify=False"][2]) / runs["wrapped, verify=False"][2]
        # The check's own time, measured inside the runtime: the wall times of two runs differ by more.
        row["check_share"] = check["check_ms"] / 1e3 / runs["wrapped"][2]
        rows.append(row)
        w, n = row["wrapped"], row["noise"]
        print(
            f"{name:6} loss {w['loss']:.1e} grad {w['grad']:.1e} presence {w['presence']} bitwise {w['bitwise']} "
            f"first {w['first']} steps {' '.join(f'{x:.0e}' for x in w['steps'][:12])} | unchecked {row['unchecked']['grad']:.1e} | "
            f"vs eager on the capture path: loss {row['wrapped vs capture path']['loss']:.1e} "
            f"grad {row['wrapped vs capture path']['grad']:.1e}, from the capture step: "
            f"loss {row['wrapped vs capture path from capture']['loss']:.1e} "
            f"grad {row['wrapped vs capture path from capture']['grad']:.1e} | "
            f"eager vs eager loss {n['loss']:.1e} grad {n['grad']:.1e} | state {check['state']} "
            f"captures {check['captures']} eager calls {check['eager_calls']} "
            f"reason {check['disabled_reason']} | s: {row['seconds']} check {check['check_ms']:.0f} ms "
            f"({row['check_share']:.2%} of the wrapped run; wall difference {row['verify_cost']:+.1%})",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
