"""The resolver's mechanisms, each with a case that must resolve to a capturable class and a look-alike that
must not, in both frameworks. A case is a small package: files with `{nn}`, `{Layer}` and `{fw}` standing for
the framework's spellings, and the verdict expected for some of its classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograph_cg.api import Options, analyze
from autograph_cg.config import Config

SPELLING = {
    "paddle": {"fw": "paddle", "nn": "paddle.nn", "Layer": "Layer", "List": "LayerList", "F": "paddle.nn.functional", "add": "add_sublayer", "sublayer": "sublayer", "capturing": "paddle.device.is_current_stream_capturing"},
    "torch": {"fw": "torch", "nn": "torch.nn", "Layer": "Module", "List": "ModuleList", "F": "torch.nn.functional", "add": "add_module", "sublayer": "module", "capturing": "torch.cuda.is_current_stream_capturing"},
}

CLEAN = """import {fw}
from {nn} import {Layer}


class Clean({Layer}):
    def forward(self, x):
        return x * 2


class Sync({Layer}):
    def forward(self, x):
        return x / x.max().item()
"""

AUTOGRAD = """import {fw}



class Clean({fw}.autograd.{function}):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class SyncBack({fw}.autograd.{function}):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad / grad.max().item()
"""

#: transformers' auto class machinery in small (`auto-class-factory`, `sub-configs`): two tables of names by model type
#: and the auto class pairing them.
AUTO_FACTORY = {
    "models/auto/names.py": """from collections import OrderedDict

CONFIG_NAMES = OrderedDict([("plain", "PlainConfig"), ("syncy", "SyncyConfig")])
CONFIG_NAMES.update({{"extra": "ExtraConfig"}})
""", "models/auto/auto_factory.py": """import importlib
from collections import OrderedDict


def _find(module, name):
    return getattr(module, name)


class _LazyAutoMapping(OrderedDict):
    def __init__(self, config_names, model_names):
        self.kinds = dict((v, k) for k, v in config_names.items())
        self.model_names = model_names

    def __getitem__(self, config_class):
        kind = self.kinds[config_class.__name__]
        return _find(importlib.import_module("." + kind, "pkg.models"), self.model_names[kind])


class _BaseAutoModelClass:
    _model_mapping = None

    @classmethod
    def from_config(cls, config, **kwargs):
        return cls._model_mapping[type(config)]._from_config(config, **kwargs)
""", "models/auto/modeling_auto.py": """from collections import OrderedDict

from .auto_factory import _BaseAutoModelClass, _LazyAutoMapping
from .names import CONFIG_NAMES

MODEL_NAMES = OrderedDict([("plain", "PlainModel"), ("syncy", "SyncyModel"), ("extra", "ExtraModel")])
MODEL_MAPPING = _LazyAutoMapping(CONFIG_NAMES, MODEL_NAMES)


class AutoModel(_BaseAutoModelClass):
    _model_mapping = MODEL_MAPPING
""",
}

# registry objects as transformers writes them: a class-wide table, and a local one only `__setitem__` fills
MASK_TABLES = """from collections.abc import MutableMapping

from {nn} import {Layer}, Linear


def clean_mask(x):
    return x * 2


def sync_mask(x):
    if (x > 0).all():
        return x
    return x * 2


class Table(MutableMapping):
    _global_mapping = {{}}

    def __init__(self):
        self._local_mapping = {{}}

    def __getitem__(self, key):
        return self._global_mapping[key]

    def __setitem__(self, key, value):
        self._local_mapping.update({{key: value}})

    def __delitem__(self, key):
        del self._local_mapping[key]

    def __iter__(self):
        return iter(self._global_mapping)

    def __len__(self):
        return len(self._global_mapping)


class Overridable(Table):
    def __getitem__(self, key):
        if key in self._local_mapping:
            return self._local_mapping[key]
        return self._global_mapping[key]


"""

# kernels registered by decorators for the functionals they serve (`kern.register`), one clean and one that syncs
KERNEL_OPS = """import {fw}

from .kern import register


def double(x):
    return x


@register(double, {fw}.Tensor)
def double_tensor(x):
    return x * 2


def norm(x):
    return x


@register(norm, {fw}.Tensor)
def norm_tensor(x):
    return x / x.max().item()
"""

CASES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    # a package function that calls what it is given runs, for each caller, what that caller passes
    "helper-per-call-site": (
        {"parts.py": CLEAN, "run.py": """def run_all(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def run_later(layers, x):
    def run(y):
        for layer in layers:
            y = layer(y)
        return y
    return run(x)
""", "m.py": """from {nn} import {Layer}, Sequential
from .parts import Clean, Sync
from .run import run_all, run_later


class Good({Layer}):
    def __init__(self):
        super().__init__()
        self.layers = Sequential(Clean(), Clean())

    def forward(self, x):
        return run_all(self.layers, x)


class GoodLater({Layer}):
    def __init__(self):
        super().__init__()
        self.layers = Sequential(Clean(), Clean())

    def forward(self, x):
        return run_later(self.layers, x)


class BadLater({Layer}):
    def __init__(self):
        super().__init__()
        self.layers = Sequential(Sync(), Clean())

    def forward(self, x):
        return run_later(self.layers, x)


class Bad({Layer}):
    def __init__(self):
        super().__init__()
        self.layers = Sequential(Clean(), Sync())

    def forward(self, x):
        return run_all(self.layers, x)
"""},
        {"m.Good": "eligible", "m.Bad": "ineligible", "m.GoodLater": "eligible", "m.BadLater": "ineligible"},
    ),
    # keyword arguments forwarded through a builder function's `**kwargs` and `dict(..., **kwargs)`
    "forwarded-keywords": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean


class Block({Layer}):
    def __init__(self, dim, stride=1, norm_layer=None):
        super().__init__()
        self.norm = norm_layer()

    def forward(self, x):
        return self.norm(x)


def make_blocks(block_fns, **kwargs):
    block_kwargs = dict(stride=1, **kwargs)
    return [block_fn(4, **block_kwargs) for block_fn in block_fns]


class Good({Layer}):
    def __init__(self):
        super().__init__()
        self.blocks = make_blocks((Block, Block), norm_layer=Clean)

    def forward(self, x):
        return self.blocks[0](x)

"""},
        {"m.Block": "eligible", "m.Good": "eligible"},
    ),
    # a constructor parameter's default class is what the attribute holds
    "parameter-default": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean, Sync


class Good({Layer}):
    def __init__(self, act_layer=Clean):
        super().__init__()
        self.act = act_layer()

    def forward(self, x):
        return self.act(x)


class Bad({Layer}):
    def __init__(self, act_layer=Sync):
        super().__init__()
        self.act = act_layer()

    def forward(self, x):
        return self.act(x)
"""},
        {"m.Good": "eligible", "m.Bad": "ineligible"},
    ),
    # what a call site passes (a partial, across files) binds the parameter too
    "call-site-binding": (
        {"parts.py": CLEAN, "block.py": """from {nn} import {Layer}
from .parts import Clean


class Block({Layer}):
    def __init__(self, norm_layer=Clean):
        super().__init__()
        self.norm = norm_layer()

    def forward(self, x):
        return self.norm(x)
""", "model.py": """from functools import partial

from {nn} import {Layer}
from .block import Block
from .parts import Sync


class Uses({Layer}):
    def __init__(self):
        super().__init__()
        self.block = Block(norm_layer=partial(Sync))

    def forward(self, x):
        return self.block(x)
"""},
        {"block.Block": "ineligible", "model.Uses": "ineligible"},
    ),
    # a factory returns an instance of a class picked from a table by a known string: only that entry counts
    "factory-and-registry": (
        {"parts.py": CLEAN, "acts.py": """from .parts import Clean, Sync

_TABLE = dict(clean=Clean, sync=Sync)


def create_act(name):
    return _TABLE[name.lower()]()


def create_named(name: str):  # a host annotation: any caller's name is a host value, a call's own is read
    return _TABLE[name]()
""", "m.py": """from {nn} import {Layer}
from .acts import create_act, create_named


class Picked({Layer}):
    def __init__(self):
        super().__init__()
        self.act = create_act("Clean")

    def forward(self, x):
        return self.act(x)


class AnyOf({Layer}):
    def __init__(self, name):
        super().__init__()
        self.act = create_act(name)

    def forward(self, x):
        return self.act(x)


class PickedByName({Layer}):
    def __init__(self):
        super().__init__()
        self.act = create_named("clean")

    def forward(self, x):
        return self.act(x)
"""},
        {"m.Picked": "eligible", "m.AnyOf": "ineligible", "m.PickedByName": "eligible"},
    ),
    # a module-level alias defined in both arms of an `if` holds either class; an arm for another device never runs
    "aliases-and-devices": (
        {"parts.py": CLEAN, "alias.py": """import os

from .parts import Clean, Sync

if os.environ.get("FAST"):
    Either = Sync
else:
    Either = Clean

if {fw}.device.get_device() == "xpu":
    OnCuda = Sync
else:
    OnCuda = Clean
""", "m.py": """import {fw}
from {nn} import {Layer}
from .alias import Either, OnCuda


class UsesEither({Layer}):
    def __init__(self):
        super().__init__()
        self.f = Either()

    def forward(self, x):
        return self.f(x)


class UsesOnCuda({Layer}):
    def __init__(self):
        super().__init__()
        self.f = OnCuda()

    def forward(self, x):
        if {fw}.device.get_device() == "npu":
            x = x.cpu()
        return self.f(x)
"""},
        {"m.UsesEither": "ineligible", "m.UsesOnCuda": "eligible"},
    ),
    # `self.model.decoder(x)`: an attribute of a sublayer called, not a method of it
    "sublayer-of-a-sublayer": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}

from .parts import Clean, Sync


class CleanHolder({Layer}):
    def __init__(self):
        super().__init__()
        self.decoder = Clean()


class SyncHolder({Layer}):
    def __init__(self):
        super().__init__()
        self.decoder = Sync()


class OuterClean({Layer}):
    def __init__(self):
        super().__init__()
        self.model = CleanHolder()

    def forward(self, x):
        return self.model.decoder(x)


class OuterSync(OuterClean):  # its own `self.model` decides, under the forward it inherits
    def __init__(self):
        super().__init__()
        self.model = SyncHolder()
"""},
        {"m.OuterClean": "eligible", "m.OuterSync": "ineligible"},
    ),
    # `(x := value)` in a test binds x in the function, as an assignment does
    "assignment-expressions": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}

from .parts import Clean, Sync


class Picks({Layer}):
    def __init__(self, layer):
        super().__init__()
        self.first = layer

    def chosen(self):
        if (found := getattr(self, "first", None)) is not None:
            return found
        return Clean()

    def forward(self, x):
        return self.chosen()(x)


def build():
    return Picks(Clean()), Picks(Sync())
"""},
        {"m.Picks": "ineligible"},
    ),
    # a package's own check for another accelerator (`is_torch_npu_available()`) is false where graphs run; a
    # check of something else is not
    "other-accelerator-checks": (
        {"parts.py": CLEAN, "utils.py": """import importlib.util


def is_torch_npu_available():
    return importlib.util.find_spec("torch_npu") is not None


def is_flash_available():
    return importlib.util.find_spec("flash_kernels") is not None
""", "m.py": """from {nn} import {Layer}

from .utils import is_flash_available, is_torch_npu_available


class Geglu({Layer}):
    def forward(self, x):
        if is_torch_npu_available():
            import torch_npu

            return torch_npu.npu_geglu(x)
        return x * 2


class Flash({Layer}):
    def forward(self, x):
        if is_flash_available():
            import flash_kernels

            return flash_kernels.geglu(x)
        return x * 2
"""},
        {"m.Geglu": "eligible", "m.Flash": "unknown"},
    ),
    # a local dispatch variable, and `Fn.apply(...)` of an autograd function: its forward and backward run
    "dispatch-and-autograd-functions": (
        {"m.py": """import {fw}
from {nn} import {Layer}


def fast(x):
    return x * 2


def slow(x):
    return x / x.max().item()


class Dispatch({Layer}):
    def __init__(self, clean=True):
        super().__init__()
        self.clean = clean

    def forward(self, x):
        fn = fast if self.clean else slow
        return fn(x)


class Only({Layer}):
    def forward(self, x):
        fn = fast
        return fn(x)
""", "fn.py": AUTOGRAD},
        {"m.Dispatch": "ineligible", "m.Only": "eligible", "fn.Clean": "eligible", "fn.SyncBack": "ineligible"},
    ),
    # a registered buffer is a tensor: a condition on its values is host control flow
    "buffers-are-tensors": (
        {"m.py": """import {fw}
from {nn} import {Layer}


class Rope({Layer}):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", {fw}.ones([4]))

    def forward(self, x):
        return x * self.inv_freq.sum()


class Branchy({Layer}):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", {fw}.ones([4]))

    def forward(self, x):
        if self.inv_freq.sum() > 0:
            return x
        return -x
