"""Drop-in check: a real model package rewritten by `autograph-cg rewrite` behaves like the original.

    python bench/dropin.py prepare --library transformers      # rewrite a copy (needs libcst), in the cache
    AUTOGRAPH_CG_BACKEND=standin python bench/dropin.py check --library transformers [--models bert,gpt2]

`prepare` copies the library's package (the installed one, or with `--version` a wheel fetched with pip),
rewrites it with the default plan into `$AUTOGRAPH_CG_DROPIN` (default ~/.cache/autograph-cg/dropin, outside
the repo: third-party code is never committed) and with `--tar` also packs the copy for another machine.
`check` builds each model of the library's list from a small config (random init, fixed seeds) in two
processes, one importing the installed library and one the rewritten copy (they share the package's name),
and compares what a user's code can see; details in `docs/performance.md`, "Drop-in check on real packages".
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[1]
MARKER = "dropin.json"  # written last into a prepared copy: library, version, rewrite summary
# paddlenlp 2.8.1 pins dependencies older than what transformers 5 needs (huggingface_hub among them), so it and
# the modules its import reaches are installed with pip into a folder of its own, put on sys.path of its runs only.
PADDLENLP_SITE = (
    "paddlenlp==2.8.1", "aistudio-sdk==0.2.4", "huggingface_hub==0.23.4", "datasets==2.19.2", "dill==0.3.8",
    "multiprocess==0.70.16", "fastapi==0.111.0", "starlette==0.37.2", "colorlog==6.12.0", "jieba==0.42.1",
    "sentencepiece==0.2.3", "seqeval==1.2.2", "scikit-learn==1.9.1", "joblib==1.6.0", "threadpoolctl==3.8.0",
    "narwhals==2.29.0", "pandas==3.1.1", "pyarrow==26.0.1", "pyarrow_hotfix==0.7", "xxhash==4.1.0",
    "aiohttp==3.14.5", "aiohappyeyeballs==2.7.1", "aiosignal==1.4.0", "frozenlist==1.8.0", "multidict==7.2.1",
    "yarl==1.25.1", "propcache==0.5.4", "tqdm==4.70.1",
)


def cache_dir() -> Path:
    """Where rewritten copies live: outside the repo, so third-party code is never committed."""
    env = os.environ.get("AUTOGRAPH_CG_DROPIN")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "autograph-cg" / "dropin"


def site_dir(package: str) -> Path | None:
    """The folder of pip-installed packages a library's runs put first on sys.path (paddlenlp's), if any."""
    return cache_dir() / f"site-{package}" if package == "paddlenlp" else None


def ensure_site(package: str) -> list[str]:
    """Install the library's own folder of packages where it is missing; the paths to put on sys.path."""
    site = site_dir(package)
    if site is None:
        return []
    listed = site / "pinned.txt"  # the list it was installed from: a folder made from another list is made anew
    if not listed.is_file() or listed.read_text() != "\n".join(PADDLENLP_SITE):
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade", "--target", str(site),
               *PADDLENLP_SITE]
        subprocess.run(cmd, check=True)
        listed.write_text("\n".join(PADDLENLP_SITE))
    return [str(site)]


def installed_version(package: str, site: list[str] = ()) -> str | None:
    """The installed distribution's version of ``package`` (None when it is not installed)."""
    found = importlib.metadata.distributions(name=package, path=[*site, *sys.path])
    return next((d.version for d in found), None)


def _installed_source(package: str, site: list[str]) -> Path:
    sys.path[:0] = [p for p in site if p not in sys.path]
    spec = importlib.util.find_spec(package)  # finds without importing
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"dropin: {package} is not installed; pass --version to fetch it with pip")
    return Path(list(spec.submodule_search_locations)[0])


def _wheel_source(package: str, version: str, scratch: Path) -> Path:
    """The package folder of ``package==version``'s wheel, unpacked into ``scratch``."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--quiet",
           "--dest", str(scratch), f"{package}=={version}"]
    subprocess.run(cmd, check=True)
    (wheel,) = scratch.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(scratch / "unpacked")
    return scratch / "unpacked" / package


def prepare(package: str, version: str | None, dest: Path, flags: list[str], jobs: int | None) -> Path:
    """Copy ``package`` (installed, or ``version`` from a wheel) to ``dest/package`` and rewrite it
    with the CLI's default plan; returns the folder to put on ``sys.path``."""
    with tempfile.TemporaryDirectory(prefix=".fetch-") as tmp:
        site = ensure_site(package)
        installed = installed_version(package, site)
        if version is None or version == installed:
            source, version = _installed_source(package, site), installed
        else:
            source = _wheel_source(package, version, Path(tmp))
        meta = rewrite_copy(source, dest, flags, jobs)
        # The unmodified copy too: a machine whose installed version differs runs it as the original side.
        shutil.copytree(source, dest / "original" / package, ignore=shutil.ignore_patterns("__pycache__"))
    meta.update(library=package, version=version)
    (dest / MARKER).write_text(json.dumps(meta, indent=1))
    summary = meta["rewrite"]
    print(f"{package} {version}: {summary['sites']} sites wrapped in {summary['files_changed']} files "
          f"({summary['files_scanned']} scanned, {summary['files_skipped']} skipped) in {meta['rewrite_s']} s -> {dest}")
    return dest


def rewrite_copy(source: Path, dest: Path, flags: list[str], jobs: int | None) -> dict[str, Any]:
    """Copy the package folder ``source`` into ``dest`` and rewrite the copy with ``autograph-cg rewrite``;
    returns the rewrite's summary and time."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    shutil.copytree(source, dest / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [sys.executable, "-m", "autograph_cg", "rewrite", str(dest / source.name), "--format", "json", "--no-cache",
           "-q", *flags, *(["--jobs", str(jobs)] if jobs else [])]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"rewrite of {dest / source.name} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    data = json.loads(proc.stdout)
    summary = {k: data[k] for k in ("files_scanned", "sites", "files_changed", "files_skipped")}
    return {"flags": flags, "rewrite": summary, "rewrite_s": round(time.perf_counter() - started, 1)}


def pack(copy: Path, tar: Path) -> None:
    """The prepared copy as one .tar.gz, to carry to a machine without libcst."""
    tar.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tar, "w:gz") as tf:
        tf.add(copy, arcname=copy.name, filter=lambda info: None if "__pycache__" in info.name else info)
    print(f"packed {copy} -> {tar} ({tar.stat().st_size / 2**20:.1f} MiB)")


# ---------------------------------------------------------------- frameworks (in the workers)
class TorchOps:
    """The framework calls a check makes, for PyTorch; values leave as numpy arrays."""

    name = "torch"

    def __init__(self, device: str) -> None:
        import torch

        self.torch, self.device = torch, device

    def seed(self, n: int) -> None:
        self.torch.manual_seed(n)

    def generator(self, n: int) -> Any:
        return self.torch.Generator().manual_seed(n)

    def randint(self, g: Any, low: int, high: int, shape: tuple) -> Any:
        return self.torch.randint(low, high, shape, generator=g).to(self.device)

    def randn(self, g: Any, shape: tuple) -> Any:
        return self.torch.randn(shape, generator=g).to(self.device)

    def is_tensor(self, x: Any) -> bool:
        return isinstance(x, self.torch.Tensor)

    def numpy(self, t: Any) -> Any:
        t = t.detach()
        return (t.float() if t.is_floating_point() else t).cpu().numpy().copy()

    def no_grad(self) -> Any:
        return self.torch.no_grad()

    def to_device(self, model: Any) -> Any:
        return model.to(self.device)

    def children(self, layer: Any) -> dict:
        return {k: v for k, v in layer._modules.items() if v is not None}

    def own_parameters(self, layer: Any) -> dict:
        return {k: v for k, v in layer._parameters.items() if v is not None}

    def named_parameters(self, model: Any) -> list:
        return list(model.named_parameters())

    def named_buffers(self, model: Any) -> list:
        return list(model.named_buffers())

    def named_modules(self, model: Any) -> list:
        return list(model.named_modules())

    def state_dict(self, model: Any) -> dict:
        return model.state_dict()

    def shape(self, t: Any) -> list:
        return list(t.shape)

    def input_embeddings(self, model: Any) -> Any:
        return model.get_input_embeddings()

    def is_embedding(self, layer: Any) -> bool:
        return isinstance(layer, self.torch.nn.Embedding)

    def embedding_rows(self, layer: Any) -> int:
        return int(layer.weight.shape[0])

    def optimizer(self, model: Any) -> tuple[Callable[[], None], Callable[[], None]]:
        """AdamW over the model's parameters: (clear the gradients to None, step)."""
        opt = self.torch.optim.AdamW(model.parameters(), lr=1e-3)
        return (lambda: opt.zero_grad(set_to_none=True)), opt.step

    def backward(self, loss: Any) -> None:
        loss.backward()

    def is_float(self, t: Any) -> bool:
        return t.is_floating_point()

    def grad_enabled(self) -> bool:
        return self.torch.is_grad_enabled()

    def set_grad_enabled(self, on: bool) -> None:
        self.torch.set_grad_enabled(on)

    def mean_square(self, t: Any) -> Any:
        return t.float().pow(2).mean()


