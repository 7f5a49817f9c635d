"""A zoo of real models from transformers, timm, torchvision, diffusers and paddlenlp, for `autograph-cg validate`.

Every model is built from a small configuration with random weights (no download), with inputs and a
loss, as a factory `validate` takes (`zoo:make` with the model's name in ``AUTOGRAPH_CG_ZOO_MODEL``, or
the ``zoo:<name>`` functions below). ``run`` validates the whole zoo, several models at a time, each in a
process of its own: per model the plan's pass, every layer class wrapped alone, training and inference,
against eager; the report is one line per model and the JSON of every run.

    python3 bench/zoo.py list
    python3 bench/zoo.py run [--only bert,resnet18] [--jobs 8] [--steps 4] [--json zoo.json]
    AUTOGRAPH_CG_BACKEND=standin python bench/zoo.py run --only fixtures/torch_lm   # the CPU stand-in
    AUTOGRAPH_CG_BACKEND=standin python bench/zoo.py run --library paddlenlp         # Paddle, on CPU

paddlenlp's models are built as `bench/dropin.py` builds them (small configs, its own folder of pinned packages,
installed with pip on first use); Paddle's GPU wheels cannot compute on the H200 here, so they run on CPU Paddle
with the stand-in.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = ROOT / "fixtures"
BATCH, SEQ, VOCAB, IMAGE = 2, 16, 256, 64

# transformers: (config class, model class, config overrides, input kind)
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=VOCAB)
TRANSFORMERS: dict[str, tuple[str, str, dict, str]] = {
    "bert": ("BertConfig", "BertForMaskedLM", {"max_position_embeddings": 64}, "text"),
    "roberta": ("RobertaConfig", "RobertaForMaskedLM", {"max_position_embeddings": 64}, "text"),
    "distilbert": ("DistilBertConfig", "DistilBertForMaskedLM", {"dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 128}, "text"),
    "electra": ("ElectraConfig", "ElectraForMaskedLM", {"embedding_size": 64}, "text"),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"n_positions": 64}, "causal"),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {"max_position_embeddings": 64}, "causal"),
    "llama": ("LlamaConfig", "LlamaForCausalLM", {"num_key_value_heads": 2, "max_position_embeddings": 64}, "causal"),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"num_key_value_heads": 2, "max_position_embeddings": 64}, "causal"),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {"num_key_value_heads": 2, "max_position_embeddings": 64}, "causal"),
    "opt": ("OPTConfig", "OPTForCausalLM", {"ffn_dim": 128, "max_position_embeddings": 64, "word_embed_proj_dim": 64}, "causal"),
    "t5": ("T5Config", "T5ForConditionalGeneration", {"d_model": 64, "d_ff": 128, "num_layers": 2, "num_heads": 4, "d_kv": 16, "decoder_start_token_id": 0}, "seq2seq"),
    "bart": ("BartConfig", "BartForConditionalGeneration", {"d_model": 64, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "max_position_embeddings": 64}, "seq2seq"),
    "vit": ("ViTConfig", "ViTForImageClassification", {"image_size": IMAGE, "patch_size": 16, "num_labels": 10}, "image"),
}
TIMM = ("resnet18", "convnext_atto", "vit_tiny_patch16_224", "mixer_s16_224", "efficientnet_b0",
        "mobilenetv3_small_100", "deit_tiny_patch16_224", "regnetx_002")
TORCHVISION = ("resnet18", "mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2_x0_5", "squeezenet1_0",
               "regnet_x_400mf", "convnext_tiny")
DIFFUSERS = ("unet2d", "autoencoder_kl")
# paddlenlp: names of bench/dropin.py's PN_MODELS (class, input kind, config overrides)
PADDLENLP = ("bert", "gpt", "llama", "qwen", "chatglm_v2", "bart", "mt5")


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() and os.environ.get("AUTOGRAPH_CG_BACKEND") != "standin" else "cpu"


def _transformers(name: str) -> tuple[Any, tuple, Callable]:
    import torch
    import transformers

    config_cls, model_cls, extra, kind = TRANSFORMERS[name]
    torch.manual_seed(0)
    config = getattr(transformers, config_cls)(**{**SMALL, **extra})
    config.use_cache = False  # training: no key/value cache (generation passes one; guarded layers then run eagerly)
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout", "dropout_rate",
                "resid_pdrop", "embd_pdrop", "attn_pdrop", "hidden_dropout", "attention_dropout_prob"):
        if hasattr(config, key):
            setattr(config, key, 0.0)
    model = getattr(transformers, model_cls)(config)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
    if kind == "image":
        pixels = torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g)
        labels = torch.randint(0, 10, (BATCH,), generator=g)
        return model, (pixels,), lambda m, out, x: torch.nn.functional.cross_entropy(out.logits, labels.to(x.device))
    if kind == "seq2seq":  # forward(input_ids, attention_mask, decoder_input_ids)
        return model, (ids, None, ids), lambda m, out, x, mask, y: torch.nn.functional.cross_entropy(
            out.logits.flatten(0, -2).float(), y.flatten()
        )
    return model, (ids,), lambda m, out, x: torch.nn.functional.cross_entropy(
        out.logits.flatten(0, -2).float(), x.flatten()
    )


def _image(model: Any) -> tuple[Any, tuple, Callable]:
    import torch

    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g)
    labels = torch.randint(0, 10, (BATCH,), generator=g)
    return model, (x,), lambda m, out, inp: torch.nn.functional.cross_entropy(out[:, :10].float(), labels.to(inp.device))


def _timm(name: str) -> tuple[Any, tuple, Callable]:
    import timm
    import torch

    torch.manual_seed(0)
    kwargs = {"img_size": IMAGE} if "vit" in name or "deit" in name or "mixer" in name else {}
    return _image(timm.create_model(name, pretrained=False, num_classes=10, **kwargs))


def _torchvision(name: str) -> tuple[Any, tuple, Callable]:
    import torch
    import torchvision

    torch.manual_seed(0)
    return _image(getattr(torchvision.models, name)(weights=None, num_classes=10))


def _diffusers(name: str) -> tuple[Any, tuple, Callable]:
    import diffusers
    import torch

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, 3, 32, 32, generator=g)
    if name == "unet2d":
        model = diffusers.UNet2DModel(
            sample_size=32, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(32, 64),
            down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
            norm_num_groups=8,
        )
        steps = torch.randint(0, 1000, (BATCH,), generator=g)
        return model, (x, steps), lambda m, out, inp, t: out.sample.float().pow(2).mean()
    model = diffusers.AutoencoderKL(
        in_channels=3, out_channels=3, block_out_channels=(32, 64), down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=8,
    )
    return model, (x,), lambda m, out, inp: out.sample.float().pow(2).mean()


def _paddlenlp(name: str) -> tuple[Any, tuple]:
    """Loss: validate's default over the outputs (logits, or a pretraining head's scores)."""
    import dropin
    import paddle
    import paddlenlp.transformers as pn

    class_name, kind, overrides = dropin.PN_MODELS[name]
    cls = getattr(pn, class_name)
    paddle.seed(0)
    config = dropin.small_config(pn.PretrainedConfig, cls.config_class, overrides)
    config.use_cache = False  # training: no key/value cache
    model = cls(config)
    ids = paddle.randint(4, config.vocab_size, (BATCH, SEQ))
    if kind == "seq2seq":  # forward(input_ids, attention_mask, decoder_input_ids)
        return model, (ids, None, paddle.randint(4, config.vocab_size, (BATCH, SEQ - 2)))
    return model, (ids,)


def _fixture(name: str) -> tuple[Any, tuple, Callable]:
    """The bundled fixture package's model (no library needed: what CI's sample runs)."""
    module = importlib.import_module(name)
    model, inputs = module.make_model()
    return model, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), module.loss_fn


def models() -> dict[str, tuple[str, Callable[[], tuple]]]:
    """Every model of the zoo: name -> (library, factory)."""
    out: dict[str, tuple[str, Callable[[], tuple]]] = {
        "fixtures/torch_lm": ("torch", lambda: _fixture("torch_lm")),
        "fixtures/paddle_lm": ("paddle", lambda: _fixture("paddle_lm")),
    }
    for name in TRANSFORMERS:
        out[name] = ("transformers", lambda n=name: _transformers(n))
    for name in TIMM:
        out[f"timm/{name}"] = ("timm", lambda n=name: _timm(n))
    for name in TORCHVISION:
        out[f"torchvision/{name}"] = ("torchvision", lambda n=name: _torchvision(n))
    for name in DIFFUSERS:
        out[f"diffusers/{name}"] = ("diffusers", lambda n=name: _diffusers(n))
    for name in PADDLENLP:
        out[f"paddlenlp/{name}"] = ("paddlenlp", lambda n=name: _paddlenlp(n))
    return out


def make() -> tuple:
    """The factory `validate` calls: the model named by AUTOGRAPH_CG_ZOO_MODEL."""
    return models()[os.environ["AUTOGRAPH_CG_ZOO_MODEL"]][1]()


def available(library: str) -> bool:
    if library == "paddlenlp":  # its own folder of packages, made on first use
        return importlib.util.find_spec("paddle") is not None
    return library == "torch" or importlib.util.find_spec(library) is not None


def process_env(site: list[str]) -> dict[str, str]:
    """The environment of a model's own process: the library's folders, the repository, bench/ and fixtures/ first
    on its path."""
    paths = [*site, str(ROOT), str(HERE), str(FIXTURES), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def site_of(library: str) -> list[str]:
    """Folders a library's runs put first on sys.path: paddlenlp's pinned packages (installed on first use)."""
    if library != "paddlenlp":
        return []
    import dropin

    return dropin.ensure_site(library)


def validate_one(name: str, steps: int, scratch: Path, timeout: int, site: list[str]) -> dict[str, Any]:
    """One model's validate run in a process of its own; its JSON report with the wall time."""
    out = scratch / f"{name.replace('/', '_')}.json"
    env = {**process_env(site), "AUTOGRAPH_CG_ZOO_MODEL": name}
    cmd = [sys.executable, "-m", "autograph_cg", "validate", "zoo:make", "--path", str(HERE), "--path", str(FIXTURES),
           "--steps", str(steps),
           "--warmup-steps", "1", "--format", "json", "-o", str(out)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"model": name, "error": f"timed out after {timeout} s"}
    seconds = time.perf_counter() - started
    if not out.exists():
        return {"model": name, "error": (proc.stderr.strip().splitlines() or ["no report"])[-1], "exit": proc.returncode}
    return {"model": name, "seconds": round(seconds, 1), "exit": proc.returncode, "report": json.loads(out.read_text())}