"""},
        {"m.Rope": "eligible", "m.Branchy": "ineligible"},
    ),
    # code behind a default-off flag or an optional argument is conditional; side effects there are never waived
    "default-off-conditions": (
        {"m.py": """import {fw}
from {nn} import {Layer}


class Checkpointed({Layer}):
    def __init__(self):
        super().__init__()
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, x, mask=None):
        if self.grad_checkpointing:
            x = x / x.max().item()
        if mask is not None:
            x = x * mask.sum().item()
        return x


class Stateful({Layer}):
    def __init__(self):
        super().__init__()
        self.track = False
        self.calls = 0

    def forward(self, x):
        if self.track:
            self.calls += 1
        return x
"""},
        {"m.Checkpointed": "conditional", "m.Stateful": "conditional"},  # Stateful: under a guard on `self.track`
    ),
    # an optional import with a fallback: what only the installed package runs is conditional on it
    "optional-imports": (
        {"m.py": """from {nn} import {Layer}

try:
    from fused_kernels import fused_norm
except ImportError:
    def fused_norm(x):
        return x


class Fused({Layer}):
    def forward(self, x):
        return fused_norm(x)
""", "n.py": """from {nn} import {Layer}
from other_kernels import plain_norm


class Plain({Layer}):
    def forward(self, x):
        return plain_norm(x)
"""},
        {"m.Fused": "conditional", "n.Plain": "unknown"},
    ),
    # what only a non-default configuration builds is conditional on it
    "default-configuration": (
        {"m.py": """from {nn} import {Layer}
import {nn} as nn
from parallel_library import ParallelLinear


class Config:
    def __init__(self, parallel_degree=1, hidden=4):
        self.parallel_degree = parallel_degree
        self.hidden = hidden


class Proj({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        if config.parallel_degree > 1:
            self.proj = ParallelLinear(config.hidden)
        else:
            self.proj = nn.Linear(config.hidden, config.hidden)

    def forward(self, x):
        return self.proj(x)


def parallel_model():
    return Proj(Config(parallel_degree=8))


class AlwaysParallel({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        self.proj = ParallelLinear(config.hidden)

    def forward(self, x):
        return self.proj(x)
"""},
        {"m.Proj": "conditional", "m.AlwaysParallel": "unknown"},
    ),
    # a setting read from the `**kwargs` of a config no call seen builds (`kwargs.pop("degree", -1)`): the default is
    # what it gives, but a loader's `cls(**settings)` may pass anything, so what another value builds is conditional
    "settings-of-an-unbuilt-config": (
        {"m.py": """from {nn} import {Layer}
import {nn} as nn
from parallel_library import ParallelLinear


class Settings:
    renamed = {{"n_hidden": "hidden"}}

    def __init__(self, **kwargs):
        for old, new in self.renamed.items():  # a table's keys are known: what it moves stays under them
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
        if "extra" in kwargs:
            kwargs["extra"] = None  # stored under its own key: no other setting reads it
        self.parallel_degree = kwargs.pop("parallel_degree", -1)
        self.wide_degree = kwargs.pop("wide_degree", 8)


class Proj({Layer}):
    def __init__(self, config: Settings):
        super().__init__()
        if config.parallel_degree > 1:
            self.proj = ParallelLinear(4)
        else:
            self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)


class WideProj({Layer}):
    def __init__(self, config: Settings):
        super().__init__()
        if config.wide_degree > 1:
            self.proj = ParallelLinear(4)
        else:
            self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)
"""},
        {"m.Proj": "conditional", "m.WideProj": "unknown"},
    ),
    # `config_class = Settings` in a model's body declares what its `config` is built from (its loader builds that
    # class and passes it), as an annotation would; without a declaration the parameter stays unseen, any setting
    "declared-config-class": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean, Sync


class Settings:
    def __init__(self, use_sync=False):
        self.use_sync = use_sync


class Block({Layer}):
    def __init__(self, config):
        super().__init__()
        if config.use_sync:
            self.inner = Sync()
        else:
            self.inner = Clean()

    def forward(self, x):
        return self.inner(x)


class Pretrained({Layer}):
    config_class = None


class Model(Pretrained):
    config_class = Settings

    def __init__(self, config):
        super().__init__()
        self.block = Block(config)

    def forward(self, x):
        return self.block(x)


class Undeclared(Pretrained):
    def __init__(self, config):
        super().__init__()
        self.block = OtherBlock(config)

    def forward(self, x):
        return self.block(x)


class OtherBlock({Layer}):
    def __init__(self, config):
        super().__init__()
        if config.use_sync:
            self.inner = Sync()
        else:
            self.inner = Clean()

    def forward(self, x):
        return self.inner(x)
"""},
        {"m.Model": "eligible", "m.Block": "eligible", "m.Undeclared": "ineligible"},
    ),
    # `args["block"] = Sync` stores under that key: `make(**args)` binds it to `block`, and a lookup of another key
    # does not read it (stored under any key, the binding missed it and every lookup read it)
    "keyed-stores": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean, Sync


def make(block, width=4):
    return block()


class Stage({Layer}):
    def __init__(self):
        super().__init__()
        args = {{"width": 4}}
        args["block"] = Clean
        args["spare"] = Sync
        self.block = make(block=args["block"])

    def forward(self, x):
        return self.block(x)


class SyncStage({Layer}):
    def __init__(self):
        super().__init__()
        args = {{"width": 4}}
        args["block"] = Sync
        self.block = make(**args)

    def forward(self, x):
        return self.block(x)
"""},
        {"m.Stage": "eligible", "m.SyncStage": "ineligible"},
    ),
    # `partial(Block, act=Sync)` binds what it is given as a call of Block would: a call site of it (a partial is its
    # callable, so the later call binds only what it passes itself)
    "partial-binds": (
        {"parts.py": CLEAN, "m.py": """from functools import partial

from {nn} import {Layer}
from .parts import Clean, Sync


class Block({Layer}):
    def __init__(self, width, act=Clean):
        super().__init__()
        self.act = act()

    def forward(self, x):
        return self.act(x)


def make(layer_fn):
    return layer_fn(4)


class Net({Layer}):
    def __init__(self):
        super().__init__()
        self.block = make(partial(Block, act=Sync))

    def forward(self, x):
        return self.block(x)
"""},
        {"m.Block": "ineligible", "m.Net": "ineligible"},
    ),
    # an object of a package class called runs its class's `__call__`: the call binds its parameters (what a builder
    # object is handed reaches the blocks it makes) and gives what it returns (not a layer's output)
    "called-objects": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, Sequential
from .parts import Clean, Sync


class Block({Layer}):
    def __init__(self, act=Clean):
        super().__init__()
        self.act = act()

    def forward(self, x):
        return self.act(x)


class Builder:
    def __call__(self, acts):
        return [self._make(act) for act in acts]

    def _make(self, act):
        return Block(act=act)


class Net({Layer}):
    def __init__(self):
        super().__init__()
        builder = Builder()
        self.blocks = Sequential(*builder([Clean]))

    def forward(self, x):
        return self.blocks(x)


class Maker:
    def __call__(self, layer_cls):
        return layer_cls()


class Made({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = Maker()(Clean)

    def forward(self, x):
        return self.inner(x)


class SyncMade({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = Maker()(Sync)

    def forward(self, x):
        return self.inner(x)
"""},
        {"m.Block": "eligible", "m.Net": "eligible", "m.Made": "eligible", "m.SyncMade": "ineligible"},
    ),
    # a layer that overrides `__call__` runs it when called (no forward of its own): judged by it; a class whose
    # `__init__` only raises is never built, so nothing of it runs where a parent may build it
    "call-and-placeholder-layers": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean


class Pad({Layer}):
    def __call__(self, x):
        return x * 2


class SyncPad({Layer}):
    def __call__(self, x):
        return x / x.max().item()


class Placeholder({Layer}):
    def __init__(self, width):
        \"\"\"Not written yet.\"\"\"
        raise NotImplementedError


class Unfinished({Layer}):
    def __init__(self, width):
        super().__init__()
        if width > 8:
            raise NotImplementedError


class Padded({Layer}):
    def __init__(self, width=4):
        super().__init__()
        self.pad = Pad()
        self.block = Placeholder(width) if width > 8 else Clean()

    def forward(self, x):
        return self.block(self.pad(x))


class Unsure({Layer}):
    def __init__(self, width=4):
        super().__init__()
        self.block = Unfinished(width) if width > 8 else Clean()

    def forward(self, x):
        return self.block(x)
"""},
        {"m.Pad": "eligible", "m.SyncPad": "ineligible", "m.Padded": "eligible", "m.Unsure": "unknown"},
    ),
    # a builder that calls its parameter (`model_cls(**kwargs)`) builds, for each of its callers, what that caller
    # passes, with that caller's arguments only
    "builder-per-caller": (
        {"parts.py": CLEAN, "builder.py": """def build(model_cls, variant, **kwargs):
    return model_cls(**kwargs)
""", "nets.py": """from {nn} import {Layer}
from .builder import build
from .parts import Clean, Sync


class CleanNet({Layer}):
    def __init__(self, norm_layer):
        super().__init__()
        self.norm = norm_layer()

    def forward(self, x):
        return self.norm(x)


class SyncNet({Layer}):
    def __init__(self, norm_layer, plain=False):
        super().__init__()
        self.norm = Clean() if plain else norm_layer()  # two candidates: the default build is asked too

    def forward(self, x):
        return self.norm(x)


def clean_net(**kwargs):
    return build(CleanNet, "clean", norm_layer=Clean, **kwargs)


def sync_net(**kwargs):
    return build(SyncNet, "sync", norm_layer=Sync, **kwargs)
"""},
        {"nets.CleanNet": "eligible", "nets.SyncNet": "ineligible"},
    ),
    # `layer.train(mode)`, `.to(...)`, `.eval()` of a framework layer give the layer back
    "methods-returning-the-layer": (
        {"parts.py": CLEAN, "m.py": """import {nn} as nn
from {nn} import {Layer}
from .parts import Sync


class Head({Layer}):
    def __init__(self):
        super().__init__()
        self.norm = nn.Identity().train(self.training)

    def forward(self, x):
        return self.norm(x)


class SyncHead({Layer}):
    def __init__(self):
        super().__init__()
        self.norm = Sync().train(self.training)

    def forward(self, x):
        return self.norm(x)
"""},
        {"m.Head": "eligible", "m.SyncHead": "ineligible"},
    ),
    # sublayers added under computed names (`add_module(*pair)`, `add_module(f"layer{{i}}", m)`) are what attributes
    # that no code names may hold
    "computed-sublayer-names": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean, Sync


class Staged({Layer}):
    def __init__(self):
        super().__init__()
        stages = [(f"layer{{i + 1}}", Clean()) for i in range(2)]
        for stage in stages:
            self.{add}(*stage)

    def forward(self, x):
        return self.layer2(self.layer1(x))


class SyncStaged({Layer}):
    def __init__(self, depth=2):
        super().__init__()
        for i in range(depth):
            self.{add}(f"layer{{i + 1}}", Sync())

    def forward(self, x):
        return self.layer1(x)
"""},
        {"m.Staged": "eligible", "m.SyncStaged": "ineligible"},
    ),
    # a class built only through a value (`model_cls(**kwargs)`): its parameters are what that call passes, also
    # where a loop feeds a helper's result back into its own argument (`make, width = stage(width, w)`)
    "built-through-a-value": (
        {"parts.py": CLEAN, "builder.py": """def build(model_cls, **kwargs):
    return model_cls(**kwargs)
""", "nets.py": """import {nn} as nn
from {nn} import {Layer}
from .builder import build
from .parts import Clean


def stage(width, w, block):
    return block, width if w is None else w


class Net({Layer}):
    def __init__(self, widths, block=Clean):
        super().__init__()
        width, stages = widths[0], []
        for w in widths[1:]:
            make, width = stage(width, w, block)
            stages.append(make())
        self.stages = nn.Sequential(*stages)

    def forward(self, x):
        return self.stages(x)


class Unbuilt({Layer}):  # nothing seen builds it: what its stages hold cannot be told
    def __init__(self, makers):
        super().__init__()
        self.stages = nn.Sequential(*[make() for make in makers])

    def forward(self, x):
        return self.stages(x)


def net(**kwargs):
    return build(Net, widths=[8, 16, 32], **kwargs)
"""},
        {"nets.Net": "eligible", "nets.Unbuilt": "unknown"},
    ),
    # `from pkg import sub` names a submodule that `pkg/__init__.py` does not bind: the module itself
    "submodule-imports": (
        {"ops/__init__.py": "", "ops/misc.py": CLEAN, "nets.py": """from {nn} import {Layer}

from .ops import misc as misc_ops


class Net({Layer}):
    def __init__(self):
        super().__init__()
        self.block = misc_ops.Clean()

    def forward(self, x):
        return self.block(x)


class Syncing({Layer}):
    def __init__(self):
        super().__init__()
        self.block = misc_ops.Sync()

    def forward(self, x):
        return self.block(x)
"""},
        {"nets.Net": "eligible", "nets.Syncing": "ineligible"},
    ),
    # a Sequential subclass without a forward of its own runs what it holds: what its constructor was given,
    # a registry that is an object: a mapping class whose `__getitem__` builds the class stored under the key,
    # run for each key looked up (a config value's default among them)
    "mapping-class-registry": (
        {"parts.py": CLEAN + """

class Scaled({Layer}):
    def __init__(self, factor=1):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor
""", "m.py": """from collections import OrderedDict

from {nn} import {Layer}

from .parts import Clean, Scaled, Sync


class ClassInstantier(OrderedDict):
    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {{}})
        return cls(**kwargs)


ACT2FN = ClassInstantier({{"clean": Clean, "scaled": (Scaled, {{"factor": 2}}), "sync": Sync}})


class Config:
    def __init__(self, hidden_act="clean"):
        self.hidden_act = hidden_act


class Intermediate({Layer}):
    def __init__(self, config):
        super().__init__()
        self.act = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.act(x)


class Model({Layer}):
    def __init__(self):
        super().__init__()
        self.inter = Intermediate(Config())

    def forward(self, x):
        return self.inter(x)


class Scaling({Layer}):
    def __init__(self):
        super().__init__()
        self.act = ACT2FN["scaled"]

    def forward(self, x):
        return self.act(x)


class Synced({Layer}):
    def __init__(self):
        super().__init__()
        self.act = ACT2FN["sync"]

    def forward(self, x):
        return self.act(x)
"""},
        {"m.Intermediate": "eligible", "m.Model": "eligible", "m.Scaling": "eligible", "m.Synced": "ineligible"},
    ),
    # `self` in an inherited method is the class that runs it: its prefix, what its own methods make
    "self-in-inherited-methods": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean, Sync


