"""The test layers, written once and defined for PyTorch and for Paddle (same code, each framework's nn)."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from types import SimpleNamespace
from typing import Any

from autograph_cg.runtime import is_capturing


@dataclasses.dataclass
class Output(collections.OrderedDict):
    """A model output as model libraries write it: a dataclass that is also an ordered dict of the
    fields that are set (None fields are no keys)."""

    loss: Any = None
    logits: Any = None
    aux: Any = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                self[f.name] = value


Pair = collections.namedtuple("Pair", "first second")


@dataclasses.dataclass
class State:
    """A plain dataclass holding a tensor and a constant."""

    h: Any
    scale: float = 1.0


@functools.cache
def define(framework: str) -> SimpleNamespace:
    if framework == "torch":
        import torch
        import torch.nn.functional as F
        from torch import nn
        from torch.utils.checkpoint import checkpoint

        lib, base, batch_norm, tanh = torch, nn.Module, nn.BatchNorm1d, torch.tanh
        needs_grad = operator.attrgetter("requires_grad")
        swap = functools.partial(torch.transpose, dim0=1, dim1=2)
        recompute = functools.partial(checkpoint, use_reentrant=True)
    else:
        import paddle
        import paddle.nn.functional as F
        from paddle import nn

        from paddle.distributed.fleet.utils import recompute

        lib, base, batch_norm, tanh = paddle, nn.Layer, nn.BatchNorm1D, paddle.tanh
        needs_grad = lambda t: not t.stop_gradient  # noqa: E731
        swap = functools.partial(paddle.transpose, perm=[0, 2, 1])

    class MLP(base):
        """Pre-LN MLP block with a residual: the shape the benchmark stacks."""

        def __init__(self, d: int, p: float = 0.0) -> None:
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.drop = nn.Dropout(p)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(self.drop(F.gelu(self.fc1(self.ln(x)))))

    class Multi(base):
        """Nested inputs, kwargs with non-tensor values, several differentiable outputs, an int output."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, xs: list, cfg: dict, *, scale: float = 1.0, mode: str = "sum") -> dict:
            mixed = xs[0] + xs[1] if mode == "sum" else xs[0] * xs[1]
            main = self.fc(mixed) * scale + cfg["bias"]
            return {"main": main, "aux": (tanh(main), cfg["ids"] * 2), "mode": mode}

    class Heads(base):
        """Takes a dataclass and a namedtuple, returns the container ``out`` names: an ordered-dict
        dataclass (whose ``loss`` is set only with a target), a namedtuple or a dataclass."""

        def __init__(self, d: int, out: str) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.out = out

        def forward(self, state: State, extra: Pair, target: Any = None) -> Any:
            h = self.fc(state.h) * state.scale + extra.first
            aux = (tanh(h), extra.second * 2)
            if self.out == "output":
                return Output(loss=None if target is None else ((h - target) ** 2).mean(), logits=h, aux=aux)
            if self.out == "pair":
                return Pair(h, aux)
            return State(h, state.scale)

    class Sync(base):
        """Control flow on a tensor value: a host sync that a capture refuses. Buffers and RNG too."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.bn = batch_norm(d)

        def forward(self, x: Any) -> Any:
            h = self.bn(self.fc(x))
            if float(h.detach().abs().mean()) > 0:
                h = h * 2
            return F.dropout(h, 0.25, training=self.training)

    class Norm(base):
        """Buffers updated in forward (batch-norm running statistics)."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.bn = batch_norm(d)

        def forward(self, x: Any) -> Any:
            return F.relu(self.bn(self.fc(x)))

    class Partial(base):
        """A parameter and an input that take no part in the output."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.used = nn.Linear(d, d)
            self.unused = nn.Linear(d, d)

        def forward(self, x: Any, y: Any) -> Any:
            return self.used(x)

    class Inplace(base):
        """Writes into its argument: the caller would see it eagerly but not through a graph."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            x.scale_(2.0) if hasattr(x, "scale_") else x.mul_(2.0)
            return self.fc(x)

    class DropOnly(base):
        """Nothing but dropout: its output shows the mask."""

        def __init__(self, p: float) -> None:
            super().__init__()
            self.p = p

        def forward(self, x: Any) -> Any:
            return F.dropout(x, self.p, training=self.training)

    class FailsOnlyInCapture(base):
        """Runs fine eagerly and raises while a stand-in capture is under way (any capture error)."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            if is_capturing():
                raise RuntimeError("unsupported during capture")
            return self.fc(x)

    class Branches(base):
        """Two outputs, each from parameters of its own: a loss of one leaves the other's without grads."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fa = nn.Linear(d, d)
            self.fb = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            return self.fa(x), tanh(self.fb(x))

    class Positions(base):
        """Position ids kept as a registered buffer and sliced per call, as text encoders keep them."""

        def __init__(self, d: int, n: int = 16) -> None:
            super().__init__()
            self.emb = nn.Embedding(n, d)
            self.fc = nn.Linear(d, d)
            self.register_buffer("ids", lib.arange(n).unsqueeze(0))

        def forward(self, x: Any) -> Any:
            return self.fc(x + self.emb(self.ids[:, : x.shape[1]]))

    class Counter(base):
        """Reads and changes host state in forward: a graph bakes in the value it saw at capture. The count
        is kept in a dict changed in place, which the runtime's watch of attributes does not look into."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.seen = {"calls": 0}

        def forward(self, x: Any) -> Any:
            self.seen["calls"] += 1
            return self.fc(x) * float(self.seen["calls"])

    class BackwardCounter(base):
        """Its backward reads and changes host state (a hook on an inner tensor): a graph bakes in the
        gradient scale it saw at capture, while its forward matches eager's every time. The count is kept
        in a dict changed in place, as Counter's."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.seen = {"backwards": 0}

        def forward(self, x: Any) -> Any:
            h = self.fc(x)
            if needs_grad(h):
                h.register_hook(self._count)
            return tanh(h)

        def _count(self, grad: Any) -> Any:
            self.seen["backwards"] += 1
            return grad * float(self.seen["backwards"])

    class Cached(base):
        """An attention-like layer that appends to a cache its caller may pass: pure without one."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, x: Any, cache: Any = None, use_cache: bool = False) -> Any:
            h = self.fc(x)
            if cache is not None and use_cache:
                cache.append(h)
                h = h + len(cache)
            return h

    class Handing(base):
        """Hands its keywords on to a layer that takes a cache: the cache reaches it only as a keyword."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.inner = Cached(d)

        def forward(self, x: Any, **kwargs: Any) -> Any:
            return self.inner(x, **kwargs)

    class Recomputed(base):
        """Recomputes its block in the backward (reentrant activation checkpointing inside the forward)."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.block = MLP(d)

        def forward(self, x: Any) -> Any:
            return recompute(self.block, self.fc(x))

    class Patches(base):
        """Normalizes channels first and hands tokens out as a transposed view (a ViT's patch embedding): the
        gradient a head sends back is laid out otherwise than the output."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.bn = batch_norm(d)

        def forward(self, x: Any) -> Any:
            return swap(self.bn(swap(self.fc(x))))

    class Tokens(base):
        """Patches, then a head."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.patches = Patches(d)
            self.head = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            return self.head(self.patches(x))

    class Tower(base):
        """Blocks in a container, each with sublayers of its own, and a head."""

        def __init__(self, d: int, n: int = 3) -> None:
            super().__init__()
            self.blocks = nn.Sequential(*[MLP(d) for _ in range(n)])
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    class Rotary(base):
        """A rotary embedding's cache in plain attributes: tables for the positions up to the longest input seen,
        made again when an input outgrows them. Their values depend on that length (positions are normalized by
        it), so a graph that still reads the old tables gives other numbers than eager after a refresh.
        ``tensors``: the tables as two attributes of their own (in Paddle, a tensor attribute is a buffer) rather
        than a tuple in one."""

        def __init__(self, tensors: bool = False) -> None:
            super().__init__()
            self.tensors = tensors
            self._max = 0
            self.cos, self.sin, self.tables = None, None, None

        def forward(self, x: Any) -> Any:
            n = x.shape[1]
            if n > self._max:
                self._max = n
                ones = x.detach() * 0 + 1  # the input's device and dtype; no autograd history in the cache
                angles = (lib.cumsum(ones[0, :, :1], 0) / n) * lib.cumsum(ones[0, :1, :], 1)  # [n, d]
                if self.tensors:
                    self.cos, self.sin = lib.cos(angles), lib.sin(angles)
                else:
                    self.tables = (lib.cos(angles), lib.sin(angles))
            cos, sin = (self.cos, self.sin) if self.tensors else self.tables
            return x * cos[:n] + lib.flip(x, [2]) * sin[:n]

    class RotaryBlock(base):
        """A block whose sublayer refreshes its cache when an input outgrows it."""

        def __init__(self, d: int, tensors: bool = False) -> None:
            super().__init__()
            self.fc1 = nn.Linear(d, d)
            self.rotary = Rotary(tensors)
            self.fc2 = nn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            return x + self.fc2(F.gelu(self.rotary(self.fc1(x))))

    class Stack(base):
        """Layers run in turn; some callers pass a ``note`` (a guard of the wrapped stack keeps their calls eager)."""

        def __init__(self, layers: list) -> None:
            super().__init__()
            self.body = nn.Sequential(*layers)

        def forward(self, x: Any, note: Any = None) -> Any:
            return self.body(x)

    class Tally(base):
        """Counts its calls in an attribute and scales by the count: every capture changes it."""

        def __init__(self, d: int) -> None:
            super().__init__()
            self.fc = nn.Linear(d, d)
            self.calls = 0

        def forward(self, x: Any) -> Any:
            self.calls += 1
            return self.fc(x) * float(self.calls)

    return SimpleNamespace(
        **{
            c.__name__: c
            for c in (
                MLP, Multi, Heads, Sync, Norm, Partial, Inplace, DropOnly, FailsOnlyInCapture, Branches, Positions,
                Counter, BackwardCounter, Cached, Handing, Recomputed, Patches, Tokens, Tower, Rotary, RotaryBlock,
                Stack, Tally,
            )
        }
    )