def summary(result: dict[str, Any]) -> str:
    """One line: the plan's outcome, classes captured / fell back / mismatched, runtime bugs, fallback reasons."""
    if "report" not in result:
        return f"{result['model']:34} ERROR {result.get('error')}"
    data = result["report"]
    classes = data["classes"]
    count = lambda outcome: sum(c["outcome"] == outcome for c in classes)  # noqa: E731
    bugs = [c["class"].rsplit(".", 1)[-1] for c in classes if c["disagreement"] == "runtime bug"]
    reasons = sorted({c["detail"].split(":")[0] for c in classes if c["outcome"] == "failed"})
    plan = data["plan"]
    return (
        f"{result['model']:34} plan {plan['outcome']:9} ({plan['layers_in_graphs']}/{plan['layers']} layers) | "
        f"{len(classes)} classes: {count('captured')} captured, {count('failed')} fell back, "
        f"{count('mismatch')} mismatch, {count('drop-in difference')} drop-in | runtime bugs {bugs or 0} | "
        f"exit {result['exit']} | {result['seconds']} s | fallbacks: {'; '.join(reasons)[:120]}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    run = sub.add_parser("run")
    run.add_argument("--only", default="", help="comma-separated model names (default: every available model)")
    run.add_argument("--library", default="", help="only the models of this library (transformers, timm, paddlenlp, ...)")
    run.add_argument("--jobs", type=int, default=4)
    run.add_argument("--steps", type=int, default=4)
    run.add_argument("--timeout", type=int, default=900)
    run.add_argument("--json", default="")
    args = parser.parse_args(argv)
    zoo = models()
    if args.command == "list":
        for name, (library, _) in zoo.items():
            print(f"{name:34} {library}{'' if available(library) else ' (not installed)'}")
        return 0
    names = args.only.split(",") if args.only else [n for n, (lib, _) in zoo.items() if available(lib)]
    unknown = [n for n in names if n not in zoo]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}")
    if args.library:
        names = [n for n in names if zoo[n][0] == args.library]
    sites = {lib: site_of(lib) for lib in {zoo[n][0] for n in names}}
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda n: validate_one(n, args.steps, Path(tmp), args.timeout, sites[zoo[n][0]]), names))
    for result in results:
        print(summary(result), flush=True)
    bugs = sum(c["disagreement"] == "runtime bug" for r in results if "report" in r for c in r["report"]["classes"])
    errors = sum("report" not in r for r in results)
    print(f"{len(results)} models, {errors} without a report, {bugs} runtime bugs")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if bugs or errors else 0


if __name__ == "__main__":
    sys.exit(main())