class Base({Layer}):
    prefix = "model"

    def __init__(self):
        super().__init__()
        setattr(self, self.prefix, self.make())

    def forward(self, x):
        return getattr(self, self.prefix)(x)


class GoodHead(Base):
    prefix = "body"

    def make(self):
        return Clean()


class BadHead(Base):
    prefix = "trunk"

    def make(self):
        return Sync()
"""},
        {"m.GoodHead": "eligible", "m.BadHead": "ineligible"},
    ),
    # `isinstance(config.act, str)` is decided for known candidates, and a required argument that no call passes
    # (a class the package never builds) has no default build: the others decide which branch is the default one,
    # so what only that argument may bring is conditional; a class that only such a build reaches stays unknown, and
    # a default that is no string takes the other branch
    "unseen-arguments-and-isinstance": (
        {"parts.py": CLEAN, "m.py": """from collections import OrderedDict

from {nn} import {Layer}

from .parts import Clean, Sync


class Table(OrderedDict):
    def __getitem__(self, key):
        return super().__getitem__(key)()


ACTS = Table({{"clean": Clean}})


class Config:
    def __init__(self, act="clean"):
        self.act = act


class SyncConfig:
    def __init__(self, act=Sync()):
        self.act = act


class Intermediate({Layer}):
    def __init__(self, config):
        super().__init__()
        if isinstance(config.act, str):
            self.act = ACTS[config.act]
        else:
            self.act = config.act

    def forward(self, x):
        return self.act(x)


class Block({Layer}):
    def __init__(self, config):
        super().__init__()
        self.inter = Intermediate(config)

    def forward(self, x):
        return self.inter(x)


class Model({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        self.block = Block(config)

    def forward(self, x):
        return self.block(x)


class Unbuilt({Layer}):  # nothing in the package builds it, so nothing passes its config
    def __init__(self, config):
        super().__init__()
        self.block = Block(config)
        self.own = Direct(config)

    def forward(self, x):
        return self.own(self.block(x))


class Direct({Layer}):  # only Unbuilt builds it: no default build says what `config.act` is
    def __init__(self, config):
        super().__init__()
        if isinstance(config.act, str):
            self.act = ACTS[config.act]
        else:
            self.act = config.act

    def forward(self, x):
        return self.act(x)


class Other({Layer}):
    def __init__(self, config):
        super().__init__()
        if isinstance(config.act, str):
            self.act = ACTS[config.act]
        else:
            self.act = config.act

    def forward(self, x):
        return self.act(x)


class SyncModel({Layer}):
    def __init__(self):
        super().__init__()
        self.other = Other(SyncConfig())

    def forward(self, x):
        return self.other(x)
"""},
        {"m.Intermediate": "conditional", "m.Block": "conditional", "m.Model": "conditional", "m.Direct": "unknown",
         "m.Unbuilt": "unknown", "m.Other": "ineligible", "m.SyncModel": "ineligible"},
    ),
    # construction through an attribute that holds a class (`cnf.block(cnf, norm_layer)`), the field a subclass's
    # `super().__init__(...)` hands to its dataclass base, and a list built only under a test on a host value's method
    # (`arch.startswith("net")`, undecided rather than never holding)
    "built-through-an-attribute": (
        {"parts.py": CLEAN, "m.py": """from dataclasses import dataclass

from {nn} import {Layer}, Sequential

from .parts import Clean, Sync


class Block({Layer}):
    def __init__(self, cnf, norm_layer):
        super().__init__()
        self.norm = norm_layer()

    def forward(self, x):
        return self.norm(x)


class SyncBlock({Layer}):
    def __init__(self, cnf, norm_layer):
        super().__init__()
        self.norm = norm_layer()

    def forward(self, x):
        return self.norm(x)


@dataclass
class _Settings:
    width: int
    block: object


class Settings(_Settings):
    def __init__(self, width, block=None):
        if block is None:
            block = Block
        super().__init__(width, block)


def settings(arch: str):
    if arch.startswith("net"):
        found = [Settings(4), Settings(8)]
    else:
        raise ValueError(arch)
    return found


class Net({Layer}):
    def __init__(self, setting, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = Clean
        layers = []
        for cnf in setting:
            layers.append(cnf.block(cnf, norm_layer))
        self.layers = Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class SyncNet({Layer}):
    def __init__(self, setting, norm_layer=None):
        super().__init__()
        layers = []
        for cnf in setting:
            layers.append(cnf.block(cnf, norm_layer))
        self.layers = Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


def net(arch: str):
    return Net(settings(arch))


def synced_net():
    return SyncNet([_Settings(2, SyncBlock)], norm_layer=Sync)
"""},
        {"m.Block": "eligible", "m.Net": "eligible", "m.SyncBlock": "ineligible", "m.SyncNet": "ineligible"},
    ),
    # a wrapper that hands its `*args` on (`super().__init__(*args, **kwargs)`) binds each of its callers' arguments
    # to the place it came in, not every argument to every place past the star
    "forwarded-positional-arguments": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}

from .parts import Clean, Sync


class Base({Layer}):
    def __init__(self, kept, used):
        super().__init__()
        self.kept = kept
        self.used = used

    def forward(self, x):
        return self.used(x)


class SyncBase({Layer}):
    def __init__(self, kept, used):
        super().__init__()
        self.kept = kept
        self.used = used

    def forward(self, x):
        return self.used(x)


class Wrapper(Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class SyncWrapper(SyncBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


def build():
    return Wrapper(Sync(), Clean())


def build_synced():
    return SyncWrapper(Clean(), Sync())
"""},
        {"m.Wrapper": "eligible", "m.SyncWrapper": "ineligible"},
    ),
    # an attribute a class body declares with the class it holds (`config: Config`) holds an instance of it; a
    # declaration that names no class (`config: "Config"`) leaves the value to the base that assigns it
    "declared-attributes": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}

from .parts import Clean, Sync


class Config:
    def __init__(self, act=Clean):
        self.act = act


class SyncConfig:
    def __init__(self, act=Sync):
        self.act = act


class PreTrained({Layer}):
    def __init__(self, config):
        super().__init__()
        self.config = config


class CleanPreTrained(PreTrained):
    config: Config


class Head(CleanPreTrained):
    def __init__(self, config):
        super().__init__(config)
        self.act = self.config.act()

    def forward(self, x):
        return self.act(x)


class SyncHead(PreTrained):
    config: SyncConfig

    def __init__(self, config):
        super().__init__(config)
        self.act = self.config.act()

    def forward(self, x):
        return self.act(x)


class Undeclared(PreTrained):
    config: "Config"

    def __init__(self, config):
        super().__init__(config)
        self.act = self.config.act()

    def forward(self, x):
        return self.act(x)


def build():
    return PreTrained(SyncConfig())
