"""A small model library, one per framework, for the drop-in check of bench/dropin.py in CI.

It does what model libraries do to their layers: ties the output projection to the input embedding by
looking the parameter up by name, initialises weights by ``isinstance`` over every module, resizes the
embedding by replacing the sublayer, switches activation checkpointing per block, and saves and loads
checkpoints by ``state_dict`` keys. The test writes it into a temporary folder, rewrites it with
``autograph-cg rewrite`` and compares the two with the bench's check.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import dropin  # noqa: E402

TORCH_SOURCE = '''
import json
import os

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class Config:
    def __init__(self, vocab_size=40, hidden=16, layers=2, tie=True):
        self.vocab_size, self.hidden, self.layers, self.tie = vocab_size, hidden, layers, tie


class Embeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position = nn.Embedding(32, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden)
        self.register_buffer("positions", torch.arange(32), persistent=False)

    def forward(self, ids):
        return self.norm(self.word(ids) + self.position(self.positions[: ids.shape[1]]))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.hidden)
        self.fc1 = nn.Linear(cfg.hidden, 4 * cfg.hidden)
        self.fc2 = nn.Linear(4 * cfg.hidden, cfg.hidden)
        self.gate = nn.Linear(cfg.hidden, cfg.hidden)
        self.norm2 = nn.LayerNorm(cfg.hidden)
        self.unused = nn.Linear(cfg.hidden, cfg.hidden)  # no gradient, in either copy

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.norm1(x))))
        return self.norm2(x + h * torch.sigmoid(self.gate(x)))


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.embeddings = Embeddings(cfg)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.layers)])
        self.head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)
        self.gradient_checkpointing = False
        self.init_weights()
        self.tie_weights()

    def init_weights(self):
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.2)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, Embeddings):
                nn.init.normal_(module.word.weight, std=0.5)

    def tie_weights(self):
        if self.config.tie:
            self.head.weight = dict(self.named_parameters())["embeddings.word.weight"]

    def get_input_embeddings(self):
        return self.embeddings.word

    def resize_token_embeddings(self, n):
        old = self.embeddings.word
        new = nn.Embedding(n, old.embedding_dim)
        with torch.no_grad():
            new.weight[: old.num_embeddings] = old.weight
        self.embeddings.word = new
        self.head = nn.Linear(self.config.hidden, n, bias=False)
        self.config.vocab_size = n
        self.tie_weights()

    def gradient_checkpointing_enable(self):
        self.gradient_checkpointing = True

    def forward(self, input_ids, labels=None):
        x = self.embeddings(input_ids)
        for block in self.blocks:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=True)
            else:
                x = block(x)
        logits = self.head(x)
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return out

    def save_pretrained(self, folder):
        os.makedirs(folder, exist_ok=True)
        torch.save(self.state_dict(), os.path.join(folder, "model.pt"))
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(vars(self.config), f)

    @classmethod
    def from_pretrained(cls, folder):
        with open(os.path.join(folder, "config.json")) as f:
            model = cls(Config(**json.load(f)))
        report = model.load_state_dict(torch.load(os.path.join(folder, "model.pt")))
        return model, {k: list(v) for k, v in report._asdict().items() if v}
'''

PADDLE_SOURCE = '''
import json
import os

import paddle
import paddle.nn.functional as F
from paddle import nn
from paddle.distributed.fleet.utils import recompute


class Config:
    def __init__(self, vocab_size=40, hidden=16, layers=2):
        self.vocab_size, self.hidden, self.layers = vocab_size, hidden, layers


class Embeddings(nn.Layer):
    def __init__(self, cfg):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position = nn.Embedding(32, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden)
        self.register_buffer("positions", paddle.arange(32), persistable=False)

    def forward(self, ids):
        return self.norm(self.word(ids) + self.position(self.positions[: ids.shape[1]]))


class Block(nn.Layer):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.hidden)
        self.fc1 = nn.Linear(cfg.hidden, 4 * cfg.hidden)
        self.fc2 = nn.Linear(4 * cfg.hidden, cfg.hidden)
        self.gate = nn.Linear(cfg.hidden, cfg.hidden)
        self.norm2 = nn.LayerNorm(cfg.hidden)
        self.unused = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.norm1(x))))
        return self.norm2(x + h * F.sigmoid(self.gate(x)))


class Model(nn.Layer):
    def __init__(self, cfg):
        super().__init__()
        self.config = cfg
        self.embeddings = Embeddings(cfg)
        self.blocks = nn.LayerList([Block(cfg) for _ in range(cfg.layers)])
        self.enable_recompute = False
        for layer in self.sublayers():
            if isinstance(layer, nn.Linear):
                layer.weight.set_value(paddle.normal(std=0.2, shape=layer.weight.shape))

    def get_input_embeddings(self):
        return self.embeddings.word

    def resize_token_embeddings(self, n):
        old = self.embeddings.word
        new = nn.Embedding(n, old.weight.shape[1])
        with paddle.no_grad():
            new.weight[: old.weight.shape[0]] = old.weight
        self.embeddings.word = new
        self.config.vocab_size = n

    def recompute_enable(self):
        self.enable_recompute = True

    def forward(self, input_ids, labels=None):
        x = self.embeddings(input_ids)
        for block in self.blocks:
            x = recompute(block, x, use_reentrant=True) if self.enable_recompute and self.training else block(x)
        logits = paddle.matmul(x, self.embeddings.word.weight, transpose_y=True)  # tied to the embedding
        out = {"logits": logits}
        if labels is not None:
            out["loss"] = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return out

    def save_pretrained(self, folder):
        os.makedirs(folder, exist_ok=True)
        paddle.save(self.state_dict(), os.path.join(folder, "model.pdparams"))
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(vars(self.config), f)

    @classmethod
    def from_pretrained(cls, folder):
        with open(os.path.join(folder, "config.json")) as f:
            model = cls(Config(**json.load(f)))
        missing, unexpected = model.set_state_dict(paddle.load(os.path.join(folder, "model.pdparams")))
        return model, {k: v for k, v in (("missing", missing), ("unexpected", unexpected)) if v}
'''

SOURCES = {"torch": TORCH_SOURCE, "paddle": PADDLE_SOURCE}
PACKAGE = {"torch": "tinylib_torch", "paddle": "tinylib_paddle"}


def write(folder: Path, framework: str) -> Path:
    """The sample library of ``framework`` as a package in ``folder``; returns the package folder."""
    package = folder / PACKAGE[framework]
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from .modeling import Config, Model\n")
    (package / "modeling.py").write_text(SOURCES[framework].lstrip())
    return package


def _suite(framework: str) -> dropin.Suite:
    package = PACKAGE[framework]

    def cases() -> dict[str, dropin.Case]:
        import importlib

        lib = importlib.import_module(package)

        def build(ops: Any) -> Any:
            return lib.Model(lib.Config(layers=2))

        def batch(ops: Any, g: Any, model: Any, seq: int) -> dict:
            ids = ops.randint(g, 0, model.config.vocab_size, (2, seq))
            return {"input_ids": ids, "labels": ids}

        switch = "gradient_checkpointing_enable" if framework == "torch" else "recompute_enable"
        return {
            f"{package}.Model": dropin.Case(
                build, batch,
                save=lambda ops, model, folder: model.save_pretrained(str(folder)),
                load=lambda ops, folder: lib.Model.from_pretrained(str(folder)),
                resize=lambda ops, model: model.resize_token_embeddings(model.config.vocab_size + 5),
                checkpointing=lambda ops, model: getattr(model, switch)(),
                sized=True,
            )
        }

    return dropin.Suite(package, framework, cases)


def torch_suite() -> dropin.Suite:
    return _suite("torch")


def paddle_suite() -> dropin.Suite:
    return _suite("paddle")