class PaddleOps(TorchOps):
    """The same calls for Paddle (CPU Paddle here)."""

    name = "paddle"

    def __init__(self, device: str) -> None:
        import paddle

        self.paddle, self.device = paddle, device
        paddle.set_device("gpu" if device == "cuda" else "cpu")

    def seed(self, n: int) -> None:
        self.paddle.seed(n)

    def generator(self, n: int) -> Any:
        import numpy as np

        return np.random.default_rng(n)  # Paddle has no generator object to pass to its samplers

    def randint(self, g: Any, low: int, high: int, shape: tuple) -> Any:
        return self.paddle.to_tensor(g.integers(low, high, shape), dtype="int64")

    def randn(self, g: Any, shape: tuple) -> Any:
        return self.paddle.to_tensor(g.standard_normal(shape).astype("float32"))

    def is_tensor(self, x: Any) -> bool:
        return isinstance(x, self.paddle.Tensor)

    def numpy(self, t: Any) -> Any:
        import numpy as np

        t = t.detach()
        if self.paddle.is_floating_point(t):
            t = t.astype("float32")
        return np.array(t.numpy(), copy=True)

    def no_grad(self) -> Any:
        return self.paddle.no_grad()

    def to_device(self, model: Any) -> Any:
        return model

    def children(self, layer: Any) -> dict:
        return {k: v for k, v in layer._sub_layers.items() if v is not None}

    def named_modules(self, model: Any) -> list:
        return list(model.named_sublayers(include_self=True))

    def is_embedding(self, layer: Any) -> bool:
        return isinstance(layer, self.paddle.nn.Embedding)

    def optimizer(self, model: Any) -> tuple[Callable[[], None], Callable[[], None]]:
        opt = self.paddle.optimizer.AdamW(learning_rate=1e-3, parameters=model.parameters())
        return (lambda: opt.clear_grad(set_to_zero=False)), opt.step

    def is_float(self, t: Any) -> bool:
        return bool(self.paddle.is_floating_point(t))

    def grad_enabled(self) -> bool:
        return self.paddle.is_grad_enabled()

    def set_grad_enabled(self, on: bool) -> None:
        self.paddle.set_grad_enabled(on)

    def mean_square(self, t: Any) -> Any:
        return t.astype("float32").pow(2).mean()


OPS = {"torch": TorchOps, "paddle": PaddleOps}


# ---------------------------------------------------------------- what a library's models are
@dataclass
class Case:
    """One model class of a library built from a small config: how to build, feed, train and checkpoint it.

    Every callable gets the framework's ops (``TorchOps``/``PaddleOps``); ``build`` runs after the worker
    seeded the framework, so both processes start from the same weights."""

    build: Callable[[Any], Any]
    batch: Callable[[Any, Any, Any, int], dict]  # (ops, generator, model, sequence length) -> keyword arguments of one call
    save: Callable[[Any, Any, Path], None]  # (ops, model, folder)
    load: Callable[[Any, Path], tuple[Any, Any]]  # (ops, folder) -> (model, the loader's report)
    loss: Callable[[Any, Any, dict, Any], Any] | None = None  # (ops, model, batch, output); None: the output's .loss
    call: Callable[[Any, dict], Any] | None = None  # (model, batch) -> output; None: model(**batch)
    resize: Callable[[Any, Any], None] | None = None  # the library's resizing of embeddings (or classifier)
    checkpointing: Callable[[Any, Any], None] | None = None  # the library's gradient-checkpointing switch
    # A batch without labels (after resizing: an untied output layer keeps the old vocabulary); default: labels dropped
    unlabelled: Callable[[dict], dict] | None = None
    sized: bool = False  # its batches follow the sequence length asked for (text), so the lengths part runs


@dataclass
class Suite:
    """A library whose models the check runs: its package, framework, and cases (made where it is imported)."""

    package: str
    framework: str
    cases: Callable[[], dict[str, Case]]
    left_out: dict[str, str] = field(default_factory=dict)  # model -> why the check leaves it out


def resize_vocabulary(ops: Any, model: Any, resize: Callable[[int], Any], more: int = 5) -> None:
    """The library's ``resize`` to ``more`` rows more than the input embedding has. Raises where the library
    left an embedding of the old vocabulary in the model (paddlenlp's BlenderbotSmall keeps its encoder's):
    the new token ids the check feeds would read past that table's end, whose contents are undefined."""
    old = ops.embedding_rows(ops.input_embeddings(model))
    resize(old + more)
    stale = [name for name, layer in ops.named_modules(model) if ops.is_embedding(layer) and ops.embedding_rows(layer) == old]
    if stale:
        raise ValueError(f"the resize left embeddings of the old vocabulary ({old} rows): {', '.join(stale[:3])}")


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    return name in inspect.signature(fn).parameters


def _output_loss(ops: Any, model: Any, batch: dict, output: Any) -> Any:
    """The library's own loss where the model computed one (labels in the batch), else the mean square
    of every floating-point output."""
    loss = output.get("loss") if isinstance(output, dict) else None
    if loss is not None:
        return loss
    leaves: dict = {}
    flatten(ops, output, "", leaves, [], keep_tensors=True)
    return sum(ops.mean_square(t) for t in leaves.values() if ops.is_float(t))