"""},
        {"m.Head": "eligible", "m.SyncHead": "ineligible", "m.Undeclared": "ineligible"},
    ),
    # a setter nothing in the package calls does not blank what the constructor builds: conditional at most
    "setters": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}
from .parts import Clean, Sync


class Embedder({Layer}):
    def __init__(self):
        super().__init__()
        self.wte = Clean()

    def set_input_embeddings(self, new):
        self.wte = new

    def forward(self, x):
        return self.wte(x)


class Built({Layer}):
    def __init__(self):
        super().__init__()
        self.wte = Sync()

    def set_input_embeddings(self, new):
        self.wte = new

    def forward(self, x):
        return self.wte(x)
"""},
        {"m.Embedder": "conditional", "m.Built": "ineligible"},
    ),
    # an operand of `and`/`or` runs only when the operands before it do not decide: a tensor read there sits under
    # them (`mask is None or mask.all()` reads the mask only when one is passed), one read first does not
    "short-circuits": (
        {"m.py": """from {nn} import {Layer}, Linear


class Masked({Layer}):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 4)

    def forward(self, x, mask=None):
        if mask is None or mask.all():
            return self.fc(x)
        return self.fc(x * mask)


class Scaled({Layer}):
    def forward(self, x, scale=None):
        big = scale is not None and scale.item() > 0
        return x * 2 if big else x


class First({Layer}):
    def forward(self, x, mask=None):
        if mask.all() or mask is None:
            return x
        return x * mask


class Flagged({Layer}):
    def __init__(self, check=False):
        super().__init__()
        self.check = check

    def forward(self, x):
        if self.check and (x > 0).any():
            return x
        return x * 2
"""},
        {"m.Masked": "conditional", "m.Scaled": "conditional", "m.First": "ineligible", "m.Flagged": "conditional"},
    ),
    # a predicate that is true while a graph captures (the framework's query, or another module's function that
    # returns it or-ed with others) keeps what sits under its negation, or after an exit it takes, out of the graph
    # (a host read there is no hazard; a side effect stays one: a replay would skip it where eager does not); a
    # function of another module annotated to return a host value returns no tensor
    "capture-predicates": (
        {
            "checks.py": """import {fw}


def is_capturing() -> bool:
    try:
        return {capturing}()
    except Exception:
        return False


def is_tracing(x=None) -> bool:
    found = is_capturing() or {fw}.jit.is_scripting()
    if x is not None:
        found |= isinstance(x, int)
    return found


def is_scripted() -> bool:
    return {fw}.jit.is_scripting()


def all_of() -> bool:
    return is_capturing() and is_scripted()


def flag(x) -> bool:
    return x is None


def tensor_flag(x):
    return x.sum() > 0
""",
            "m.py": """from {nn} import {Layer}

from .checks import all_of, flag, is_scripted, is_tracing, tensor_flag


def fast_all(x):
    return x.sum() == x.numel()


class Skipped({Layer}):
    def forward(self, x):
        if not is_tracing(x) and (x > 0).all():
            return x
        return x * 2


class EarlyOut({Layer}):
    def forward(self, x, n: int = 1, mask=None):
        if mask is not None and is_tracing(mask):
            return x * 2
        if n == 1 and (mask is None or fast_all(mask)):
            return x
        return x * 3


class NotCapture({Layer}):
    def forward(self, x):
        if not is_scripted() and (x > 0).all():
            return x
        return x * 2


class Both({Layer}):
    def forward(self, x):
        if not all_of() and (x > 0).all():
            return x
        return x * 2


class Counted({Layer}):
    def __init__(self):
        super().__init__()
        self.calls = []

    def forward(self, x):
        if not is_tracing(x):
            self.calls.append(1)
        return x * 2


class HostFlag({Layer}):
    def forward(self, x):
        if flag(x):
            return x
        return x * 2


class TensorFlag({Layer}):
    def forward(self, x):
        if tensor_flag(x):
            return x
        return x * 2
""",
        },
        {"m.Skipped": "eligible", "m.EarlyOut": "eligible", "m.Counted": "ineligible", "m.NotCapture": "ineligible", "m.Both": "ineligible", "m.HostFlag": "eligible", "m.TensorFlag": "ineligible"},
    ),
    # a registry object read through an inherited `__getitem__` runs it with `self` the object's own class (its
    # table); a local table only a setter nobody calls fills is another configuration; when the default build finds
    # only a constant where a function is called, what runs is unknown, not "what another configuration builds"
    "registry-objects": (
        {"m.py": MASK_TABLES + """class Masks(Table):
    _global_mapping = {{"clean": clean_mask, "sync": sync_mask}}


class LocalMasks(Overridable):
    _global_mapping = {{"clean": clean_mask, "sync": sync_mask}}


MASKS = Masks()
LOCAL_MASKS = LocalMasks()
UNFILLED = Overridable()


class Config:
    def __init__(self, impl="clean"):
        self.impl = impl


class Masked({Layer}):
    def forward(self, x):
        return MASKS["clean"](x)


class Synced({Layer}):
    def forward(self, x):
        return MASKS["sync"](x)


class Overridden({Layer}):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.fc = Linear(4, 4)

    def forward(self, x):
        return self.fc(LOCAL_MASKS[self.config.impl](x))


class Unfilled({Layer}):
    def forward(self, x):
        return UNFILLED["clean"](x)
"""},
        {"m.Masked": "eligible", "m.Synced": "ineligible", "m.Overridden": "conditional", "m.Unfilled": "unknown"},
    ),
    # a registry object read with a key from a property of the config (`config._attn_implementation`): the key is
    # what the getter returns, not the getter function, so the lookup reads every entry of the table, and what only
    # a setter nobody calls stores stays another configuration's (a package function as an exact key is a module's
    # own function only)
    "registry-keyed-by-a-property": (
        {"m.py": MASK_TABLES + """class MaskInterface(Overridable):
    _global_mapping = {{"eager": clean_mask, "sdpa": clean_mask}}


class SyncMaskInterface(Overridable):
    _global_mapping = {{"eager": clean_mask, "sync": sync_mask}}


MASKS = MaskInterface()
SYNC_MASKS = SyncMaskInterface()


class Config:
    def __init__(self, attn_implementation="eager"):
        self._attn_implementation_internal = attn_implementation

    @property
    def _attn_implementation(self):
        return self._attn_implementation_internal


def create_mask(config, x):
    mask_interface = MASKS[config._attn_implementation]
    return mask_interface(x)


def create_sync_mask(config, x):
    mask_interface = SYNC_MASKS[config._attn_implementation]
    return mask_interface(x)


class Masked({Layer}):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.fc = Linear(4, 4)

    def forward(self, x):
        return self.fc(create_mask(self.config, x))


class SyncMasked({Layer}):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.fc = Linear(4, 4)

    def forward(self, x):
        return self.fc(create_sync_mask(self.config, x))
"""},
        {"m.Masked": "conditional", "m.SyncMasked": "ineligible"},
    ),
    # a property's setter shares its getter's name: reading the attribute runs the getter alone, so what only the
    # setter does (store on the layer) is not forward's; a getter that does it still is
    "property-setter-is-not-the-getter": (
        {"m.py": """import {fw}
from {nn} import {Layer}, Linear


def plain_loss(x):
    return x.sum()


class Base({Layer}):
    @property
    def loss_function(self):
        if hasattr(self, "_loss_function"):
            return self._loss_function
        return plain_loss

    @loss_function.setter
    def loss_function(self, value):
        self._loss_function = value

    @loss_function.deleter
    def loss_function(self):
        self._loss_function = plain_loss


class StoringBase({Layer}):
    @property
    def loss_function(self):
        self._loss_function = plain_loss
        return self._loss_function


class Head(Base):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 4)

    def forward(self, x):
        return self.loss_function(self.fc(x))


class StoringHead(StoringBase):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 4)

    def forward(self, x):
        return self.loss_function(self.fc(x))
"""},
        {"m.Head": "eligible", "m.StoringHead": "ineligible"},
    ),
    # hazards behind tests of forward's own arguments are kept out by a guard, carried through the calls that pass
    # the argument on unchanged; a constant passed decides the test, a rebound argument or a hazard outside the
    # tested branch blocks
    "argument-guards": (
        {"m.py": """import functools

import {fw}
from {nn} import {Layer}, Linear


class Attention({Layer}):
    def __init__(self):
        super().__init__()
        self.q = Linear(4, 4)

    def forward(self, x, mask=None, past_key_values=None, use_cache=False, **kwargs):
        q = self.q(x)
        if past_key_values is not None:
            q = past_key_values.update(q, 0)
        return q


class Block({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None, use_cache=False, **kwargs):
        return self.attn(x, past_key_values=past_key_values, use_cache=use_cache, **kwargs)


class Positional({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, cache=None):
        return self.attn(x, None, cache)


class NoCache({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x):
        return self.attn(x, past_key_values=None)


class Rebound({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None):
        past_key_values = past_key_values or []
        return self.attn(x, past_key_values=past_key_values)


class Flagged({Layer}):
    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x, use_cache=False, past=None):
        if use_cache and past is not None:
            self.seen.append(x)
        return x


class Outside({Layer}):
    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x, use_cache=False):
        if use_cache:
            x = x * 2
        self.seen.append(x)
        return x


class Stack({Layer}):
    def __init__(self):
        super().__init__()
        self.blocks = {nn}.{List}([Block() for _ in range(2)])

    def forward(self, x, past_key_values=None):
        for block in self.blocks:
            x = block(x, past_key_values)
        return x


class Handed({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, mask=None, **kwargs):
        return self.attn(x, mask=mask, **kwargs)


class HandedTwice({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = Handed()

    def forward(self, x, **kwargs):
        return self.inner(x, **kwargs)


class Filled({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, **kwargs):
        kwargs["past_key_values"] = []
        return self.attn(x, **kwargs)


class Named({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None, **kwargs):
        return self.attn(x, **kwargs)


class Cache:
    def update(self, q, i):
        return q


def config_defaults(forward):
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        if kwargs.get("use_cache") is None:
            kwargs["use_cache"] = True
        return forward(self, *args, **kwargs)

    return wrapper


class Created({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None, use_cache=False):
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class Decorated({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    @config_defaults
    def forward(self, x, past_key_values=None, use_cache=None):
        if use_cache:
            if past_key_values is None:
                past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class Heads({Layer}):
    def __init__(self):
        super().__init__()
        self.model = Decorated()

    def forward(self, x, use_cache=None):
        return self.model(x, use_cache=use_cache)


class Checkpointed({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None):
        return self.attn(x, past_key_values=past_key_values if not self.training else None)


class Parted({Layer}):
    def __init__(self):
        super().__init__()
        self.q = Linear(4, 4)

    def forward(self, x, past_key_values=None):
        q = self.q(x)
        if past_key_values is not None:
            past_key_values = past_key_values.self_attention_cache
            q = past_key_values.update(q, 0)
        return q


class Gathered({Layer}):
    def __init__(self):
        super().__init__()
        self.q = Linear(4, 4)

    def forward(self, x, children=None):
        if children is None:
            children = []
        children.append(self.q(x))
        return children[-1]


class Unguarded({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None, use_cache=False):
        if past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class Encoder({Layer}):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attn = Attention()

    @config_defaults
    def forward(self, x, past_key_values=None, use_cache=None):
        if self.config.is_decoder:
            use_cache = use_cache if use_cache is not None else self.config.use_cache
        else:
            use_cache = False
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class Defaulted({Layer}):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attn = Attention()

    def forward(self, x, past_key_values=None, use_cache=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class EncoderHead({Layer}):
    def __init__(self, config):
        super().__init__()
        self.encoder = Encoder(config)

    def forward(self, x):
        return self.encoder(x)


class Looped({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, past_key_values=None, use_cache=True, steps=()):
        for _ in steps:
            use_cache = False
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class Tracked({Layer}):
    def __init__(self):
        super().__init__()
        self.keep = False

    def forward(self, x, acc):
        if self.keep and acc is not None:
            acc.append(x)
        return x
"""},
        {"m.Tracked": "conditional", "m.Attention": "conditional", "m.Block": "conditional", "m.Positional": "conditional", "m.NoCache": "eligible",
         "m.Rebound": "ineligible", "m.Flagged": "conditional", "m.Outside": "ineligible", "m.Stack": "conditional",
         "m.Handed": "conditional", "m.HandedTwice": "conditional", "m.Filled": "ineligible", "m.Named": "eligible",
         "m.Created": "conditional", "m.Decorated": "conditional", "m.Heads": "conditional", "m.Unguarded": "ineligible",
         "m.Checkpointed": "conditional", "m.Parted": "conditional", "m.Gathered": "eligible", "m.Encoder": "conditional",
         "m.EncoderHead": "conditional", "m.Looped": "ineligible", "m.Defaulted": "conditional"},
    ),
    # `__init__` makes one of its methods the instance's forward: any of them may run
    "forward-chosen-in-init": (
        {"m.py": """from {nn} import {Layer}, Linear


class Partial({Layer}):
    def __init__(self, how="slicing"):
        super().__init__()
        self.fc = Linear(4, 4)
        if how == "slicing":
            self.forward = self.forward_slicing
        else:
            self.forward = self.forward_split

    def forward_slicing(self, x):
        return self.fc(x)

    def forward_split(self, x):
        return self.fc(x) * self.fc(x).sum().item()


class Plain({Layer}):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 4)
        self.forward = self.run

    def run(self, x):
        return self.fc(x)


class Holder({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = Plain()

    def forward(self, x):
        return self.inner(x)
"""},
        {"m.Partial": "ineligible", "m.Plain": "eligible", "m.Holder": "eligible"},
    ),
    # a write through a local alias of an argument, or into a part of it, mutates what the caller keeps
    "argument-alias-mutation": (
        {"m.py": """from {nn} import {Layer}


class Aliased({Layer}):
    def forward(self, x, past: Cache):
        cache = past.self_attention_cache
        cache.update(x)
        return x


class PartWritten({Layer}):
    def forward(self, x, past: Cache):
        past.is_updated[0] = True
        return x


class Copied({Layer}):
    def forward(self, x, past: Cache):
        cache = dict(past.self_attention_cache)
        cache.update(k=x)
        return x
"""},
        {"m.Aliased": "ineligible", "m.PartWritten": "ineligible", "m.Copied": "eligible"},
    ),
    # layers added to a container a layer holds (`self.blocks.add_module(str(i), block)`) or to a local one are its items
    "items-added-to-a-held-container": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, Sequential

from .parts import Clean, Sync


class Stage({Layer}):
    def __init__(self, depth, block_fn=Clean):
        super().__init__()
        self.blocks = Sequential()
        for i in range(depth):
            self.blocks.{add}(str(i), block_fn())

    def forward(self, x):
        return self.blocks(x)


class SyncStage({Layer}):
    def __init__(self, depth):
        super().__init__()
        blocks = Sequential()
        for i in range(depth):
            blocks.{add}(str(i), Sync())
        self.blocks = blocks

    def forward(self, x):
        return self.blocks(x)
"""},
        {"m.Stage": "eligible", "m.SyncStage": "ineligible"},
    ),
    # what it added (by keywords too) and the layers it assigns to itself
    "container-subclass-items": (
        {"parts.py": CLEAN, "seq.py": """from {nn} import Sequential

from .parts import Clean, Sync


class Given(Sequential):
    def __init__(self):
        super().__init__(Clean(), Clean())


class GivenSync(Sequential):
    def __init__(self):
        super().__init__(Clean(), Sync())


class Assigned(Sequential):
    def __init__(self):
        super().__init__()
        self.first = Clean()
        self.{add}(name="second", {sublayer}=Clean())


class AssignedSync(Sequential):
    def __init__(self):
        super().__init__()
        self.first = Clean()
        self.{add}(name="second", {sublayer}=Sync())


class Settings:
    width = 4


class Configured(Sequential):  # what it assigns that is no layer (a plain object, a number) is none of its modules
    def __init__(self):
        super().__init__(Clean())
        self.settings = Settings()
        self.width = 4
