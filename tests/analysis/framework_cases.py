"""A small instance and inputs for every PyTorch and torchvision entry of the layer table that a GPU run checks.

`test_framework_capture_gpu.py` captures each with `torch.cuda.graph` and replays it against eager;
`test_framework_lists.py` builds and runs each on the CPU so that the GPU run never fails on a bad case.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn


@dataclass(frozen=True)
class Input:
    kind: str  # "normal", "unit" (in [0.1, 0.9]), "sign" (+-1), "long" (in [0, high)), "mask", "rois", "indices"
    shape: tuple[int, ...]
    high: int = 0
    grad: bool = True  # a float input the backward differentiates

    def make(self, generator: torch.Generator, device: str) -> torch.Tensor:
        if self.kind == "long":
            return torch.randint(0, self.high, self.shape, generator=generator).to(device)
        if self.kind == "mask":  # left-aligned padding mask: each row keeps 1..n positions, True is padding
            lengths = torch.randint(1, self.shape[-1] + 1, (*self.shape[:-1], 1), generator=generator)
            return (torch.arange(self.shape[-1]) >= lengths).to(device)
        if self.kind == "indices":  # max_unpool indices: the arg-max of each 2-wide window of a pool over `high` dims
            source = torch.randn(*self.shape[:2], *(2 * s for s in self.shape[2:]), generator=generator)
            pool = (nn.functional.max_pool1d, nn.functional.max_pool2d, nn.functional.max_pool3d)[self.high - 1]
            return pool(source, 2, return_indices=True)[1].to(device)
        if self.kind == "rois":  # (K, 5): batch index, x1, y1, x2, y2 inside an 8x8 map of a batch of 2
            count = self.shape[0]
            corner = torch.rand(count, 2, generator=generator) * 4
            size = torch.rand(count, 2, generator=generator) * 3 + 1
            batch = torch.randint(0, 2, (count, 1), generator=generator).float()
            return torch.cat([batch, corner, corner + size], dim=1).to(device)
        value = torch.randn(self.shape, generator=generator)
        if self.kind == "unit":
            value = torch.rand(self.shape, generator=generator) * 0.8 + 0.1
        elif self.kind == "sign":
            value = torch.where(value > 0, 1.0, -1.0)
        return value.to(device).requires_grad_(self.grad)


def f(*shape: int) -> Input:
    return Input("normal", shape)


def target(kind: str, *shape: int, high: int = 0) -> Input:
    return Input(kind, shape, high, grad=False)


@dataclass(frozen=True)
class Case:
    build: Callable[[], Any]
    inputs: tuple[Input, ...]
    random: str = ""  # "train": draws random numbers in training; "always": in eval too
    homogeneous: bool = False  # f(a x) = a f(x): x . d(w . f)/dx = w . f ties the backward's draw to the forward's
    kwargs: dict[str, Input] = field(default_factory=dict)


def _tv() -> Any:
    import torchvision.ops

    return torchvision.ops


def torchvision_missing() -> str:
    """Why torchvision's cases cannot run here ("" when they can): not installed, or a build that does not import
    beside this torch (PyPI's torchvision next to a torch it was not built for fails on its operator registrations)."""
    if importlib.util.find_spec("torchvision") is None:
        return "torchvision is not installed"
    try:
        _tv()
    except Exception as exc:  # noqa: BLE001 - any import failure means the same: no torchvision to check
        return f"torchvision does not import beside torch {torch.__version__}: {type(exc).__name__}: {exc}"
    return ""


def _encoder_layer() -> nn.Module:
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)


def _decoder_layer() -> nn.Module:
    return nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)


def _unary(shape: tuple[int, ...], **extra: Any) -> Callable[[Callable[[], Any]], Case]:
    return lambda build: Case(build, (f(*shape),), **extra)


_ACT = _unary((2, 6))
_2D = (2, 3, 8, 8)
_DIMS = {"1": (2, 3, 8), "2": _2D, "3": (2, 3, 4, 4, 4)}
_PAIR = (f(4, 5), target("normal", 4, 5))