# ---------------------------------------------------------------- transformers
# Small configs (transformers and paddlenlp) are made generically: these standard attribute names (or the config's attribute_map
# aliases of them) get these values wherever the config class has them; dropout, layer drop and drop
# path go to 0 so that runs on a GPU are deterministic; special token ids beyond the small vocabulary
# are moved into it. Sub-configs (a CLIP's text and vision configs) are made small the same way.
SMALL: dict[str, Any] = {
    "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 64, "max_position_embeddings": 64, "head_dim": 8, "embedding_size": 32,
    "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "ffn_dim": 64, "dff": 64, "num_layers": 2, "num_decoder_layers": 2,
    "num_heads": 4, "d_ff": 64, "d_kv": 8, "image_size": 32, "patch_size": 4, "projection_dim": 16,
    "num_local_experts": 4, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16, "rotary_dim": 4, "max_source_positions": 32, "max_target_positions": 32,
}
TOKENS = {"pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 0}
# Per architecture, what the generic names can't say (hierarchical vision models' per-stage lists, mostly).
TF_OVERRIDES: dict[str, dict[str, Any]] = {
    "longformer": {"attention_window": 4},
    "esm": {"pad_token_id": 1, "mask_token_id": 3},
    "led": {"attention_window": 4, "max_encoder_position_embeddings": 64, "max_decoder_position_embeddings": 64},
    "big_bird": {"attention_type": "original_full"},
    "funnel": {"block_sizes": [1, 1], "num_decoder_layers": 1, "d_head": 8, "d_inner": 64},
    "rembert": {"input_embedding_size": 32, "output_embedding_size": 32},
    "gpt_neo": {"attention_types": [[["global", "local"], 1]], "window_size": 4},
    "nystromformer": {"num_landmarks": 4, "segment_means_seq_len": 8},
    "swin": {"embed_dim": 16, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4},
    "swinv2": {"embed_dim": 16, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4},
    "focalnet": {"embed_dim": 16, "depths": [1, 1], "focal_levels": [2, 2], "focal_windows": [3, 3], "hidden_sizes": [16, 32]},
    "convnext": {"num_stages": 2, "hidden_sizes": [16, 32], "depths": [1, 1]},
    "convnextv2": {"num_stages": 2, "hidden_sizes": [16, 32], "depths": [1, 1]},
    "resnet": {"embedding_size": 16, "hidden_sizes": [16, 32], "depths": [1, 1]},
    "regnet": {"embedding_size": 16, "hidden_sizes": [16, 32], "depths": [1, 1], "groups_width": 8},
    "bit": {"embedding_size": 16, "hidden_sizes": [16, 32], "depths": [1, 1], "num_groups": 1},
    "poolformer": {"num_encoder_blocks": 2, "hidden_sizes": [16, 32], "depths": [1, 1], "patch_sizes": [7, 3],
                   "strides": [4, 2], "padding": [2, 1]},
    "segformer": {"num_encoder_blocks": 2, "depths": [1, 1], "sr_ratios": [2, 1], "hidden_sizes": [16, 32],
                  "num_attention_heads": [1, 2], "patch_sizes": [7, 3], "strides": [4, 2], "mlp_ratios": [4, 4],
                  "decoder_hidden_size": 32},
    # CvT's stage s indexes its depth[s] drop-path rates with s: each stage needs more layers than the one before.
    "cvt": {"embed_dim": [16, 32, 48], "num_heads": [1, 2, 3], "depth": [1, 2, 3]},
    "levit": {"image_size": 64, "patch_size": 16, "hidden_sizes": [16, 32, 48], "num_attention_heads": [1, 2, 3],
              "depths": [1, 1, 1], "key_dim": [8, 8, 8], "mlp_ratio": [2, 2, 2], "attention_ratio": [2, 2, 2]},
    "efficientnet": {"kernel_sizes": [3, 3, 5], "in_channels": [32, 16, 24], "out_channels": [16, 24, 40],
                     "strides": [1, 2, 2], "num_block_repeats": [1, 1, 1], "expand_ratios": [1, 6, 6],
                     "depthwise_padding": [], "width_coefficient": 1.0, "depth_coefficient": 1.0, "hidden_dim": 1280},
    "mobilenet_v2": {"depth_multiplier": 0.25, "min_depth": 8},
    "mobilevit": {"image_size": 64},
}
# model_type -> which head class (the Auto mapping it is taken from) and what it is fed
TF_ARCHS: dict[str, tuple[str, ...]] = {
    "masked-lm": (
        "bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2", "xlm-roberta", "camembert",
        "mpnet", "roformer", "convbert", "mobilebert", "megatron-bert", "nystromformer", "squeezebert", "ernie",
        "esm", "data2vec-text", "rembert", "funnel", "big_bird", "longformer", "modernbert", "layoutlm",
    ),
    "causal-lm": (
        "gpt2", "gpt_neo", "gptj", "gpt_neox", "opt", "bloom", "llama", "mistral", "mixtral", "qwen2", "qwen3",
        "phi", "phi3", "gemma", "gemma2", "falcon", "codegen", "stablelm", "starcoder2", "olmo", "olmo2", "cohere",
        "granite", "biogpt", "xglm", "ctrl", "mpt", "persimmon", "qwen2_moe", "helium", "glm",
    ),
    "seq2seq-lm": (
        "t5", "mt5", "umt5", "longt5", "bart", "mbart", "pegasus", "marian", "blenderbot", "blenderbot-small",
        "m2m_100", "led", "plbart",
    ),
    "image-classification": (
        "vit", "deit", "beit", "data2vec-vision", "dinov2", "swin", "swinv2", "focalnet", "convnext", "convnextv2",
        "resnet", "regnet", "bit", "poolformer", "segformer", "cvt", "levit", "efficientnet", "mobilenet_v2",
        "mobilevit",
    ),
    "contrastive": ("clip", "siglip"),
}
TF_MAPPINGS = {
    "masked-lm": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "causal-lm": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "seq2seq-lm": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "image-classification": "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES",
    "contrastive": "MODEL_MAPPING_NAMES",
}
BATCH, SEQ = 2, 8


def small_config(base: type, cls: type, overrides: dict[str, Any]) -> Any:
    """An instance of the config class ``cls`` (a subclass of the library's ``base``) with the small values
    wherever its attributes take them, then ``overrides``."""
    return cls(**_small_kwargs(base, cls, overrides))


def _small_kwargs(base: type, cls: type, overrides: dict[str, Any]) -> dict[str, Any]:
    default = cls()
    values = default.to_dict()
    aliases = getattr(cls, "attribute_map", {})
    # A standard name goes in under the config's own name for it (CTRL's n_embd for hidden_size): a config
    # whose __init__ takes its own name sets it after the alias and would keep its default.
    kwargs = {aliases.get(k, k): v for k, v in SMALL.items() if aliases.get(k, k) in values or k in aliases}
    vocab = kwargs.get("vocab_size", values.get("vocab_size"))
    for k, v in values.items():
        if isinstance(v, float) and ("dropout" in k or k.endswith("pdrop") or "drop_path" in k or "layerdrop" in k
                                     or k.endswith("drop_rate")):
            kwargs[k] = 0.0
        elif k.endswith("_token_id") and isinstance(v, int) and isinstance(vocab, int) and v >= vocab:
            kwargs[k] = TOKENS.get(k, 3)
        sub = getattr(default, k, None)
        if isinstance(sub, base):
            kwargs[k] = _small_kwargs(base, type(sub), {})
    if values.get("is_encoder_decoder") and values.get("decoder_start_token_id") is None:
        kwargs["decoder_start_token_id"] = values.get("pad_token_id") or 0  # shifting labels needs one
    kwargs.update(overrides)
    return kwargs


def transformers_suite() -> Suite:
    """At least 40 architectures of transformers, one head class each, built from small configs."""

    def cases() -> dict[str, Case]:
        import transformers
        from transformers.models.auto import modeling_auto

        out = {}
        for kind, types in TF_ARCHS.items():
            mapping = getattr(modeling_auto, TF_MAPPINGS[kind])
            for model_type in types:
                names = mapping[model_type]  # a tuple where several classes serve the task: the first
                out[model_type] = _tf_case(transformers, model_type, names if isinstance(names, str) else names[0], kind)
        return out

    return Suite("transformers", "torch", cases)


def _tf_case(transformers: Any, model_type: str, class_name: str, kind: str) -> Case:
    def cls() -> Any:
        return getattr(transformers, class_name)

    def build(ops: Any) -> Any:
        config_class = transformers.CONFIG_MAPPING[model_type]
        return cls()(small_config(transformers.PretrainedConfig, config_class, TF_OVERRIDES.get(model_type, {})))

    def batch(ops: Any, g: Any, model: Any, seq: int) -> dict:
        cfg = model.config
        text = getattr(cfg, "text_config", cfg)
        vision = getattr(cfg, "vision_config", cfg)
        out: dict[str, Any] = {}
        if kind != "image-classification":
            out["input_ids"] = ops.randint(g, 4, text.vocab_size, (BATCH, seq))
        if kind in ("image-classification", "contrastive"):
            size = getattr(vision, "image_size", SMALL["image_size"])  # convolutional configs take any size
            size = size if isinstance(size, int) else size[0]
            out["pixel_values"] = ops.randn(g, (BATCH, vision.num_channels, size, size))
        if kind in ("masked-lm", "causal-lm"):
            out["labels"] = out["input_ids"]
        elif kind == "seq2seq-lm":
            out["labels"] = ops.randint(g, 4, cfg.vocab_size, (BATCH, seq - 2))
        elif kind == "image-classification":
            out["labels"] = ops.randint(g, 0, cfg.num_labels, (BATCH,))
        elif kind == "contrastive":
            out["return_loss"] = True
        if _accepts(model.forward, "use_cache"):
            out["use_cache"] = False
        return out

    def save(ops: Any, model: Any, folder: Path) -> None:
        model.save_pretrained(folder)

    def load(ops: Any, folder: Path) -> tuple[Any, Any]:
        model, info = cls().from_pretrained(folder, output_loading_info=True)
        return model, {k: sorted(map(str, v)) for k, v in info.items() if v}

    def resize(ops: Any, model: Any) -> None:
        resize_vocabulary(ops, model, model.resize_token_embeddings)

    def checkpointing(ops: Any, model: Any) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            model.gradient_checkpointing_enable()

    def unlabelled(batch: dict) -> dict:
        # An encoder-decoder makes its decoder's input from the labels: without them it is given them as that input.
        rest = {k: v for k, v in batch.items() if k != "labels"}
        return {**rest, "decoder_input_ids": batch["labels"]} if kind == "seq2seq-lm" else rest

    return Case(build, batch, save, load, resize=resize if kind != "image-classification" else None,
                checkpointing=checkpointing, unlabelled=unlabelled, sized=kind in ("masked-lm", "causal-lm", "seq2seq-lm"))


# ---------------------------------------------------------------- timm
# model -> (create_model's keyword arguments, image size): small inputs where the model takes any size.
TIMM_MODELS: dict[str, tuple[dict[str, Any], int]] = {
    "resnet18": ({}, 64), "efficientnet_b0": ({}, 64), "mobilenetv3_small_050": ({}, 64), "mobilenetv2_050": ({}, 64),
    "regnetx_002": ({}, 64), "regnety_002": ({}, 64), "densenet121": ({}, 64), "ghostnet_100": ({}, 64),
    "convnext_atto": ({}, 64), "convnextv2_atto": ({}, 64), "rexnet_100": ({}, 64), "tinynet_e": ({}, 64),
    "lcnet_050": ({}, 64), "mnasnet_050": ({}, 64), "hgnetv2_b0": ({}, 64), "repvgg_a0": ({}, 64),
    "mobileone_s0": ({}, 64), "efficientvit_b0": ({}, 64), "fastvit_t8": ({}, 64), "edgenext_xx_small": ({}, 64),
    "mobilevit_xxs": ({}, 64),
    "vit_tiny_patch16_224": ({"img_size": 64}, 64), "deit_tiny_patch16_224": ({"img_size": 64}, 64),
    "mixer_s16_224": ({"img_size": 64}, 64), "gmlp_ti16_224": ({"img_size": 64}, 64),
    "xcit_nano_12_p16_224": ({"img_size": 64}, 64), "pit_ti_224": ({"img_size": 64}, 64),
    "levit_128s": ({"img_size": 64}, 64), "eva02_tiny_patch14_224": ({"img_size": 56}, 56),
}


def timm_suite() -> Suite:
    """timm's models from its own factory (random init), fed small images; its checkpoint loader,
    classifier reset and gradient-checkpointing switch."""

    def cases() -> dict[str, Case]:
        import timm

        return {name: _timm_case(timm, name, kwargs, size) for name, (kwargs, size) in TIMM_MODELS.items()}

    return Suite("timm", "torch", cases)


def _timm_case(timm: Any, name: str, kwargs: dict[str, Any], size: int) -> Case:
    def build(ops: Any) -> Any:
        return timm.create_model(name, pretrained=False, num_classes=10, **kwargs)

    def batch(ops: Any, g: Any, model: Any, seq: int) -> dict:
        return {"x": ops.randn(g, (BATCH, 3, size, size)), "labels": ops.randint(g, 0, 10, (BATCH,))}

    def loss(ops: Any, model: Any, batch: dict, output: Any) -> Any:
        return ops.torch.nn.functional.cross_entropy(output, batch["labels"])

    def save(ops: Any, model: Any, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        ops.torch.save(model.state_dict(), folder / "model.pth")

    def load(ops: Any, folder: Path) -> tuple[Any, Any]:
        model = build(ops)
        keys = timm.models.load_checkpoint(model, str(folder / "model.pth"))
        return model, {k: list(v) for k in ("missing_keys", "unexpected_keys") if (v := getattr(keys, k, None))}

    return Case(build, batch, save, load, loss=loss, call=lambda model, batch: model(batch["x"]),
                resize=lambda ops, model: model.reset_classifier(5),
                checkpointing=lambda ops, model: model.set_grad_checkpointing(True))


# ---------------------------------------------------------------- paddlenlp
# model -> (class, what it is fed, config overrides); classes that the default plan wraps layers of. Overrides
# also give what a model reads from its config and the config class never sets (nezha, deberta, qwen).
PN_MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "bert": ("BertForPretraining", "text", {}),
    "albert": ("AlbertForMaskedLM", "text", {"embedding_size": 16}),
    "distilbert": ("DistilBertForMaskedLM", "text", {}),
    "electra": ("ElectraGenerator", "text", {}),
    "megatronbert": ("MegatronBertForMaskedLM", "text", {}),
    "mpnet": ("MPNetForMaskedLM", "text", {}),
    "tinybert": ("TinyBertForPretraining", "text", {"fit_size": 32}),
    "nezha": ("NeZhaForPretraining", "text", {"use_relative_position": True}),
    "mobilebert": ("MobileBertForPreTraining", "text", {}),
    "ppminilm": ("PPMiniLMForSequenceClassification", "classify", {}),
    "deberta": ("DebertaForSequenceClassification", "classify", {"pooler_hidden_size": 32, "pooler_dropout": 0.0,
                                                             "pooler_hidden_act": "gelu"}),
    "gpt": ("GPTForCausalLM", "text", {}),
    "llama": ("LlamaForCausalLM", "text", {}),
    "qwen": ("QWenForCausalLM", "text", {"seq_length": 64, "kv_channels": 8}),
    "chatglm_v2": ("ChatGLMv2ForCausalLM", "text", {"ffn_hidden_size": 64, "kv_channels": 8, "multi_query_group_num": 2,
                                                    "padded_vocab_size": 99}),
    "ctrl": ("CTRLLMHeadModel", "text", {}),
    "bart": ("BartForConditionalGeneration", "seq2seq", {}),
    "mbart": ("MBartForConditionalGeneration", "seq2seq", {}),
    "pegasus": ("PegasusForConditionalGeneration", "seq2seq", {}),
    "blenderbot": ("BlenderbotForConditionalGeneration", "seq2seq", {}),
    "blenderbot_small": ("BlenderbotSmallForConditionalGeneration", "seq2seq", {}),
    "mt5": ("MT5ForConditionalGeneration", "seq2seq", {}),
}


# Models whose forward fails in the unmodified library as well (paddlenlp 2.8.1 with Paddle 3.3.1, CPU), so there is
# nothing to compare: they are left out with the reason.
PN_LEFT_OUT = {
    "fnet": "FNetForMaskedLM.forward indexes its encoder's tuple output by name when return_dict is left None",
    "rembert": "RemBertForMaskedLM's head passes a tuple to a Linear (linear(): argument 'X' must be Tensor)",
    "mixtral": "MixtralSparseMoeBlock indexes the routing weights with [n, 1] index tensors, which Paddle 3.3 "
               "broadcasts against the hidden size (Broadcast dimension mismatch)",
}


def paddlenlp_suite() -> Suite:
    """paddlenlp's models from small configs on Paddle: its save_pretrained/from_pretrained, weight tying,
    resize_token_embeddings and recompute switch."""

    def cases() -> dict[str, Case]:
        import paddlenlp.transformers as pn

        return {name: _pn_case(pn, *spec) for name, spec in PN_MODELS.items()}

    return Suite("paddlenlp", "paddle", cases, PN_LEFT_OUT)


def _pn_case(pn: Any, class_name: str, kind: str, overrides: dict[str, Any]) -> Case:
    def cls() -> Any:
        return getattr(pn, class_name)

    def build(ops: Any) -> Any:
        return cls()(small_config(pn.PretrainedConfig, cls().config_class, overrides))

    def batch(ops: Any, g: Any, model: Any, seq: int) -> dict:
        vocab = model.config.vocab_size
        out = {"input_ids": ops.randint(g, 4, vocab, (BATCH, seq))}
        forward = model.forward
        if kind == "seq2seq":
            out["decoder_input_ids"] = ops.randint(g, 4, vocab, (BATCH, seq - 2))
        elif kind == "classify" and _accepts(forward, "labels"):
            out["labels"] = ops.randint(g, 0, model.config.num_labels, (BATCH,))
        elif _accepts(forward, "labels"):
            out["labels"] = out["input_ids"]
        if _accepts(forward, "use_cache"):
            out["use_cache"] = False
        return out

    def save(ops: Any, model: Any, folder: Path) -> None:
        model.save_pretrained(str(folder))

    def load(ops: Any, folder: Path) -> tuple[Any, Any]:
        return cls().from_pretrained(str(folder)), {}

    def resize(ops: Any, model: Any) -> None:
        resize_vocabulary(ops, model, model.resize_token_embeddings)

    def checkpointing(ops: Any, model: Any) -> None:
        if not any(hasattr(layer, "enable_recompute") for _, layer in model.named_sublayers(include_self=True)):
            raise ValueError(f"{type(model).__name__} has no layer with a recompute switch")
        model.recompute_enable()

    return Case(build, batch, save, load, resize=resize, checkpointing=checkpointing)


# ---------------------------------------------------------------- the worker: one side, every model
N_EVAL, N_TRAIN = 5, 5  # calls and training steps: past the wrappers' 3 warmup calls, a capture and replays
# The lengths part: training steps through a longer input and back, each length long enough to capture and replay.
# A layer that grows a cache for the longer input (rotary tables) must not leave the shorter input's graphs
# reading the old one; three times the length outgrows the cache a first call sizes at twice its length.
LENGTHS = (SEQ,) * N_TRAIN + (3 * SEQ,) * N_TRAIN + (SEQ,) * N_TRAIN
SEP = "|"  # in the keys of a worker's arrays


def flatten(ops: Any, value: Any, prefix: str, out: dict, others: list, keep_tensors: bool = False) -> None:
    """The tensors of a model's output (model-output dicts, tuples, lists) by path; other leaves' types in ``others``."""
    if ops.is_tensor(value):
        out[prefix] = value if keep_tensors else ops.numpy(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            flatten(ops, v, f"{prefix}.{k}" if prefix else str(k), out, others, keep_tensors)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            flatten(ops, v, f"{prefix}.{i}" if prefix else str(i), out, others, keep_tensors)
    elif value is not None and not isinstance(value, (bool, int, float, str)):
        others.append(f"{prefix}: {type(value).__name__}")


def _mro(cls: type) -> list[str]:
    seen: list[str] = []
    for c in cls.__mro__:
        name = f"{c.__module__}.{c.__qualname__}"
        if name not in seen:  # a wrapped layer's class and its original share a name
            seen.append(name)
    return seen


def _resolve(dotted_module: str, qualname: str) -> Any:
    obj = importlib.import_module(dotted_module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def structure(ops: Any, model: Any) -> dict[str, Any]:
    """What code holding the model sees of it: names, keys, classes and which parameters are one tensor."""
    full: dict[str, list[str]] = {}  # id of a parameter -> every name it is reachable under

    def walk(layer: Any, prefix: str) -> None:
        for name, p in ops.own_parameters(layer).items():
            full.setdefault(str(id(p)), []).append(prefix + name)
        for name, child in ops.children(layer).items():
            walk(child, f"{prefix}{name}.")

    walk(model, "")
    modules = ops.named_modules(model)
    return {
        "parameters": [[n, ops.shape(p)] for n, p in ops.named_parameters(model)],
        "buffers": [[n, ops.shape(b)] for n, b in ops.named_buffers(model)],
        "state_dict": [[k, ops.shape(v)] for k, v in ops.state_dict(model).items()],
        "modules": [[n, _mro(type(m))] for n, m in modules],
        "shared": sorted(sorted(names) for names in full.values() if len(names) > 1),
    }


def isinstance_misses(modules: list) -> list[str]:
    """Modules that are not instances of every class of their MRO as this process's code names them."""
    misses = []
    for name, m in modules:
        for entry in _mro(type(m)):
            module, _, qualname = entry.rpartition(".")
            while module and "<locals>" not in entry:
                try:
                    cls = _resolve(module, qualname)
                    break
                except (ImportError, AttributeError):
                    module, _, head = module.rpartition(".")
                    qualname = f"{head}.{qualname}"
            else:
                continue
            if isinstance(cls, type) and not isinstance(m, cls):
                misses.append(f"{name or '(root)'} is not a {entry}")
    return misses


def wrapped_stats(model: Any, ops: Any) -> dict[str, Any]:
    """How many layers of the model are wrapped, and what their graphs did."""
    from autograph_cg.runtime import CUDAGraphedLayer, graphed, stats_of

    wrapped = [m for _, m in ops.named_modules(model) if isinstance(m, CUDAGraphedLayer)]
    totals = {"wrapped": len(wrapped), "captures": 0, "forward_replays": 0, "backward_replays": 0, "eager_calls": 0,
              "fused_calls": 0, "fallbacks": {}}
    # the runs these layers head: their graphs serve the members' calls (`fused_calls`)
    runners = [getattr(graphed.state_of(m), "runner", None) for m in wrapped]
    runs = [c.runner.stats.as_dict() for r in runners if r is not None for c in r.chains.values()]
    for s in [stats_of(m) for m in wrapped] + runs:
        for k in ("captures", "forward_replays", "backward_replays", "eager_calls", "fused_calls"):
            totals[k] += s[k]
        reasons = list(s["fallbacks"]) + ([f"eager from then on: {s['disabled_reason']}"] if s["disabled_reason"] else [])
        for reason in reasons:
            totals["fallbacks"][reason] = totals["fallbacks"].get(reason, 0) + 1
    return totals


def _error(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    # The file and function, not the line: the rewrite moves the lines of the files it changes.
    where = f" ({Path(frames[-1].filename).name}, {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}{where}"


class Recorder:
    """One model's results on one side: JSON-able facts and named arrays."""

    def __init__(self, ops: Any) -> None:
        self.ops = ops
        self.facts: dict[str, Any] = {}
        self.arrays: dict[str, Any] = {}

    @contextlib.contextmanager
    def check(self, name: str) -> Iterator[dict]:
        """A part of the check; an exception is its result (compared with the other side's). Grad mode is
        put back on after it: a part that left it off (Paddle does after an error in a saved-tensor hook)
        would make every later model of the process train without gradients."""
        facts: dict[str, Any] = {}
        self.facts[name] = facts
        try:
            yield facts
        except Exception as exc:  # noqa: BLE001 -- any failure of the library or the runtime is a result
            facts["error"] = _error(exc)
        if not self.ops.grad_enabled():
            facts["left_grad_mode_off"] = True
            self.ops.set_grad_enabled(True)

    def outputs(self, ops: Any, prefix: str, output: Any, facts: dict) -> None:
        leaves: dict = {}
        others: list = []
        flatten(ops, output, "", leaves, others)
        for k, v in leaves.items():
            self.arrays[f"{prefix}{SEP}{k}"] = v
        facts.setdefault("outputs", sorted(leaves))
        if others:
            facts["other_outputs"] = others


SAMPLE = 4096  # entries kept of a larger gradient: every step's gradients of a whole model would fill the disk


def fingerprint(a: Any) -> Any:
    """A large array as an even sample of its entries, its mean and its root mean square (all at the scale
    of its entries, so the relative difference means what it does for a whole array)."""
    import numpy as np

    if a.size <= SAMPLE:
        return a
    flat = a.reshape(-1).astype(np.float64)
    sample = flat[np.linspace(0, flat.size - 1, SAMPLE).astype(np.int64)]
    return np.concatenate([sample, [flat.mean(), np.sqrt(np.mean(flat * flat))]])


def _call(case: Case, model: Any, batch: dict) -> Any:
    return case.call(model, batch) if case.call is not None else model(**batch)


def _eval(ops: Any, case: Case, model: Any, rec: Recorder, prefix: str, facts: dict, labels: bool = True) -> None:
    model.eval()
    batch = case.batch(ops, ops.generator(1), model, SEQ)
    if not labels:
        batch = case.unlabelled(batch) if case.unlabelled else {k: v for k, v in batch.items() if k != "labels"}
    with ops.no_grad():
        for call in range(N_EVAL):
            rec.outputs(ops, f"{prefix}{SEP}{call}", _call(case, model, batch), facts)


def _train(ops: Any, case: Case, model: Any, rec: Recorder, prefix: str, facts: dict,
           lengths: tuple[int, ...] = (SEQ,) * N_TRAIN) -> None:
    """Training steps, one per sequence length given."""
    model.train()
    clear, step = ops.optimizer(model)
    g = ops.generator(2)
    losses, no_grad = [], []
    for i, seq in enumerate(lengths):
        clear()
        batch = case.batch(ops, g, model, seq)
        output = _call(case, model, batch)
        loss = (case.loss or _output_loss)(ops, model, batch, output)
        ops.backward(loss)
        losses.append(float(ops.numpy(loss)))
        missing = []
        for name, p in ops.named_parameters(model):
            if p.grad is None:
                missing.append(name)
            else:
                rec.arrays[f"{prefix}{SEP}{i}{SEP}{name}"] = fingerprint(ops.numpy(p.grad))
        no_grad.append(missing)
        step()
    for name, b in ops.named_buffers(model):  # running statistics and the like, after the steps
        rec.arrays[f"{prefix}{SEP}buffer{SEP}{name}"] = fingerprint(ops.numpy(b))
    rec.arrays[f"{prefix}{SEP}losses"] = __import__("numpy").array(losses)
    facts["losses"] = losses
    facts["no_grad"] = no_grad


def run_model(ops: Any, case: Case, rec: Recorder, ckpt: Path, load_from: Path | None) -> None:
    """Every part of the check of one model on this side; ``load_from`` holds the other side's checkpoint."""
    def fresh() -> Any:
        ops.seed(0)
        return ops.to_device(case.build(ops))

    model = None
    with rec.check("construct") as facts:
        model = fresh()
        facts["structure"] = structure(ops, model)
        facts["isinstance_misses"] = isinstance_misses(ops.named_modules(model))
    if model is None:
        return
    with rec.check("eval") as facts:
        _eval(ops, case, model, rec, "eval", facts)
    with rec.check("save") as facts:
        case.save(ops, model, ckpt)
    with rec.check("train") as facts:
        _train(ops, case, model, rec, "train", facts)
    rec.facts["runtime"] = wrapped_stats(model, ops)
    del model
    if case.sized:
        with rec.check("lengths") as facts:
            model = fresh()
            _train(ops, case, model, rec, "lengths", facts, LENGTHS)
    if case.resize is not None:
        with rec.check("resize") as facts:
            model = fresh()
            case.resize(ops, model)
            facts["structure"] = structure(ops, model)
            # Token ids of the new rows in, no labels: an untied output layer keeps the old vocabulary.
            _eval(ops, case, model, rec, "resize", facts, labels=False)
    if case.checkpointing is not None:
        with rec.check("checkpointing") as facts:
            model = fresh()
            case.checkpointing(ops, model)
            _train(ops, case, model, rec, "checkpointing", facts)
    if load_from is not None:
        load(ops, case, rec, load_from)


def load(ops: Any, case: Case, rec: Recorder, folder: Path) -> None:
    """Load the other side's checkpoint with the library's loader, then run it."""
    with rec.check("load") as facts:
        model, report = case.load(ops, folder)
        model = ops.to_device(model)
        facts["report"] = report
        facts["structure"] = structure(ops, model)
        _eval(ops, case, model, rec, "load", facts)


def worker(args: argparse.Namespace) -> None:
    """One side in its own process: the library imported from ``--path`` (or as installed)."""
    import numpy as np

    sys.path[:0] = [*args.path, str(REPO)]
    if args.device == "cpu":
        os.environ.setdefault("AUTOGRAPH_CG_BACKEND", "standin")
    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    suite = load_suite(args.suite)
    ops = OPS[suite.framework](args.device)
    if args.deterministic and suite.framework == "torch":
        ops.torch.use_deterministic_algorithms(True, warn_only=True)
    warnings.simplefilter("ignore")
    cases = suite.cases()
    origin = Path(importlib.import_module(suite.package).__file__ or "").resolve()
    expect = Path(args.expect).resolve() if args.expect else None
    if expect is not None and expect not in origin.parents:
        raise SystemExit(f"{suite.package} was imported from {origin}, not from {expect}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "origin.json").write_text(json.dumps({"origin": str(origin), "version": installed_version(suite.package, args.path)}))
    for name in args.models or list(cases):
        started = time.perf_counter()
        rec = Recorder(ops)
        other = Path(args.load_from) / name if args.load_from else None
        if args.phase == "load":
            if other is not None and other.exists():
                load(ops, cases[name], rec, other)
        else:
            run_model(ops, cases[name], rec, Path(args.checkpoints) / name, other if other and other.exists() else None)
        rec.facts["seconds"] = round(time.perf_counter() - started, 2)
        (out / f"{name}.json").write_text(json.dumps(rec.facts))
        np.savez(out / f"{name}.npz", **rec.arrays)
        print(f"{name}: {rec.facts['seconds']} s", flush=True)


def load_suite(spec: str) -> Suite:
    """A suite by name (``transformers``, ``timm``, ``paddlenlp``) or as ``module:attribute``."""
    if ":" in spec:
        module, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module), attr)()
    return SUITES[spec]()


# ---------------------------------------------------------------- compare (the parent)
# A gradient is compared relative to its own largest value, but never to less than this share of the largest
# gradient of its step (as validate and bench/exact_gpu.py do): a gradient that is zero in exact arithmetic
# (an attention key's bias) holds rounding noise, which differs between any two orders of summation.
NOISE_FLOOR = 1e-4
# Largest relative difference counted as equal (bench/e2e_gpu.py's). Up to a layer's capture both sides are
# bitwise equal on CPU; from it on, a gradient that autograd adds up from uses inside and outside a wrapped
# layer is summed in another order (the graph's backward returns the inside's sum at once), a difference in
# the last bits that AdamW then carries into the next steps' parameters.
TOLERANCE = 1e-3


def _gradient_floors(arrays: Any, keys: set[str]) -> dict[str, float]:
    """Per training step (``part|step``), the noise floor of its gradients."""
    import numpy as np

    floors: dict[str, float] = {}
    for key in keys:
        step, _, name = key.rpartition(SEP)
        part, _, index = step.partition(SEP)
        if index.isdigit():
            value = float(np.abs(arrays[key]).max(initial=0.0))
            floors[step] = max(floors.get(step, 0.0), NOISE_FLOOR * value)
    return floors


def _relative(a: Any, b: Any, floor: float = 0.0) -> float:
    """The largest difference of ``a`` from ``b``, relative to ``b``'s largest value (or ``floor``)."""
    import numpy as np

    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return float("inf")
    if a.dtype.kind not in "fc":
        return 0.0 if np.array_equal(a, b) else float("inf")
    a, b = a.astype(np.float64), b.astype(np.float64)
    if not (np.isfinite(a) == np.isfinite(b)).all():
        return float("inf")
    fin = np.isfinite(b)
    scale = max(float(np.abs(b[fin]).max(initial=0.0)), floor, 1e-30)
    return float(np.abs(a[fin] - b[fin]).max(initial=0.0) / scale)


@dataclass
class Side:
    """One side's results for one model: facts by part, and its arrays."""

    facts: dict[str, Any]
    arrays: Any


def compare_model(orig: Side, rewr: Side, tolerance: float) -> dict[str, Any]:
    """Every difference between the two sides of one model, by part; and the largest relative difference."""
    diffs: dict[str, list[str]] = {}
    worst = [0.0]

    def differ(part: str, what: str) -> None:
        diffs.setdefault(part, []).append(what)

    def same_error(part: str) -> bool:
        a, b = orig.facts.get(part, {}), rewr.facts.get(part, {})
        if "error" in a or "error" in b:
            if a.get("error") != b.get("error"):
                differ(part, f"original: {a.get('error', 'ok')}; rewritten: {b.get('error', 'ok')}")
            return True
        return False

    def arrays(part: str, prefix: str) -> None:
        mine = {k for k in rewr.arrays.files if k.startswith(prefix + SEP)}
        theirs = {k for k in orig.arrays.files if k.startswith(prefix + SEP)}
        if mine != theirs:
            differ(part, f"arrays only in rewritten: {sorted(mine - theirs)[:3]}, only in original: {sorted(theirs - mine)[:3]}")
        floors = _gradient_floors(orig.arrays, theirs)
        for key in sorted(mine & theirs):
            rel = _relative(rewr.arrays[key], orig.arrays[key], floors.get(key.rpartition(SEP)[0], 0.0))
            worst[0] = max(worst[0], rel)
            if rel > tolerance:
                differ(part, f"{key.replace(SEP, ' ')}: relative difference {rel:.2e}")
                return

    def struct(part: str, a: dict, b: dict) -> None:
        for key in ("parameters", "buffers", "state_dict", "modules", "shared"):
            if a[key] != b[key]:
                names_a = {json.dumps(x) for x in a[key]}
                names_b = {json.dumps(x) for x in b[key]}
                only_r, only_o = sorted(names_b - names_a)[:2], sorted(names_a - names_b)[:2]
                differ(part, f"{key}: rewritten has {only_r or 'another order'}, original {only_o or 'another order'}")

    if same_error("construct"):
        return {"diffs": diffs, "worst": worst[0]}
    struct("names", orig.facts["construct"]["structure"], rewr.facts["construct"]["structure"])
    if rewr.facts["construct"]["isinstance_misses"] != orig.facts["construct"]["isinstance_misses"]:
        differ("classes", "; ".join(rewr.facts["construct"]["isinstance_misses"][:3]))
    for part in ("eval", "train", "lengths", "resize", "checkpointing"):
        if part not in orig.facts and part not in rewr.facts or same_error(part):
            continue
        if part in ("train", "lengths", "checkpointing"):
            for step, (a, b) in enumerate(zip(orig.facts[part]["no_grad"], rewr.facts[part]["no_grad"])):
                if a != b:
                    differ(part, f"step {step}: without a gradient in the original only: {sorted(set(a) - set(b))[:3]}, "
                                 f"in the rewritten only: {sorted(set(b) - set(a))[:3]}")
                    break
        if part == "resize":
            struct(part, orig.facts[part]["structure"], rewr.facts[part]["structure"])
        if orig.facts[part].get("other_outputs") != rewr.facts[part].get("other_outputs"):
            differ(part, f"other outputs: {orig.facts[part].get('other_outputs')} vs {rewr.facts[part].get('other_outputs')}")
        arrays(part, part)
    same_error("save")
    # Checkpoints: each side loaded the other's; the loaded model runs as the saving side's did.
    loads = ((rewr, orig, "rewritten loads the original's"), (orig, rewr, "original loads the rewritten's"))
    errors = [(loader.facts.get("load") or {"error": "not run"}).get("error") for loader, _, _ in loads]
    if errors[0] != errors[1]:
        differ("checkpoint", "; ".join(f"{label}: {e or 'ok'}" for (_, _, label), e in zip(loads, errors)))
    elif errors[0] is None:
        for loader, saver, label in loads:
            facts = loader.facts["load"]
            if facts["report"] != saver.facts["load"]["report"]:
                differ("checkpoint", f"{label}: loader reports {facts['report']}, the other way {saver.facts['load']['report']}")
            struct("checkpoint", saver.facts["construct"]["structure"], facts["structure"])
            _loaded_against(loader, saver, tolerance, lambda what, label=label: differ("checkpoint", f"{label}: {what}"), worst)
    return {"diffs": diffs, "worst": worst[0]}


def _loaded_against(loader: Side, saver: Side, tolerance: float, differ: Callable[[str], None], worst: list) -> None:
    """The loaded model's eval outputs against the saving side's own."""
    for key in sorted(k for k in saver.arrays.files if k.startswith("eval" + SEP)):
        mine = "load" + key[len("eval"):]
        if mine not in loader.arrays.files:
            differ(f"no output {key.split(SEP, 2)[-1]} after loading")
            return
        rel = _relative(loader.arrays[mine], saver.arrays[key])
        worst[0] = max(worst[0], rel)
        if rel > tolerance:
            differ(f"{key.split(SEP, 2)[-1]} after loading: relative difference {rel:.2e}")
            return


# ---------------------------------------------------------------- check (the parent)
def _run_side(suite: str, paths: list[str], expect: str | None, out: Path, args: list[str], timeout: int, log: Path) -> None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "worker", "--suite", suite, "--out", str(out), *args]
    for p in paths:
        cmd += ["--path", p]
    if expect:
        cmd += ["--expect", expect]
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        # One intra-op thread: on a loaded machine the frameworks' spinning threads slow a run several times.
        env = {"OMP_NUM_THREADS": "1", **os.environ}
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, check=False, env=env)
    if proc.returncode != 0:
        tail = log.read_text().strip().splitlines()[-5:]
        raise RuntimeError(f"worker for {out.name} exited {proc.returncode}: {' | '.join(tail)}")


def check(suite: str, copy: Path, original_paths: list[str], scratch: Path, models: list[str] | None = None,
          device: str = "cpu", tolerance: float = TOLERANCE, timeout: int = 3600, site: list[str] = (),
          deterministic: bool = False) -> dict[str, Any]:
    """Run both sides of every model of ``suite`` and compare them: the results by model.

    ``copy`` is the folder holding the rewritten package; ``original_paths`` go first on the original
    side's sys.path (none for an installed library); ``site`` on both sides' after them."""
    import numpy as np

    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    log = scratch / "workers.log"
    common = ["--device", device, *(["--models", *models] if models else []), *(["--deterministic"] if deterministic else [])]
    o, r, o_load = scratch / "original", scratch / "rewritten", scratch / "original-load"
    started = time.perf_counter()
    _run_side(suite, [*original_paths, *site], None, o, [*common, "--checkpoints", str(o / "ckpt")], timeout, log)
    _run_side(suite, [str(copy), *site], str(copy), r,
              [*common, "--checkpoints", str(r / "ckpt"), "--load-from", str(o / "ckpt")], timeout, log)
    _run_side(suite, [*original_paths, *site], None, o_load, [*common, "--phase", "load", "--load-from", str(r / "ckpt")],
              timeout, log)
    origin = {side: json.loads((scratch / side / "origin.json").read_text()) for side in ("original", "rewritten")}
    if origin["original"]["origin"] == origin["rewritten"]["origin"]:
        raise RuntimeError(f"both sides imported {origin['original']['origin']}")
    results: dict[str, Any] = {"origin": origin, "device": device, "tolerance": tolerance, "models": {}}
    for facts_file in sorted(o.glob("*.json")):
        name = facts_file.stem
        if name == "origin":
            continue
        orig = Side(json.loads(facts_file.read_text()), np.load(o / f"{name}.npz"))
        rewr = Side(json.loads((r / f"{name}.json").read_text()), np.load(r / f"{name}.npz"))
        loaded = Side(json.loads((o_load / f"{name}.json").read_text()), np.load(o_load / f"{name}.npz"))
        orig.facts["load"] = loaded.facts.get("load")
        orig.arrays = _Merged(orig.arrays, loaded.arrays)
        row = compare_model(orig, rewr, tolerance)
        row["runtime"] = rewr.facts.get("runtime", {})
        row["seconds"] = {"original": orig.facts["seconds"], "rewritten": rewr.facts["seconds"]}
        row["shared"] = len(orig.facts.get("construct", {}).get("structure", {}).get("shared", []))
        row["not_run"] = sorted(p for p in ("resize", "checkpointing") if "error" in orig.facts.get(p, {"error": 1}))
        row["errors"] = {p: f["error"] for p, f in orig.facts.items() if isinstance(f, dict) and "error" in f}
        results["models"][name] = row
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["left_out"] = load_suite(suite).left_out
    return results


class _Merged:
    """Two npz files read as one (the original's run and its loading of the rewritten checkpoint)."""

    def __init__(self, *parts: Any) -> None:
        self.parts = parts
        self.files = [k for p in parts for k in p.files]

    def __getitem__(self, key: str) -> Any:
        return next(p[key] for p in self.parts if key in p.files)


# Parts every model must run on both sides to count as passed; resizing and gradient checkpointing are the
# library's features, which some models lack (an error on both sides there is reported, not counted).
CORE = ("construct", "eval", "save", "train", "load")


def passed(row: dict[str, Any]) -> bool:
    """No difference, and every core part ran: two sides that fail alike compare equal but show nothing."""
    return not row["diffs"] and not any(part in row["errors"] for part in CORE)


def print_results(library: str, results: dict[str, Any]) -> int:
    """One line per model; returns the number of models that did not pass."""
    rows = results["models"]
    bad = 0
    print(f"\n## {library}: {len(rows)} models, {results['device']}, tolerance {results['tolerance']:g}, "
          f"{results['seconds']} s\n   original: {results['origin']['original']['origin']}\n"
          f"   rewritten: {results['origin']['rewritten']['origin']}")
    for name, row in rows.items():
        rt = row["runtime"]
        status = "ok" if passed(row) else "DIFFERENT" if row["diffs"] else "both fail"
        if row["errors"].get("construct"):
            status = "not built"
        bad += not passed(row)
        print(f"{status:9} {name:28} wrapped {rt.get('wrapped', 0):3} captures {rt.get('captures', 0):3} "
              f"replays {rt.get('forward_replays', 0):3}/{rt.get('backward_replays', 0):3} tied {row['shared']} "
              f"max rel {row['worst']:.1e}  {row['seconds']['original']:.1f}/{row['seconds']['rewritten']:.1f} s"
              + (f"  n/a: {', '.join(row['not_run'])}" if row["not_run"] else ""))
        for part, whats in row["diffs"].items():
            for what in whats[:4]:
                print(f"      {part}: {what}")
        for part, err in row["errors"].items():
            if part not in row["diffs"]:
                print(f"      (both) {part}: {err}")
        for reason, n in sorted(rt.get("fallbacks", {}).items()):
            print(f"      fallback ({n} layers): {reason[:200]}")
    return bad


SUITES: dict[str, Callable[[], Suite]] = {"transformers": transformers_suite, "timm": timm_suite, "paddlenlp": paddlenlp_suite}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="copy and rewrite a library (needs libcst)")
    p.add_argument("--library", required=True, choices=sorted(SUITES))
    p.add_argument("--version", help="another version than the installed one (fetched with pip)")
    p.add_argument("--dir", type=Path, help="where the copy goes (default: the cache)")
    p.add_argument("--tar", type=Path, help="also pack the copy into this .tar.gz")
    p.add_argument("--jobs", type=int)
    c = sub.add_parser("check", help="compare the library with its rewritten copy")
    c.add_argument("--library", required=True, choices=sorted(SUITES))
    c.add_argument("--copy", type=Path, help="the prepared copy, a folder or a .tar.gz (default: the cache's of the installed version)")
    c.add_argument("--models", nargs="+")
    c.add_argument("--device", default="cpu")
    c.add_argument("--tolerance", type=float, default=TOLERANCE, help="largest relative difference counted as equal")
    c.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "autograph-cg-dropin")
    c.add_argument("--json", type=Path)
    c.add_argument("--timeout", type=int, default=7200, help="seconds per worker process")
    c.add_argument("--deterministic", action="store_true", help="torch.use_deterministic_algorithms (GPU: eager "
                   "kernels that add in another order on each run would otherwise differ from themselves)")
    w = sub.add_parser("worker", help="one side (internal)")
    w.add_argument("--suite", required=True)
    w.add_argument("--path", action="append", default=[])
    w.add_argument("--expect")
    w.add_argument("--out", required=True)
    w.add_argument("--models", nargs="+")
    w.add_argument("--device", default="cpu")
    w.add_argument("--phase", default="build", choices=("build", "load"))
    w.add_argument("--checkpoints", default="")
    w.add_argument("--load-from", default="")
    w.add_argument("--deterministic", action="store_true")
    args = parser.parse_args(argv)
    if args.cmd == "worker":
        worker(args)
        return 0
    site = ensure_site(args.library)
    if args.cmd == "prepare":
        version = args.version or installed_version(args.library, site)
        dest = args.dir or cache_dir() / f"{args.library}-{version}"
        prepare(args.library, args.version, dest, [], args.jobs)
        if args.tar:
            pack(dest, args.tar)
        return 0
    copy = args.copy or cache_dir() / f"{args.library}-{installed_version(args.library, site)}"
    if copy.suffix == ".gz":
        copy = unpack(copy, args.scratch.with_name(args.scratch.name + "-copy"))
    meta = json.loads((copy / MARKER).read_text())
    installed = installed_version(args.library, site)
    original: list[str] = []
    if meta["version"] != installed:
        if not (copy / "original" / args.library).is_dir():
            print(f"dropin: the copy is of {args.library} {meta['version']}, {installed} is installed", file=sys.stderr)
            return 2
        original = [str(copy / "original")]  # the unmodified copy the rewrite was made from
    print(f"{args.library} {meta['version']}: copy {copy} ({meta['rewrite']['sites']} sites in "
          f"{meta['rewrite']['files_changed']} files); original: {original[0] if original else 'installed'}")
    results = check(args.library, copy, original, args.scratch, args.models, args.device, args.tolerance, args.timeout,
                    site, args.deterministic)
    results["rewrite"] = meta
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    bad = print_results(args.library, results)
    for name, why in results["left_out"].items():
        print(f"left out  {name}: {why}")
    replayed = sum(passed(row) and row["runtime"].get("forward_replays", 0) > 0 for row in results["models"].values())
    print(f"\n{len(results['models']) - bad} of {len(results['models'])} models passed (no difference, every part "
          f"of {', '.join(CORE)} run); {replayed} of them replayed graphs (the others: nothing wrapped, or every "
          "wrapped layer ran eagerly)")
    return 1 if bad else 0


def unpack(tar: Path, dest: Path) -> Path:
    """A packed copy unpacked into ``dest``: the folder holding the package."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    (folder,) = [p for p in dest.iterdir() if p.is_dir()]
    return folder


if __name__ == "__main__":
    sys.exit(main())