"""},
        {"seq.Given": "eligible", "seq.GivenSync": "ineligible", "seq.Assigned": "eligible", "seq.AssignedSync": "ineligible", "seq.Configured": "eligible"},
    ),
    # a lambda is a function whose body is what it returns: calling one runs that body, not its `__init__`
    "lambdas": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, Linear

from .parts import Clean


class Passthrough({Layer}):
    def __init__(self):
        super().__init__()
        self.lin = Linear(4, 4)
        self.drop = lambda x: x

    def forward(self, x):
        return self.lin(self.drop(x))


class CallsALayer({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = Clean()
        self.run = lambda x: self.inner(x)

    def forward(self, x):
        return self.run(x)


class Syncs({Layer}):
    def __init__(self):
        super().__init__()
        self.scale = lambda x: x / x.max().item()

    def forward(self, x):
        return self.scale(x)
"""},
        {"m.Passthrough": "eligible", "m.CallsALayer": "eligible", "m.Syncs": "ineligible"},
    ),
    # registries filled by decorators: a closure storing into its function's container (bound to a part of a module
    # table by `setdefault`), or into the attribute of the object whose method it is in, holds what the decorators give
    "decorator-registries": (
        {"reg.py": """KERNELS = {{}}
SYNCING = {{}}


def register(name):
    entries = KERNELS.setdefault(name, {{}})

    def decorator(fn):
        entries[name] = fn
        return fn

    return decorator


def register_syncing(name):
    def decorator(fn):
        SYNCING[name] = fn
        return fn

    return decorator


class Registry:
    def __init__(self):
        self.classes = {{}}

    def register(self, name):
        def add(cls):
            self.classes[name] = cls
            return cls

        return lambda cls: add(cls)


LAYERS = Registry()
""", "ops.py": """from .reg import LAYERS, register, register_syncing
from {nn} import {Layer}


@register("double")
def double(x):
    return x * 2


@register_syncing("norm")
def norm(x):
    return x / x.max().item()


@LAYERS.register("plain")
class Plain({Layer}):
    def forward(self, x):
        return x + 1
""", "m.py": """from {nn} import {Layer}

from .reg import KERNELS, LAYERS, SYNCING


class Kernels({Layer}):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        return KERNELS.get(self.name)[self.name](x)


class Syncing({Layer}):
    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, x):
        return SYNCING.get(self.name)[self.name](x)


class Registered({Layer}):
    def __init__(self, kind):
        super().__init__()
        self.impl = LAYERS.classes[kind]()

    def forward(self, x):
        return self.impl(x)
"""},
        {"m.Kernels": "eligible", "m.Syncing": "ineligible", "m.Registered": "eligible"},
    ),
    # a registry keyed by the functions it dispatches for, filled by decorator factories: each registration's store
    # keeps its own key (the factory's writes solved per call, its closure in that call's run), a lookup by a function
    # reads what is stored under it, and a method called with arguments that calls through a value is judged per call
    # (so is the method an override hands its arguments to through `super()`)
    "registry-keyed-by-functions": (
        {"kern.py": """import {fw}

KERNELS = {{}}


def register(op, kind):
    table = KERNELS.setdefault(op, {{}})

    def decorator(kernel):
        table[kind] = kernel
        return kernel

    return decorator


def find(op, kind):
    table = KERNELS.get(op)
    for k in kind.__mro__:
        if k in table:
            return table[k]
    return lambda x, *args: x
""", "ops.py": KERNEL_OPS, "m.py": """from {nn} import {Layer}

from . import ops
from .kern import find


class Op({Layer}):
    def call_kernel(self, op, x):
        kernel = find(op, type(x))
        return kernel(x)


class Double(Op):
    def forward(self, x):
        return self.call_kernel(ops.double, x)


class Norm(Op):
    def forward(self, x):
        return self.call_kernel(ops.norm, x)


class CheckedDouble(Op):
    def call_kernel(self, op, x):
        return super().call_kernel(op, x)

    def forward(self, x):
        return self.call_kernel(ops.double, x)


class CheckedNorm(Op):
    def call_kernel(self, op, x):
        return super().call_kernel(op, x)

    def forward(self, x):
        return self.call_kernel(ops.norm, x)
"""},
        {"m.Double": "eligible", "m.Norm": "ineligible", "m.CheckedDouble": "eligible", "m.CheckedNorm": "ineligible"},
    ),
    # a kernel wrapped in a closure when it is registered (`wrap(kernel)` returns `wrapper`, which calls `kernel`): the
    # closure keeps the run of `wrap` that made it, so calling it runs that registration's kernel, not every kernel
    # ever wrapped; a decorator only code outside the package would call (`register_outside`) stores nothing
    "closures-keep-their-run": (
        {"kern.py": """KERNELS = {{}}


def wrap(kernel):
    def wrapper(x, *args):
        return kernel(x, *args) + 0

    return wrapper


def register(op, kind):
    table = KERNELS.setdefault(op, {{}})

    def decorator(kernel):
        table[kind] = wrap(kernel)
        return kernel

    return decorator


def register_outside(op, kind):
    return register(op, kind)


def find(op, kind):
    return KERNELS.get(op)[kind]
""", "ops.py": KERNEL_OPS, "m.py": """import {fw}
from {nn} import {Layer}

from . import ops
from .kern import find


class Double({Layer}):
    def forward(self, x):
        kernel = find(ops.double, {fw}.Tensor)
        return kernel(x)


class Norm({Layer}):
    def forward(self, x):
        kernel = find(ops.norm, {fw}.Tensor)
        return kernel(x)
"""},
        {"m.Double": "eligible", "m.Norm": "ineligible"},
    ),
    # `if layer_past:` of an argument that defaults to None converts a tensor only where a caller passes one: as if
    # written `if layer_past is not None and layer_past:` (off by default); a required argument's truth always converts
    "truth-of-an-optional-argument": (
        {"m.py": """from {nn} import {Layer}, Linear


class Optional({Layer}):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)

    def forward(self, x, layer_past=None):
        n = x.shape[1]
        if layer_past:
            n += layer_past[0].shape[1]
        return self.proj(x) * n


class Required({Layer}):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)

    def forward(self, x, layer_past):
        n = x.shape[1]
        if layer_past:
            n += layer_past[0].shape[1]
        return self.proj(x) * n
"""},
        {"m.Optional": "conditional", "m.Required": "ineligible"},
    ),
    # state a test of that same state finds stale, rewritten in forward (a cache grown in a helper, a lazy buffer): no
    # hazard, the runtime recaptures after a refresh; per-call state, writes the test does not read, a syncing test
    # and what else the branch does still block, and the layer's other writes keep their guard
    "refreshes": (
        {"m.py": """import {fw}
from {nn} import {Layer}, Linear


class Rotary({Layer}):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self._cached_len = 0
        self._alpha = 1.0

    def update_cache(self, seq_len, alpha=1.0):
        if seq_len > self._cached_len or alpha != self._alpha:
            self._cached_len = max(2 * seq_len, 16)
            self._alpha = alpha
            self.cos_cached = {fw}.arange(self._cached_len).cos()

    def forward(self, x, seq_len, alpha=1.0):
        self.update_cache(seq_len, alpha)
        return x * self.cos_cached[:seq_len]


class Attention({Layer}):
    def __init__(self, dim):
        super().__init__()
        self.proj = Linear(dim, dim)
        self.rotary = Rotary(dim)
        self.last = 1.0

    def forward(self, x):
        y = self.rotary(self.proj(x), x.shape[1])
        if not self.training:
            self.last = 2.0
        return y * self.last


class Lazy({Layer}):
    def __init__(self):
        super().__init__()
        self.table = None

    def forward(self, x):
        if self.table is None or x.shape[0] > self.table.shape[0]:
            self.register_buffer("table", x * 2)
        return x + self.table[: x.shape[0]]


class PerCall({Layer}):
    def __init__(self):
        super().__init__()
        self.deltas = None

    def forward(self, x, past_length=0):
        if self.deltas is None or past_length == 0:
            self.deltas = x * 2
        return x + self.deltas


class ElseWrite({Layer}):
    def __init__(self):
        super().__init__()
        self.table = None

    def forward(self, x):
        if self.table is not None and self.table.shape[0] >= x.shape[0]:
            return x + self.table[: x.shape[0]]
        else:
            self.table = x * 2
        return x


class SyncingTest({Layer}):
    def __init__(self):
        super().__init__()
        self.limit = 0

    def forward(self, x):
        if x.max() > self.limit:
            self.limit = x.shape[0]
        return x


class SyncingRefresh({Layer}):
    def __init__(self):
        super().__init__()
        self.top = None

    def forward(self, x):
        if self.top is None:
            self.top = x.max().item()
        return x / self.top
"""},
        {"m.Rotary": "eligible", "m.Attention": "conditional", "m.Lazy": "eligible", "m.PerCall": "ineligible",
         "m.ElseWrite": "ineligible", "m.SyncingTest": "ineligible", "m.SyncingRefresh": "conditional"},
    ),
    # a refresh done through methods of `self` (`if seq_len > self.max_seq_len_cached: self._set_cos_sin_cache(...)`):
    # the writes of the state in the methods it calls, a few calls deep, are a refresh for that call only; a helper
    # also called outside one, a test of an argument alone, a call in the `else`, a test that holds whatever the
    # state, a write beyond the depth followed, a sync in the helper, and the writes of an object that is no layer (the
    # runtime watches layers' attributes only) still block
    "refreshes-through-methods": (
        {"m.py": """import {fw}
from {nn} import {Layer}, Linear


class Rotary({Layer}):
    def __init__(self, dim):
        super().__init__()
        self._set_cache(16)

    def _set_cache(self, seq_len):
        self.max_seq_len_cached = seq_len
        self._store({fw}.arange(seq_len))

    def _store(self, t):
        self.register_buffer("cos_cached", t.cos())
        self.sin_cached = t.sin()

    def forward(self, x, seq_len):
        if seq_len > self.max_seq_len_cached:
            self._set_cache(seq_len)
        return x * self.cos_cached[:seq_len] + self.sin_cached[:seq_len]


class Attention({Layer}):
    def __init__(self, dim):
        super().__init__()
        self.proj = Linear(dim, dim)
        self.rotary = Rotary(dim)

    def forward(self, x):
        return self.rotary(self.proj(x), x.shape[1])


class Mixed({Layer}):
    def __init__(self):
        super().__init__()
        self._grow(16)

    def _grow(self, n):
        self.limit = n
        self.table = {fw}.arange(n)

    def forward(self, x):
        if x.shape[0] > self.limit:
            self._grow(x.shape[0])
            self.grown = True
        return x + self.table[: x.shape[0]]


class AlsoUnguarded({Layer}):
    def __init__(self):
        super().__init__()
        self._fill(16)

    def _fill(self, n):
        self.limit = n
        self.table = {fw}.arange(n)

    def forward(self, x):
        if x.shape[0] > self.limit:
            self._fill(x.shape[0])
        y = x + self.table[: x.shape[0]]
        self._fill(16)
        return y


class ArgumentOnly({Layer}):
    def __init__(self):
        super().__init__()
        self._build(16)

    def _build(self, n):
        self.limit = n
        self.table = {fw}.arange(n)

    def forward(self, x, rebuild=False):
        if rebuild:
            self._build(x.shape[0])
        return x + self.table[: x.shape[0]]


class ElseCall({Layer}):
    def __init__(self):
        super().__init__()
        self._make(16)

    def _make(self, n):
        self.limit = n
        self.table = {fw}.arange(n)

    def forward(self, x):
        if x.shape[0] <= self.limit:
            pass
        else:
            self._make(x.shape[0])
        return x + self.table[: x.shape[0]]


class PerCall({Layer}):
    def __init__(self):
        super().__init__()
        self.deltas = None

    def _set_deltas(self, x):
        self.deltas = x * 2

    def forward(self, x, past_length=0):
        if self.deltas is None or past_length == 0:
            self._set_deltas(x)
        return x + self.deltas


class TooDeep({Layer}):
    def __init__(self):
        super().__init__()
        self.limit = 0

    def _a(self, n):
        self._b(n)

    def _b(self, n):
        self._c(n)

    def _c(self, n):
        self._d(n)

    def _d(self, n):
        self.limit = n

    def forward(self, x):
        if x.shape[0] > self.limit:
            self._a(x.shape[0])
        return x


class Syncing({Layer}):
    def __init__(self):
        super().__init__()
        self._scale(16)

    def _scale(self, n):
        self.limit = n
        self.table = {fw}.arange(n)
        self.top = self.table.max().item()

    def forward(self, x):
        if x.shape[0] > self.limit:
            self._scale(x.shape[0])
        return x / self.top


class Store:
    def __init__(self):
        self.ready = False

    def _fill(self, x):
        self.table = x * 2
        self.ready = True

    def get(self, x):
        if not self.ready:
            self._fill(x)
        return self.table


class HoldsStore({Layer}):
    def __init__(self):
        super().__init__()
        self.store = Store()

    def forward(self, x):
        return x + self.store.get(x)
"""},
        {"m.Rotary": "eligible", "m.Attention": "eligible", "m.Mixed": "eligible", "m.AlsoUnguarded": "ineligible",
         "m.ArgumentOnly": "conditional", "m.ElseCall": "ineligible", "m.PerCall": "ineligible", "m.TooDeep": "ineligible",
         "m.Syncing": "ineligible", "m.HoldsStore": "ineligible"},
    ),
    # a test of a setting of the layers a container holds is carried to the model that runs them all, as a test of
    # every item (`self.h.*.attn.training`), whether forward iterates the container alone, with `enumerate` or
    # `zip`; not where the items are of several classes (one's setting is missing on another: no call would pass)
    "settings-of-container-items": (
        {"m.py": """from {nn} import {Layer}, {List}, Linear


class Attn({Layer}):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)
        self.alpha = 1.0

    def forward(self, x):
        if not self.training:
            self.alpha = 2.0
        return self.proj(x) * self.alpha


class Block({Layer}):
    def __init__(self):
        super().__init__()
        self.attn = Attn()

    def forward(self, x, past=None):
        return self.attn(x)


class Plain({Layer}):
    def __init__(self):
        super().__init__()
        self.h = {List}([Block() for _ in range(2)])

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return x


class Zipped({Layer}):
    def __init__(self):
        super().__init__()
        self.h = {List}([Block() for _ in range(2)])

    def forward(self, x, pasts):
        for i, (block, past) in enumerate(zip(self.h, pasts)):
            x = block(x, past)
        return x


class Head({Layer}):
    def __init__(self):
        super().__init__()
        self.model = Zipped()

    def forward(self, x, pasts):
        return self.model(x, pasts)


class Other({Layer}):
    def forward(self, x, past=None):
        return x * 2


class Mixed({Layer}):
    def __init__(self):
        super().__init__()
        self.h = {List}([Block(), Other()])

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return x
"""},
        {"m.Attn": "conditional", "m.Block": "conditional", "m.Plain": "conditional", "m.Zipped": "conditional",
         "m.Head": "conditional", "m.Mixed": "ineligible"},
    ),
    # a method of an object that forward builds (`cache = DynamicCache(); cache.get_seq_length()`) is that class's
    # method, found by the resolver, not an attribute of the layer
    "methods-of-an-object-built-in-forward": (
        {"m.py": """from {nn} import {Layer}, Linear


class Cache({Layer}):
    def forward(self, x):
        return x

    def length(self, x):
        return x.shape[1]

    def synced(self, x):
        return x.max().item()


class Clean({Layer}):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)

    def forward(self, x):
        cache = Cache()
        return self.proj(x) * cache.length(x)


class Synced({Layer}):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)

    def forward(self, x):
        cache = Cache()
        return self.proj(x) * cache.synced(x)
"""},
        {"m.Clean": "eligible", "m.Synced": "ineligible"},
    ),
    # `from .. import utils` names the submodule, also where the package's `__init__` star-imports a module that imports
    # it (the star import brings back the same name: followed, a cycle that held nothing)
    "submodule-imported-beside-a-star-import": (
        {"__init__.py": "from .blocks import *\n", "parts.py": CLEAN, "utils.py": """from .parts import Clean, Sync

CleanLayer = Clean
SyncLayer = Sync
""", "blocks.py": """from {nn} import {Layer}

from . import utils


class CleanBlock({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = utils.CleanLayer()

    def forward(self, x):
        return self.inner(x)


class SyncBlock({Layer}):
    def __init__(self):
        super().__init__()
        self.inner = utils.SyncLayer()

    def forward(self, x):
        return self.inner(x)
"""},
        {"blocks.CleanBlock": "eligible", "blocks.SyncBlock": "ineligible"},
    ),
    # an attribute built only under a setting of a config no call builds (read at its default, off): a call of it under
    # the same test runs what that branch builds, where a loaded config turns it on
    "attributes-built-under-unseen-settings": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, Linear