TORCH_CASES: dict[str, Case] = {
    **{f"torch.nn.{n}": _ACT(getattr(nn, n)) for n in (
        "CELU ELU GELU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid Mish ReLU ReLU6 SELU SiLU "
        "Sigmoid Softplus Softshrink Softsign Tanh Tanhshrink GLU PReLU Identity"
    ).split()},
    "torch.ao.quantization.QuantStub": _ACT(lambda: torch.ao.quantization.QuantStub()),
    "torch.ao.quantization.DeQuantStub": _ACT(lambda: torch.ao.quantization.DeQuantStub()),
    "torch.nn.Threshold": _ACT(lambda: nn.Threshold(0.1, 20.0)),
    "torch.nn.Softmax": _ACT(lambda: nn.Softmax(dim=-1)),
    "torch.nn.Softmin": _ACT(lambda: nn.Softmin(dim=-1)),
    "torch.nn.LogSoftmax": _ACT(lambda: nn.LogSoftmax(dim=-1)),
    "torch.nn.Softmax2d": Case(nn.Softmax2d, (f(2, 3, 4, 4),)),
    "torch.nn.RReLU": Case(nn.RReLU, (f(4, 16),), random="train", homogeneous=True),
    "torch.nn.Flatten": Case(nn.Flatten, (f(2, 3, 4),)),
    "torch.nn.Unflatten": Case(lambda: nn.Unflatten(1, (2, 3)), (f(2, 6),)),
    "torch.nn.Linear": Case(lambda: nn.Linear(8, 4), (f(2, 8),)),
    "torch.nn.modules.linear.NonDynamicallyQuantizableLinear": Case(
        lambda: nn.modules.linear.NonDynamicallyQuantizableLinear(8, 4), (f(2, 8),)
    ),
    "torch.nn.Bilinear": Case(lambda: nn.Bilinear(4, 5, 3), (f(2, 4), f(2, 5))),
    **{f"torch.nn.Conv{n}d": Case(lambda n=n: getattr(nn, f"Conv{n}d")(3, 4, 3), (f(*_DIMS[n]),)) for n in "123"},
    **{
        f"torch.nn.ConvTranspose{n}d": Case(lambda n=n: getattr(nn, f"ConvTranspose{n}d")(3, 4, 3), (f(*_DIMS[n]),))
        for n in "123"
    },
    "torch.nn.BatchNorm1d": Case(lambda: nn.BatchNorm1d(3), (f(4, 3),)),
    "torch.nn.BatchNorm2d": Case(lambda: nn.BatchNorm2d(3), (f(4, 3, 5, 5),)),
    "torch.nn.BatchNorm3d": Case(lambda: nn.BatchNorm3d(3), (f(4, 3, 3, 3, 3),)),
    "torch.nn.SyncBatchNorm": Case(lambda: nn.SyncBatchNorm(3), (f(4, 3, 5, 5),)),
    "torch.nn.GroupNorm": Case(lambda: nn.GroupNorm(2, 4), (f(2, 4, 5),)),
    "torch.nn.LayerNorm": Case(lambda: nn.LayerNorm(6), (f(2, 6),)),
    "torch.nn.RMSNorm": Case(lambda: nn.RMSNorm(6), (f(2, 6),)),
    **{
        f"torch.nn.InstanceNorm{n}d": Case(lambda n=n: getattr(nn, f"InstanceNorm{n}d")(3, affine=True, track_running_stats=True),
                                           (f(*_DIMS[n]),))
        for n in "123"
    },
    "torch.nn.LocalResponseNorm": Case(lambda: nn.LocalResponseNorm(2), (f(2, 4, 5, 5),)),
    "torch.nn.CrossMapLRN2d": Case(lambda: nn.CrossMapLRN2d(3), (f(2, 4, 5, 5),)),
    "torch.nn.Dropout": Case(lambda: nn.Dropout(0.5), (f(4, 16),), random="train", homogeneous=True),
    "torch.nn.Dropout1d": Case(lambda: nn.Dropout1d(0.5), (f(4, 8, 8),), random="train", homogeneous=True),
    "torch.nn.Dropout2d": Case(lambda: nn.Dropout2d(0.5), (f(4, 8, 3, 3),), random="train", homogeneous=True),
    "torch.nn.Dropout3d": Case(lambda: nn.Dropout3d(0.5), (f(4, 8, 2, 2, 2),), random="train", homogeneous=True),
    "torch.nn.AlphaDropout": Case(lambda: nn.AlphaDropout(0.5), (f(4, 16),), random="train"),
    "torch.nn.FeatureAlphaDropout": Case(lambda: nn.FeatureAlphaDropout(0.5), (f(4, 8, 3, 3),), random="train"),
    "torch.nn.Embedding": Case(lambda: nn.Embedding(10, 4, max_norm=1.0), (target("long", 2, 5, high=10),)),
    "torch.nn.EmbeddingBag": Case(lambda: nn.EmbeddingBag(10, 4, mode="mean", max_norm=1.0), (target("long", 2, 5, high=10),)),
    **{
        f"torch.nn.{kind}{n}d": Case(lambda kind=kind, n=n: getattr(nn, f"{kind}{n}d")(*((1, 0.5) if kind == "ConstantPad" else (1,))),
                                     (f(*_DIMS[n]),))
        for kind in ("ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad")
        for n in "123"
    },
    **{f"torch.nn.{kind}{n}d": Case(lambda kind=kind, n=n: getattr(nn, f"{kind}{n}d")(2), (f(*_DIMS[n]),))
       for kind in ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool") for n in "123"},
    **{f"torch.nn.LPPool{n}d": Case(lambda n=n: getattr(nn, f"LPPool{n}d")(2, 2), (Input("unit", _DIMS[n]),))
       for n in "123"},
    "torch.nn.FractionalMaxPool2d": Case(lambda: nn.FractionalMaxPool2d(2, output_size=5), (f(2, 3, 12, 12),),
                                         random="always", homogeneous=True),
    "torch.nn.FractionalMaxPool3d": Case(lambda: nn.FractionalMaxPool3d(2, output_size=4), (f(2, 3, 9, 9, 9),),
                                         random="always", homogeneous=True),
    **{
        f"torch.nn.MaxUnpool{n}d": Case(lambda n=n: getattr(nn, f"MaxUnpool{n}d")(2),
                                        (f(*_DIMS[n][:2], *(s // 2 for s in _DIMS[n][2:])),
                                         Input("indices", (*_DIMS[n][:2], *(s // 2 for s in _DIMS[n][2:])), int(n), False)))
        for n in "123"
    },
    "torch.nn.Upsample": Case(lambda: nn.Upsample(scale_factor=2), (f(2, 3, 4, 4),)),
    "torch.nn.UpsamplingNearest2d": Case(lambda: nn.UpsamplingNearest2d(scale_factor=2), (f(2, 3, 4, 4),)),
    "torch.nn.UpsamplingBilinear2d": Case(lambda: nn.UpsamplingBilinear2d(scale_factor=2), (f(2, 3, 4, 4),)),
    "torch.nn.PixelShuffle": Case(lambda: nn.PixelShuffle(2), (f(2, 8, 3, 3),)),
    "torch.nn.PixelUnshuffle": Case(lambda: nn.PixelUnshuffle(2), (f(2, 2, 4, 4),)),
    "torch.nn.ChannelShuffle": Case(lambda: nn.ChannelShuffle(2), (f(2, 4, 3, 3),)),
    "torch.nn.Fold": Case(lambda: nn.Fold(output_size=(4, 4), kernel_size=2), (f(2, 12, 9),)),
    "torch.nn.Unfold": Case(lambda: nn.Unfold(kernel_size=2), (f(2, 3, 4, 4),)),
    "torch.nn.CosineSimilarity": Case(nn.CosineSimilarity, (f(2, 5), f(2, 5))),
    "torch.nn.PairwiseDistance": Case(nn.PairwiseDistance, (f(2, 5), f(2, 5))),
    "torch.nn.MultiheadAttention": Case(lambda: nn.MultiheadAttention(8, 2, batch_first=True), (f(2, 5, 8), f(2, 6, 8), f(2, 6, 8))),
    "torch.nn.TransformerEncoderLayer": Case(_encoder_layer, (f(2, 5, 8),)),
    "torch.nn.TransformerDecoderLayer": Case(_decoder_layer, (f(2, 5, 8), f(2, 6, 8))),
    "torch.nn.TransformerEncoder": Case(lambda: nn.TransformerEncoder(_encoder_layer(), 2), (f(2, 5, 8),)),
    "torch.nn.TransformerDecoder": Case(lambda: nn.TransformerDecoder(_decoder_layer(), 2), (f(2, 5, 8), f(2, 6, 8))),
    "torch.nn.Transformer": Case(
        lambda: nn.Transformer(8, 2, 1, 1, dim_feedforward=16, dropout=0.0, batch_first=True), (f(2, 5, 8), f(2, 4, 8))
    ),
    "torch.nn.RNN": Case(lambda: nn.RNN(4, 6, batch_first=True), (f(2, 5, 4),)),
    "torch.nn.LSTM": Case(lambda: nn.LSTM(4, 6, num_layers=2, batch_first=True), (f(2, 5, 4),)),
    "torch.nn.GRU": Case(lambda: nn.GRU(4, 6, batch_first=True, bidirectional=True), (f(2, 5, 4),)),
    "torch.nn.RNNCell": Case(lambda: nn.RNNCell(4, 6), (f(2, 4),)),
    "torch.nn.LSTMCell": Case(lambda: nn.LSTMCell(4, 6), (f(2, 4),)),
    "torch.nn.GRUCell": Case(lambda: nn.GRUCell(4, 6), (f(2, 4),)),
    **{f"torch.nn.{n}": Case(getattr(nn, n), _PAIR) for n in "L1Loss MSELoss SmoothL1Loss HuberLoss".split()},
    "torch.nn.BCELoss": Case(nn.BCELoss, (Input("unit", (4, 5)), target("unit", 4, 5))),
    "torch.nn.BCEWithLogitsLoss": Case(nn.BCEWithLogitsLoss, (f(4, 5), target("unit", 4, 5))),
    "torch.nn.CrossEntropyLoss": Case(lambda: nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1),
                                      (f(6, 5), target("long", 6, high=5))),
    "torch.nn.NLLLoss": Case(lambda: nn.NLLLoss(ignore_index=0), (f(6, 5), target("long", 6, high=5))),
    "torch.nn.NLLLoss2d": Case(nn.NLLLoss2d, (f(2, 5, 3, 3), target("long", 2, 3, 3, high=5))),
    "torch.nn.KLDivLoss": Case(lambda: nn.KLDivLoss(reduction="batchmean"), (f(4, 5), target("unit", 4, 5))),
    "torch.nn.PoissonNLLLoss": Case(nn.PoissonNLLLoss, (f(4, 5), target("unit", 4, 5))),
    "torch.nn.MarginRankingLoss": Case(nn.MarginRankingLoss, (f(5), f(5), target("sign", 5))),
    "torch.nn.HingeEmbeddingLoss": Case(nn.HingeEmbeddingLoss, (f(5), target("sign", 5))),
    "torch.nn.MultiLabelMarginLoss": Case(nn.MultiLabelMarginLoss, (f(3, 4), target("long", 3, 4, high=4))),
    "torch.nn.MultiLabelSoftMarginLoss": Case(nn.MultiLabelSoftMarginLoss, (f(3, 4), target("unit", 3, 4))),
    "torch.nn.MultiMarginLoss": Case(nn.MultiMarginLoss, (f(3, 4), target("long", 3, high=4))),
    "torch.nn.SoftMarginLoss": Case(nn.SoftMarginLoss, (f(5), target("sign", 5))),
    "torch.nn.CosineEmbeddingLoss": Case(nn.CosineEmbeddingLoss, (f(3, 5), f(3, 5), target("sign", 3))),
    "torch.nn.TripletMarginLoss": Case(nn.TripletMarginLoss, (f(3, 5), f(3, 5), f(3, 5))),
    "torch.nn.TripletMarginWithDistanceLoss": Case(nn.TripletMarginWithDistanceLoss, (f(3, 5), f(3, 5), f(3, 5))),
    "torch.nn.Sequential": Case(lambda: nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2)), (f(2, 8),)),
}

TORCHVISION_CASES: dict[str, Case] = {
    "torchvision.ops.StochasticDepth": Case(lambda: _tv().StochasticDepth(0.5, "row"), (f(32, 3, 2, 2),), random="train",
                                            homogeneous=True),
    "torchvision.ops.DropBlock2d": Case(lambda: _tv().DropBlock2d(0.5, 3), (f(2, 3, 8, 8),), random="train",
                                        homogeneous=True),
    "torchvision.ops.DropBlock3d": Case(lambda: _tv().DropBlock3d(0.5, 3), (f(2, 3, 6, 6, 6),), random="train",
                                        homogeneous=True),
    "torchvision.ops.FrozenBatchNorm2d": Case(lambda: _tv().FrozenBatchNorm2d(3), (f(2, 3, 4, 4),)),
    "torchvision.ops.Permute": Case(lambda: _tv().Permute([0, 2, 1]), (f(2, 3, 4),)),
    "torchvision.ops.SqueezeExcitation": Case(lambda: _tv().SqueezeExcitation(4, 2), (f(2, 4, 5, 5),)),
    "torchvision.ops.Conv2dNormActivation": Case(lambda: _tv().Conv2dNormActivation(3, 4), (f(*_2D),)),
    "torchvision.ops.Conv3dNormActivation": Case(lambda: _tv().Conv3dNormActivation(3, 4), (f(*_DIMS["3"]),)),
    "torchvision.ops.MLP": Case(lambda: _tv().MLP(8, [16, 4]), (f(2, 8),)),
    "torchvision.ops.DeformConv2d": Case(lambda: _tv().DeformConv2d(3, 4, 3, padding=1), (f(2, 3, 5, 5), f(2, 18, 5, 5))),
    "torchvision.ops.RoIAlign": Case(lambda: _tv().RoIAlign(2, 1.0, 2), (f(*_2D), Input("rois", (6,), grad=False))),
    "torchvision.ops.RoIPool": Case(lambda: _tv().RoIPool(2, 1.0), (f(*_2D), Input("rois", (6,), grad=False))),
    "torchvision.ops.PSRoIAlign": Case(lambda: _tv().PSRoIAlign(2, 1.0, 2), (f(2, 8, 8, 8), Input("rois", (6,), grad=False))),
    "torchvision.ops.PSRoIPool": Case(lambda: _tv().PSRoIPool(2, 1.0), (f(2, 8, 8, 8), Input("rois", (6,), grad=False))),
}

#: The caveats of the table, run: each of these must fail to capture (or replay wrong) for its caveat to stand.
HAZARD_CASES: dict[str, tuple[Case, bool]] = {  # name -> (case, training)
    "torch.nn.BatchNorm1d momentum=None": (Case(lambda: nn.BatchNorm1d(3, momentum=None), (f(4, 3),)), True),
    "torch.nn.TransformerEncoder src_key_padding_mask": (
        Case(lambda: nn.TransformerEncoder(_encoder_layer(), 2), (f(2, 5, 8),),
             kwargs={"src_key_padding_mask": Input("mask", (2, 5), grad=False)}),
        False,
    ),
}


def make_inputs(case: Case, seed: int, device: str) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    args = [spec.make(generator, device) for spec in case.inputs]
    kwargs = {name: spec.make(generator, device) for name, spec in case.kwargs.items()}
    return args, kwargs


def float_outputs(value: Any) -> list[torch.Tensor]:
    """The floating-point tensors in a layer's output (tuples, lists and nested states flattened)."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in float_outputs(item)]
    return []


def weighted_sum(outputs: list[torch.Tensor], weights: list[torch.Tensor]) -> torch.Tensor:
    """A scalar whose gradient sends a different weight to every output element."""
    return sum((out * w).sum() for out, w in zip(outputs, weights))  # type: ignore[return-value]


def grad_targets(module: nn.Module, args: list[torch.Tensor]) -> list[torch.Tensor]:
    return [a for a in args if a.requires_grad] + [p for p in module.parameters() if p.requires_grad]