from .parts import Clean, Sync


class Config:
    def __init__(self, qk_norm=False, hidden=4):
        self.qk_norm = qk_norm
        self.hidden = hidden


class Attention({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        self.qk_norm = config.qk_norm
        self.proj = Linear(config.hidden, config.hidden)
        if self.qk_norm:
            self.q_norm = Clean()

    def forward(self, x):
        x = self.proj(x)
        if self.qk_norm:
            x = self.q_norm(x)
        return x


class SyncAttention({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        self.qk_norm = config.qk_norm
        self.proj = Linear(config.hidden, config.hidden)
        if self.qk_norm:
            self.q_norm = Sync()

    def forward(self, x):
        x = self.proj(x)
        if self.qk_norm:
            x = self.q_norm(x)
        return x
"""},
        {"m.Attention": "eligible", "m.SyncAttention": "conditional"},
    ),
    # a call of what a call returns runs what it returns, not only the function called first: a registry entry, a
    # closure made for that call, a method's result; what cannot be solved is unknown
    "calls-of-call-results": (
        {"parts.py": CLEAN, "ops.py": """def clean(x):
    return x * 2


def sync(x):
    return x / x.max().item()


TABLE = {{"clean": clean, "sync": sync}}


def find(op):
    return TABLE[op]


def scaler(k):
    def scale(x):
        return x * k

    return scale


def given(fn):
    return fn
""", "m.py": """from {nn} import {Layer}

from .ops import find, given, scaler, sync


class CleanKey({Layer}):
    def forward(self, x):
        return find("clean")(x)


class SyncKey({Layer}):
    def forward(self, x):
        return find("sync")(x)


class AnyKey({Layer}):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return find(self.op)(x)


class Closure({Layer}):
    def forward(self, x):
        return scaler(3)(x)


class Maker({Layer}):
    def make(self):
        return sync

    def forward(self, x):
        return self.make()(x)


class Unseen({Layer}):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return given(self.fn)(x)
"""},
        {"m.CleanKey": "eligible", "m.SyncKey": "ineligible", "m.AnyKey": "ineligible", "m.Closure": "eligible",
         "m.Maker": "ineligible", "m.Unseen": "unknown"},
    ),
    # a name a module-level function rebinds among its own statements is read in versions: what it holds after an
    # assignment, not what it held before (a parameter's first version is what callers pass); a rebinding under a test
    # adds to what it held, and a name a lambda reads late holds every value
    "rebound-names-in-versions": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}

from .parts import Clean, Sync


def rebuilt():
    block = Sync()
    block = Clean()
    return block


def first(block):
    kept = block
    block = Sync()
    return kept


def either(flag):
    block = Clean()
    if flag:
        block = Sync()
    return block


def late():
    block = Clean()
    get = lambda: block
    block = Sync()
    return get()


class Rebuilt({Layer}):
    block = rebuilt()

    def forward(self, x):
        return self.block(x)


class First({Layer}):
    block = first(Clean())

    def forward(self, x):
        return self.block(x)


class Either({Layer}):
    block = either(True)

    def forward(self, x):
        return self.block(x)


class Late({Layer}):
    block = late()

    def forward(self, x):
        return self.block(x)
"""},
        {"m.Rebuilt": "eligible", "m.First": "eligible", "m.Either": "ineligible", "m.Late": "ineligible"},
    ),
    # `model.named_children()` / `model.children()` of a layer passed in: the layers it holds (what its attributes hold
    # that may be layers: not its settings or a plain object it keeps)
    "children-of-a-layer-passed-in": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, {List}

from .parts import Clean, Sync


class Settings:
    width = 4


class CleanNet({Layer}):
    def __init__(self):
        super().__init__()
        self.first = Clean()
        self.second = Clean()
        self.settings = Settings()
        self.width = 4

    def forward(self, x):
        return self.second(self.first(x))


class SyncNet({Layer}):
    def __init__(self):
        super().__init__()
        self.first = Clean()
        self.second = Sync()

    def forward(self, x):
        return self.second(self.first(x))


class Getter({Layer}):
    def __init__(self, model):
        super().__init__()
        self.parts = {List}([part for _, part in model.named_children()])

    def forward(self, x):
        for part in self.parts:
            x = part(x)
        return x


class Picker({Layer}):
    def __init__(self, model):
        super().__init__()
        self.parts = {List}(list(model.children()))

    def forward(self, x):
        return self.parts[1](x)


def build():
    return Getter(CleanNet()), Picker(SyncNet())
"""},
        {"m.Getter": "eligible", "m.Picker": "ineligible"},
    ),
    # a layer built from a name only the user passes (`parts.__dict__[name]()` in a builder the package never calls, the
    # name a `str` no call passes) is another configuration: what the package's own builds give is the default, so
    # a class built both ways is conditional; one whose builder the package calls with its own name stays unknown
    "built-from-a-name-the-user-passes": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, {List}

from . import parts


class Holder({Layer}):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


class Named({Layer}):
    def __init__(self, block):
        super().__init__()
        self.blocks = {List}([block])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def from_name(name: str):
    return Holder(parts.__dict__[name]())


def own():
    return Holder(parts.Clean())


def named(name: str):
    return Named(parts.__dict__[name]())


def called():
    return named("Clean")
"""},
        {"m.Holder": "conditional", "m.Named": "unknown"},
    ),
    # `layer.forward(x)` of each item of a container held in `self.layers`
    "container-item-methods": (
        {"parts.py": CLEAN, "m.py": """from {nn} import {Layer}, {List}

from .parts import Clean, Sync


class Items({Layer}):
    def __init__(self):
        super().__init__()
        self.layers = {List}(Clean() for _ in range(2))

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x


class ItemsSync({Layer}):
    def __init__(self):
        super().__init__()
        self.layers = {List}([Clean(), Sync()])

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x
"""},
        {"m.Items": "eligible", "m.ItemsSync": "ineligible"},
    ),
    # `from . import ops` in a package's `__init__` binds its submodule: `F.double` through `import ... as F` is a function
    "submodule-bound-by-its-package": (
        {"kernels/__init__.py": "from . import ops\n", "kernels/ops.py": """def double(x):
    return x * 2


def norm(x):
    return x / x.max().item()
""", "m.py": """from {nn} import {Layer}

from .kernels import ops as F


class Runs({Layer}):
    def __init__(self, fn=F.double):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


class RunsSync({Layer}):
    def __init__(self, fn=F.norm):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)
"""},
        {"m.Runs": "eligible", "m.RunsSync": "ineligible"},
    ),
    # transformers' auto classes (`resolver/registries.py`): `Auto.from_config(config)` builds the class that the name
    # tables of the package's own source pair with the config's class (a table made from a literal list of pairs, and
    # extended by `update` where it is bound); a required `config` that no call passes is of the class that the class
    # running the method declares for the attribute the method stores it in (through `super().__init__(config)`),
    # whether the method is its own or inherited (a mixin's, or a base's `__init__` under a subclass declaring
    # another), and what another class's `super().__init__(config)` passes to the mixin is not the others' config;
    # a config the declarations do not tell (a sub-config) leaves what is built unknown
    "auto-class-factory": (
        {"parts.py": CLEAN, "models/__init__.py": "", "models/auto/__init__.py": "", **AUTO_FACTORY, "models/zoo.py": """from {nn} import {Layer}

from ..parts import Clean, Sync
from .auto.modeling_auto import AutoModel


class Config:
    sub = None


class PlainConfig(Config):
    pass


class SyncyConfig(Config):
    pass


class ExtraConfig(Config):
    pass


class PreTrained({Layer}):
    config: Config

    def __init__(self, config):
        super().__init__()
        self.config = config

    @classmethod
    def _from_config(cls, config, **kwargs):
        return cls(config, **kwargs)


class PlainPreTrained(PreTrained):
    config: PlainConfig
    prefix = "model"


class SyncyPreTrained(PreTrained):
    config: SyncyConfig
    prefix = "model"


class ExtraPreTrained(PreTrained):
    config: ExtraConfig
    prefix = "model"


class PlainModel(PlainPreTrained):
    def __init__(self, config):
        super().__init__(config)
        self.body = Clean()

    def forward(self, x):
        return self.body(x)


class SyncyModel(SyncyPreTrained):
    def __init__(self, config):
        super().__init__(config)
        self.body = Sync()

    def forward(self, x):
        return self.body(x)


class ExtraModel(ExtraPreTrained):
    def __init__(self, config):
        super().__init__(config)
        self.body = Clean()

    def forward(self, x):
        return self.body(x)


class GenericHead:
    prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        setattr(self, self.prefix, AutoModel.from_config(config))

    def forward(self, x):
        return getattr(self, self.prefix)(x)


class PlainHead(GenericHead, PlainPreTrained):
    pass


class SyncyHead(GenericHead, SyncyPreTrained):
    pass


class ExtraHead(GenericHead, ExtraPreTrained):
    pass


class OwnInitHead(GenericHead, SyncyPreTrained):
    def __init__(self, config: SyncyConfig):
        super().__init__(config)


class PlainWrapper(PlainPreTrained):
    def __init__(self, config):
        super().__init__(config)
        self.inner = AutoModel.from_config(config)

    def forward(self, x):
        return self.inner(x)


class SyncyWrapper(PlainWrapper):
    config: SyncyConfig


class SubWrapper(PlainPreTrained):
    def __init__(self, config):
        super().__init__(config)
        self.inner = AutoModel.from_config(config.sub)

    def forward(self, x):
        return self.inner(x)
"""},
        {
            "models.zoo.PlainHead": "eligible", "models.zoo.SyncyHead": "ineligible", "models.zoo.ExtraHead": "eligible", "models.zoo.OwnInitHead": "ineligible",
            "models.zoo.PlainWrapper": "eligible", "models.zoo.SyncyWrapper": "ineligible", "models.zoo.SubWrapper": "unknown",
        },
    ),
    # a composite config's sub-configs, as its class declares them (`sub_configs_defaults`, read by the base config
    # class of `configuration_utils`): a config class is the sub-config's class; the auto config's is picked by the
    # configuration's model type, so what the declared model type builds is the default build and any other is
    # unknown (a default that syncs stays ineligible); a subclass assigning the sub-config itself is read as written
    "sub-configs": (
        {"parts.py": CLEAN, "models/__init__.py": "", "models/auto/__init__.py": "", **AUTO_FACTORY,
         "configuration_utils.py": """class SubConfigSpec:
    def __init__(self, config_class, model_type=None, init_kwargs=None, optional=False):
        self.config_class = config_class
        self.model_type = model_type


class BaseConfig:
    sub_configs_defaults = {{}}

    def __post_init__(self):
        for key, spec in self.sub_configs_defaults.items():
            if getattr(self, key) is None:
                setattr(self, key, spec.make())
""", "models/auto/configuration_auto.py": """from collections import OrderedDict

from .names import CONFIG_NAMES


class _LazyConfigMapping(OrderedDict):
    def __init__(self, names):
        self.names = names


CONFIG_MAPPING = _LazyConfigMapping(CONFIG_NAMES)


class AutoConfig:
    pass
""", "models/zoo.py": """from {nn} import {Layer}

from ..configuration_utils import BaseConfig, SubConfigSpec
from ..parts import Clean, Sync
from .auto.configuration_auto import AutoConfig
from .auto.modeling_auto import AutoModel


class PlainConfig(BaseConfig):
    model_type = "plain"


class SyncyConfig(BaseConfig):
    model_type = "syncy"


class PairConfig(BaseConfig):
    sub_configs_defaults = {{
        "left": PlainConfig,
        "right": SubConfigSpec(config_class=AutoConfig, model_type="plain"),
        "odd": SubConfigSpec(AutoConfig, "syncy"),
    }}
    left: dict | BaseConfig | None = None
    right: dict | BaseConfig | None = None
    odd: dict | BaseConfig | None = None


class RewrittenConfig(PairConfig):
    def __post_init__(self):
        super().__post_init__()
        self.left = self.right


class PlainModel({Layer}):
    def __init__(self, config):
        super().__init__()
        self.body = Clean()

    def forward(self, x):
        return self.body(x)

    @classmethod
    def _from_config(cls, config):
        return cls(config)


class SyncyModel(PlainModel):
    def __init__(self, config):
        super().__init__(config)
        self.body = Sync()


class Wrapper({Layer}):
    def __init__(self, config: PairConfig):
        super().__init__()
        self.left = AutoModel.from_config(config.left)
        self.right = AutoModel.from_config(config.right)
        self.odd = AutoModel.from_config(config.odd)


class Left(Wrapper):
    def forward(self, x):
        return self.left(x)


class Right(Wrapper):
    def forward(self, x):
        return self.right(x)


class Odd(Wrapper):
    def forward(self, x):
        return self.odd(x)


class Rewritten({Layer}):
    def __init__(self, config: RewrittenConfig):
        super().__init__()
        self.left = AutoModel.from_config(config.left)

    def forward(self, x):
        return self.left(x)
"""},
        {"models.zoo.Left": "eligible", "models.zoo.Right": "conditional", "models.zoo.Odd": "ineligible", "models.zoo.Rewritten": "unknown"},
    ),
    # a framework function reached as a value and called is judged by the rules that decide on its name and on what
    # that call passes (`where` with one argument), at the call; under a default-off setting it is conditional
    "framework-function-held-as-a-value": (
        {"m.py": """import math
import random

import {fw}
import {F} as F
from {nn} import {Layer}

PICKS = {{"relu": F.relu, "nonzero": {fw}.nonzero}}


class Activated({Layer}):
    def __init__(self):
        super().__init__()
        self.act = F.relu
        self.pick = getattr({fw}, "where")

    def forward(self, x):
        return self.pick(x > 0, self.act(x), x)


class Held({Layer}):
    def __init__(self):
        super().__init__()
        self.op = {fw}.nonzero

    def forward(self, x):
        return self.op(x)


class Named({Layer}):
    def __init__(self, name="unique"):
        super().__init__()
        self.op = getattr({fw}, name)

    def forward(self, x):
        return self.op(x)


class Looked({Layer}):
    def forward(self, x):
        return PICKS["nonzero"](x)


class OneArgument({Layer}):
    def __init__(self):
        super().__init__()
        self.pick = getattr({fw}, "where")

    def forward(self, x):
        return self.pick(x > 0)


class Sparse({Layer}):
    def __init__(self, sparse=False):
        super().__init__()
        self.sparse = sparse
        self.op = {fw}.nonzero

    def forward(self, x):
        if self.sparse:
            return self.op(x)
        return x


class Drawn({Layer}):
    def forward(self, x):
        draw = random.random
        return x * draw()


class Scaled({Layer}):
    def forward(self, x):
        root = math.sqrt
        return x * root(4.0)
"""},
        {"m.Activated": "eligible", "m.Held": "ineligible", "m.Named": "ineligible", "m.Looked": "ineligible",
         "m.OneArgument": "ineligible", "m.Sparse": "conditional", "m.Drawn": "ineligible", "m.Scaled": "eligible"},
    ),
    # `getattr(F, name)` of a name not solved may be any function of that module: unknown. A setting annotated as a
    # string with a default, of a config the loader builds (no call seen passes it), names its default in the default
    # build, and a layer's string parameter what its builds pass: other values are another configuration
    "getattr-of-a-framework-module-by-a-setting": (
        {"m.py": """import {F} as F
from {nn} import {Layer}


class Config:
    def __init__(self, hidden_act: str = "gelu"):
        self.hidden_act = hidden_act


class Head({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        self.act = getattr(F, config.hidden_act)

    def forward(self, x):
        return self.act(x)


class AnyActivation({Layer}):
    def __init__(self, name: str):
        super().__init__()
        self.act = getattr(F, name)

    def forward(self, x):
        return self.act(x)


class Gated({Layer}):
    def __init__(self, act: str = "relu"):
        super().__init__()
        self.act = getattr(F, act)

    def forward(self, x):
        return self.act(x) * x


class Block({Layer}):
    def __init__(self, config: Config):
        super().__init__()
        self.gate = Gated(config.hidden_act)

    def forward(self, x):
        return self.gate(x)
"""},
        {"m.Head": "conditional", "m.AnyActivation": "unknown", "m.Gated": "conditional", "m.Block": "conditional"},
    ),
}



def _write(root: Path, framework: str, files: dict[str, str]) -> None:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    spelling = {**SPELLING[framework], "function": "PyLayer" if framework == "paddle" else "Function"}
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text.format(**spelling))


def _verdicts(root: Path, config: Config | None = None) -> dict[str, str]:
    analysis = analyze([str(root / "pkg")], Options(config=config or Config(), use_cache=False, jobs=1))
    assert not analysis.errors, analysis.errors
    return {q.removeprefix("pkg."): v.status.value for q, v in analysis.plan.verdicts.items()}


@pytest.mark.parametrize("framework", ["paddle", "torch"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_resolver_case(tmp_path: Path, case: str, framework: str) -> None:
    files, expected = CASES[case]
    _write(tmp_path, framework, files)
    found = _verdicts(tmp_path)
    assert {name: found.get(name) for name in expected} == expected


STACKS = """from {nn} import {Layer}, Linear, ReLU, Sequential


class Stacked({Layer}):
    def __init__(self):
        super().__init__()
        self.seq = Sequential(Linear(4, 4), ReLU())

    def forward(self, x):
        return self.seq(x)


class Called({Layer}):
    def __init__(self):
        super().__init__()
        self.fc = Linear(4, 4)
        self.act = ReLU()

    def forward(self, x):
        return self.act(self.fc(x))
"""


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_container_called_runs_every_item_so_their_kernels_add_up(tmp_path: Path, framework: str) -> None:
    _write(tmp_path, framework, {"m.py": STACKS})
    verdicts = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan.verdicts
    called = verdicts["pkg.m.Called"].kernels
    assert called >= 2 and verdicts["pkg.m.Stacked"].kernels == called


# A block of enough kernels to be worth a graph, eligible in both frameworks.
BLOCK = """class Block({Layer}):
    def __init__(self, width):
        super().__init__()
        self.fc = Linear(width, width)
        self.norm = LayerNorm(width)
        self.out = Linear(width, width)

    def forward(self, x):
        return self.out(self.norm(self.fc(x)).tanh().exp().sin().cos().abs().sqrt().log1p().sigmoid())
"""

HANDED = """from {nn} import {Layer}, Linear, LayerNorm, {List}

from .parts import Sync


""" + BLOCK + """

class Decoder({Layer}):
    def __init__(self, layers, flag=False):
        super().__init__()
        self.layers = layers
        self.flag = flag

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        if self.flag:
            x = x / x.max().item()
        return x


class Model({Layer}):
    def __init__(self, width):
        super().__init__()
        layers = {List}()
        for _ in range(2):
            layers.append(Block(width))
        self.decoder = Decoder(layers)
        self.head = Sync()

    def forward(self, x):
        return self.head(self.decoder(x))
"""


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_layers_handed_to_a_constructor_in_a_local_list_are_its_sublayers(tmp_path: Path, framework: str) -> None:
    """`layers.append(Block())` then `self.decoder = Decoder(layers)`: the blocks sit in the decoder, so its graph holds
    them, and a conditional decoder (it may run eagerly) lets them keep graphs of their own at the append."""
    _write(tmp_path, framework, {"parts.py": CLEAN, "m.py": HANDED})
    plan = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan
    assert plan.verdicts["pkg.m.Decoder"].status.value == "conditional"
    wrapped = {(s.wrapped_class, s.owner, s.target) for s in plan.sites}
    assert ("pkg.m.Block", "pkg.m.Decoder", "layers[*]") in wrapped
    assert ("pkg.m.Decoder", "pkg.m.Model", "self.decoder") in wrapped
    (model,) = [r for r in plan.roots if r.qualname == "pkg.m.Model"]
    (decoder,) = [c for c in model.children if c.qualname == "pkg.m.Decoder"]
    assert [(c.qualname, c.wrapped) for c in decoder.children] == [("pkg.m.Block", True)]


STAGED = """from itertools import repeat

from {nn} import {Layer}, Linear, LayerNorm, Sequential


""" + BLOCK + """

def as_tuple(x, n):
    if isinstance(x, (list, tuple)):
        return tuple(x)
    return tuple(repeat(x, n))


def make_stages(block_fns, depths, width):
    stages = []
    for i, (block_fn, depth) in enumerate(zip(block_fns, depths)):
        blocks = []
        for _ in range(depth):
            blocks.append(block_fn(width))
        stages.append((f"layer{{i + 1}}", Sequential(*blocks)))
    return stages


class Net({Layer}):
    def __init__(self, block=Block, depths=(2, 2), width=8):
        super().__init__()
        for stage in make_stages(as_tuple(block, len(depths)), depths, width):
            self.{add}(*stage)

    def forward(self, x):
        x = self.layer2(self.layer1(x))
        return x / x.max().item()
"""


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_stage_built_beside_a_host_value_called_is_wrapped(tmp_path: Path, framework: str) -> None:
    """`block_fn(width)` where `block_fn` may also be a host value (an item of `tuple(repeat(x, n))`): calling it builds
    nothing, so the Sequential of the blocks holds only blocks and is wrapped whole (timm's ResNet stages, registered
    with `self.add_module(*stage)`, lost their wrapper when that call was taken for something unknown)."""
    _write(tmp_path, framework, {"m.py": STAGED})
    plan = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan
    assert plan.verdicts["pkg.m.Net"].status.value == "ineligible"
    wrapped = {(s.wrapped_class, s.owner, s.target) for s in plan.sites}
    assert wrapped == {(f"{framework}.nn.Sequential", "pkg.m.Net", "stages[*]")}


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_declared_callables_decide_what_the_package_cannot_see(tmp_path: Path, framework: str) -> None:
    files, _ = CASES["optional-imports"]
    _write(tmp_path, framework, files)
    assert _verdicts(tmp_path, Config(capturable=("other_kernels.*",)))["n.Plain"] == "eligible"
    assert _verdicts(tmp_path, Config(not_capturable=("other_kernels.plain_norm",)))["n.Plain"] == "ineligible"


def test_conditional_reasons_name_their_condition(tmp_path: Path) -> None:
    files, _ = CASES["default-off-conditions"]
    _write(tmp_path, "torch", files)
    analysis = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1))
    verdict = analysis.plan.verdicts["pkg.m.Checkpointed"]
    assert sorted(r.condition for r in verdict.reasons) == ["mask is not None", "self.grad_checkpointing"]
    assert all("off by default" in r.render() for r in verdict.reasons)


def test_findings_under_a_default_off_condition_say_so_in_json_and_sarif(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from autograph_cg.cli import main

    files, _ = CASES["default-off-conditions"]
    _write(tmp_path, "torch", files)
    runner = CliRunner()
    report = json.loads(runner.invoke(main, ["lint", str(tmp_path / "pkg"), "--no-cache", "-q", "--format", "json"]).stdout)
    conditions = {f["line"]: f.get("condition") for f in report["findings"] if f["code"] == "AG101"}
    assert sorted(conditions.values()) == ["mask is not None", "self.grad_checkpointing"]
    sarif = json.loads(runner.invoke(main, ["lint", str(tmp_path / "pkg"), "--no-cache", "-q", "--format", "sarif"]).stdout)
    results = sarif["runs"][0]["results"]
    assert {r["properties"]["condition"] for r in results if r["ruleId"] == "AG101"} == set(conditions.values())
    explained = runner.invoke(main, ["explain", "conditional"]).stdout
    assert explained.startswith("# conditional") and "off by default" in explained


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_guarded_verdicts_name_their_guard_in_their_own_arguments(tmp_path: Path, framework: str) -> None:
    files, _ = CASES["argument-guards"]
    _write(tmp_path, framework, files)
    verdicts = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan.verdicts
    guards = {q.removeprefix("pkg.m."): v.guard for q, v in verdicts.items()}
    assert guards["Attention"] == guards["Block"] == guards["Stack"] == (("past_key_values", "is None"),)
    assert guards["Positional"] == (("cache", "is None"),)
    assert guards["Flagged"] in ((("use_cache", "falsy"),), (("past", "is None"),))  # either keeps it out
    assert guards["NoCache"] == guards["Rebound"] == guards["Outside"] == guards["Filled"] == guards["Named"] == ()
    # handed on through `**kwargs` untouched, the cache is a keyword of the call: guarded there
    assert guards["Handed"] == guards["HandedTwice"] == (("past_key_values", "is None"),)
    # a cache the forward creates under a flag: the argument stays the caller's where the flag is off; a decorator
    # may fill the flag when the caller leaves it out, so there (and in its callers) only a false value passed counts
    assert guards["Created"] == (("past_key_values", "is None"), ("use_cache", "falsy"))
    assert guards["Decorated"] == (("past_key_values", "is None"), ("use_cache", "passed false"))
    assert guards["Heads"] == (("use_cache", "passed false"),)
    assert guards["Checkpointed"] == (("past_key_values", "is None"),)  # either arm of what it passes
    assert guards["Parted"] == (("past_key_values", "is None"),)  # a part of the caller's cache is the caller's
    # `use_cache` is the constant False where the layer's own setting is off, whatever the call passes: a guard may
    # test the setting (read from the wrapped layer), and a layer holding it names it through its attribute
    assert guards["Encoder"] == (("past_key_values", "is None"), ("self.config.is_decoder", "falsy"))
    assert guards["EncoderHead"] == (("self.encoder.config.is_decoder", "falsy"),)
    # left None the config fills it: a false value passed, or the wrapped layer's config false where the call leaves
    # it out, one test of one name
    assert guards["Defaulted"] == (("past_key_values", "is None"), ("use_cache", "config false"))
    # either test keeps the append out; the layer's own setting holds as built (off in `__init__`), the argument's
    # only if the caller passes None: the guard that holds at the defaults is chosen
    assert guards["Tracked"] == (("self.keep", "falsy"),)
    assert all(len({n for n, _ in g}) == len(g) for g in guards.values())
    block = verdicts["pkg.m.Block"]
    assert [r.guard for r in block.reasons] == [(("past_key_values", "is None"),)]
    assert "kept out by the guard `past_key_values is None`" in block.reasons[0].render()


def test_a_finding_a_guard_keeps_out_says_which_in_json_and_sarif_and_explain_tells_of_guards(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from autograph_cg.cli import main

    files, _ = CASES["argument-guards"]
    _write(tmp_path, "torch", files)
    runner = CliRunner()
    report = json.loads(runner.invoke(main, ["lint", str(tmp_path / "pkg"), "--no-cache", "-q", "--format", "json"]).stdout)
    guards = {f["function"]: f.get("guard") for f in report["findings"] if f["code"] == "AG403"}
    assert guards["Attention.forward"] == {"past_key_values": "is None"} and guards["Outside.forward"] is None
    sarif = json.loads(runner.invoke(main, ["lint", str(tmp_path / "pkg"), "--no-cache", "-q", "--format", "sarif"]).stdout)
    by_function = {r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]: r for r in sarif["runs"][0]["results"]}
    assert by_function["Attention.forward"]["properties"]["guard"] == {"past_key_values": "is None"}
    assert "properties" not in by_function["Outside.forward"]
    explained = runner.invoke(main, ["explain", "conditional"]).stdout
    assert "under a guard" in explained and 'guard={"past_key_values": "is None"}' in explained


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_refresh_is_listed_with_its_test_and_needs_no_guard(tmp_path: Path, framework: str) -> None:
    """The writes of a refresh do not block and are listed with the test that finds the state stale; what the branch
    does besides (a sync) keeps its guard, and so does a write of state the test does not read."""
    import json

    from click.testing import CliRunner

    from autograph_cg.cli import main

    files, _ = CASES["refreshes"]
    _write(tmp_path, framework, files)
    verdicts = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan.verdicts
    guards = {q.removeprefix("pkg.m."): v.guard for q, v in verdicts.items()}
    assert guards["Rotary"] == guards["Lazy"] == ()
    assert guards["Attention"] == (("self.training", "truthy"),)
    assert guards["SyncingRefresh"] == (("self.top", "is not None"),)
    assert [r.code for r in verdicts["pkg.m.SyncingRefresh"].reasons] == ["AG101"]
    runner = CliRunner()
    args = ["lint", str(tmp_path / "pkg"), "--no-cache", "-q", "--format"]
    report = json.loads(runner.invoke(main, [*args, "json"]).stdout)
    refreshes = {(f["function"], f["code"]): f.get("refresh") for f in report["findings"] if f["code"] in ("AG401", "AG407")}
    stale = "seq_len > self._cached_len or alpha != self._alpha"
    assert refreshes == {
        ("Rotary.update_cache", "AG401"): stale,
        ("Attention.forward", "AG401"): None,
        ("Lazy.forward", "AG407"): "self.table is None or x.shape[0] > self.table.shape[0]",
        ("PerCall.forward", "AG401"): None,
        ("ElseWrite.forward", "AG401"): None,
        ("SyncingTest.forward", "AG401"): None,
        ("SyncingRefresh.forward", "AG401"): "self.top is None",
    }
    sarif = json.loads(runner.invoke(main, [*args, "sarif"]).stdout)
    rotary = [r for r in sarif["runs"][0]["results"] if r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "Rotary.update_cache"]
    assert len(rotary) == 3 and all(r["properties"] == {"refresh": stale} for r in rotary)
    assert "a refresh" in runner.invoke(main, ["explain", "eligible"]).stdout
    assert "is a refresh" in runner.invoke(main, ["explain", "AG401"]).stdout


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_refresh_through_methods_follows_the_call(tmp_path: Path, framework: str) -> None:
    """The writes of the state in a method that a refresh calls are listed as a refresh with the caller's test, where
    no call reaches them outside one; a helper also called unguarded keeps its writes as hazards, and a sync in the
    helper blocks by itself."""
    import json

    from click.testing import CliRunner

    from autograph_cg.cli import main

    files, _ = CASES["refreshes-through-methods"]
    _write(tmp_path, framework, files)
    verdicts = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan.verdicts
    assert verdicts["pkg.m.Rotary"].guard == verdicts["pkg.m.Mixed"].guard == ()
    assert [r.code for r in verdicts["pkg.m.Syncing"].reasons] == ["AG101"]
    assert {r.code for r in verdicts["pkg.m.AlsoUnguarded"].reasons} == {"AG401"}
    assert {r.line for r in verdicts["pkg.m.AlsoUnguarded"].reasons} == {56, 57}  # `_fill`'s writes, from the unguarded call
    assert verdicts["pkg.m.ArgumentOnly"].guard == (("rebuild", "falsy"),)
    runner = CliRunner()
    args = ["lint", str(tmp_path / "pkg"), "--no-cache", "-q", "--format"]
    report = json.loads(runner.invoke(main, [*args, "json"]).stdout)
    writes = {(f["function"], f["line"]): f.get("refresh") for f in report["findings"] if f["code"] in ("AG401", "AG407")}
    grown, longer = "seq_len > self.max_seq_len_cached", "x.shape[0] > self.limit"
    assert writes == {
        ("Rotary._set_cache", 11): grown,
        ("Rotary._store", 15): grown,
        ("Rotary._store", 16): grown,
        ("Mixed._grow", 40): longer,
        ("Mixed._grow", 41): longer,
        ("Mixed.forward", 46): longer,  # the body's own write of state its test does not read: through `_grow`
        ("AlsoUnguarded._fill", 56): None,
        ("AlsoUnguarded._fill", 57): None,
        ("ArgumentOnly._build", 73): None,
        ("ArgumentOnly._build", 74): None,
        ("ElseCall._make", 88): None,
        ("ElseCall._make", 89): None,
        ("PerCall._set_deltas", 105): None,
        ("TooDeep._d", 128): None,
        ("Syncing._scale", 142): longer,
        ("Syncing._scale", 143): longer,
        ("Syncing._scale", 144): longer,
        ("Store._fill", 157): None,  # the state of an object that is no layer: the runtime does not watch it
        ("Store._fill", 158): None,
    }
    sarif = json.loads(runner.invoke(main, [*args, "sarif"]).stdout)
    store = [r for r in sarif["runs"][0]["results"] if r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "Rotary._store"]
    assert len(store) == 2 and all(r["properties"] == {"refresh": grown} for r in store)


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_setting_of_every_item_is_the_guard_of_the_model_running_them(tmp_path: Path, framework: str) -> None:
    """The guard on the items' setting names every item (`*`), through the model's own sublayer for its head."""
    files, _ = CASES["settings-of-container-items"]
    _write(tmp_path, framework, files)
    verdicts = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan.verdicts
    guards = {q.removeprefix("pkg.m."): v.guard for q, v in verdicts.items()}
    assert guards["Block"] == (("self.attn.training", "truthy"),)
    assert guards["Plain"] == guards["Zipped"] == (("self.h.*.attn.training", "truthy"),)
    assert guards["Head"] == (("self.model.h.*.attn.training", "truthy"),)


TRAILING_COMMAS = """from {nn} import {Layer}, Linear, LayerNorm


class Dense({Layer}):
    def __init__(self, width):
        super().__init__()
        self.{add}("norm1", LayerNorm(width)),
        self.{add}("fc1", Linear(width, width)),
        self.{add}("norm2", LayerNorm(width)), self.{add}("fc2", Linear(width, width))

    def forward(self, x):
        return self.fc2(self.norm2(self.fc1(self.norm1(x)).tanh().exp().sin().cos().abs().sqrt().log1p()))


class Net({Layer}):
    def __init__(self, width=8):
        super().__init__()
        self.dense = Dense(width)

    def forward(self, x):
        x = self.dense(x)
        return x / x.max().item()
"""


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_sublayers_registered_in_statements_with_a_trailing_comma_are_known(tmp_path: Path, framework: str) -> None:
    """`self.add_module("norm1", Norm(width)),` is a statement whose value is a tuple of the call (timm's DenseNet
    layers are written so): the registration counts as it does without the comma, and so do both calls of
    `a(...), b(...)`."""
    _write(tmp_path, framework, {"m.py": TRAILING_COMMAS})
    plan = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan
    dense = plan.verdicts["pkg.m.Dense"]
    assert dense.status.value == "eligible", [r.message for r in dense.reasons]
    assert {(s.wrapped_class, s.owner, s.target) for s in plan.sites} == {("pkg.m.Dense", "pkg.m.Net", "self.dense")}


CALLED_DIRECTLY = """from {nn} import {Layer}


class Pad({Layer}):
    def __call__(self, x):
        return x.tanh().exp().sin().cos().abs().sqrt().log1p()


class Net({Layer}):
    def __init__(self):
        super().__init__()
        self.pad = Pad()

    def forward(self, x):
        x = self.pad(x)
        return x / x.max().item()
"""


@pytest.mark.parametrize("framework", ["paddle", "torch"])
def test_a_layer_called_through_its_own_call_is_no_site(tmp_path: Path, framework: str) -> None:
    """Calling a layer whose class defines `__call__` runs that, never the forward the wrapper routes: such a layer is
    judged by its `__call__` (for the parents whose graphs hold it) but not wrapped where it is built."""
    _write(tmp_path, framework, {"m.py": CALLED_DIRECTLY})
    plan = analyze([str(tmp_path / "pkg")], Options(use_cache=False, jobs=1)).plan
    assert plan.verdicts["pkg.m.Pad"].status.value == "eligible" and plan.verdicts["pkg.m.Pad"].kernels >= 7
    assert plan.sites == ()


REGISTERED_AND_KEPT = """from paddle.nn import Layer

from .parts import Clean, Sync


class Stages(Layer):
    def __init__(self):
        super().__init__()
        self.blocks = []
        for i in range(2):
            block = self.add_sublayer("block" + str(i), Clean())
            self.blocks.append(block)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class SyncStages(Stages):
    def __init__(self):
        super().__init__()
        self.blocks.append(self.add_sublayer("last", Sync()))
"""


def test_paddles_add_sublayer_gives_the_layer_it_registers(tmp_path: Path) -> None:
    """`self.blocks.append(self.add_sublayer(name, Block()))`: Paddle's registration returns the layer, so the plain list
    holds it (torch's `add_module` returns None and is not read so)."""
    _write(tmp_path, "paddle", {"parts.py": CLEAN, "m.py": REGISTERED_AND_KEPT})
    found = _verdicts(tmp_path)
    assert (found["m.Stages"], found["m.SyncStages"]) == ("eligible", "ineligible")
