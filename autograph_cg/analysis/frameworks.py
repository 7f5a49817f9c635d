"""What the analyzer knows about Paddle and PyTorch without importing them: names, not code.

The layer allowlist is short and reviewed: a framework layer not on it makes its parent `unknown`, never
`eligible` by guess.
"""

from __future__ import annotations

import functools

FRAMEWORKS = ("paddle", "torch")

#: Base classes that make a class a layer.
LAYER_BASES = frozenset(
    {
        "paddle.nn.Layer",
        "paddle.nn.layer.layers.Layer",
        "paddle.fluid.dygraph.Layer",
        "paddle.fluid.dygraph.layers.Layer",
        "torch.nn.Module",
        "torch.nn.modules.module.Module",
    }
)

_COMMON_ACTIVATIONS = {
    "ReLU", "ReLU6", "GELU", "SiLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "LeakyReLU", "PReLU", "ELU",
    "SELU", "CELU", "Hardswish", "Hardsigmoid", "Hardtanh", "Mish", "Softplus", "Softsign", "Tanhshrink",
    "Hardshrink", "Softshrink", "LogSigmoid", "GLU", "Identity", "Flatten", "Unflatten",
}  # fmt: skip

#: Framework layers reviewed as capturable: no host sync, no data-dependent shape in their forward.
KNOWN_LAYERS = {
    "paddle": frozenset(
        _COMMON_ACTIVATIONS
        | {
            "Linear", "Bilinear", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
            "Conv3DTranspose", "LayerNorm", "RMSNorm", "BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D",
            "SyncBatchNorm", "GroupNorm", "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D",
            "LocalResponseNorm", "Dropout", "Dropout2D", "Dropout3D", "AlphaDropout", "Embedding", "Pad1D",
            "Pad2D", "Pad3D", "ZeroPad2D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
            "AvgPool3D", "AdaptiveAvgPool1D", "AdaptiveAvgPool2D", "AdaptiveAvgPool3D", "AdaptiveMaxPool1D",
            "AdaptiveMaxPool2D", "AdaptiveMaxPool3D", "Upsample", "UpsamplingNearest2D",
            "UpsamplingBilinear2D", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Swish",
            "ThresholdedReLU", "Maxout", "MultiHeadAttention", "TransformerEncoderLayer",
            "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder", "CosineSimilarity",
            "PairwiseDistance", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss", "KLDivLoss",
            "CrossEntropyLoss", "NLLLoss", "Silu", "Softmax2D", "Unfold", "Fold",
        }
    ),
    "torch": frozenset(
        _COMMON_ACTIVATIONS
        | {
            "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
            "ConvTranspose3d", "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
            "SyncBatchNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
            "LocalResponseNorm", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "Embedding",
            "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
            "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
            "ReplicationPad3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
            "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
            "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
            "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Threshold", "Softmax2d", "Softmin",
            "MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "CosineSimilarity",
            "PairwiseDistance", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss",
            "HuberLoss", "KLDivLoss", "CrossEntropyLoss", "NLLLoss",
        }
    ),
}  # fmt: skip

#: Framework layers without parameters or buffers: building one in forward costs a Python object, nothing more.
PARAMETERLESS = frozenset(
    (_COMMON_ACTIVATIONS - {"PReLU"})
    | {
        "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "Dropout2D", "Dropout3D", "AlphaDropout", "MSELoss",
        "L1Loss", "BCELoss", "BCEWithLogitsLoss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "CrossEntropyLoss",
        "NLLLoss", "Upsample", "PixelShuffle", "PixelUnshuffle", "Swish", "Silu", "Softmax2D", "Softmin",
        "Threshold", "Unfold", "Fold", "CosineSimilarity", "PairwiseDistance", "ZeroPad2D", "ZeroPad2d",
    }
    | {f"{kind}{n}{d}" for kind in ("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool") for n in "123" for d in "dD"}
)  # fmt: skip

#: Containers: sequences and dicts of layers. Only `Sequential` is callable.
CONTAINERS = {
    "paddle": frozenset({"LayerList", "LayerDict", "Sequential", "ParameterList"}),
    "torch": frozenset({"ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict"}),
}
CALLABLE_CONTAINERS = frozenset({"Sequential"})

#: Framework functions that return host values (the rest return tensors).
HOST_FUNCTIONS = frozenset(
    {
        "is_tensor", "is_grad_enabled", "is_autocast_enabled", "get_default_dtype", "is_available",
        "device_count", "current_device", "is_compiled_with_cuda", "in_dynamic_mode", "is_scripting",
        "is_tracing", "is_compiling", "finfo", "iinfo", "Size", "device", "CUDAPlace", "CPUPlace", "get_device",
        "equal", "allclose", "is_nonzero", "is_floating_point", "is_complex", "get_rank", "get_world_size",
        "is_inference_mode_enabled", "get_autocast_gpu_dtype", "is_storage", "result_type", "promote_types",
        "can_cast", "dtype", "get_device_name", "get_device_capability",
    }
)  # fmt: skip
#: Framework functions returning a sequence of tensors.
SEQUENCE_FUNCTIONS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "meshgrid", "broadcast_tensors", "hsplit", "vsplit", "dsplit"}
)

#: Tensor attributes that are host metadata.
HOST_ATTRIBUTES = frozenset(
    {
        "shape", "ndim", "dtype", "device", "place", "is_cuda", "is_leaf", "requires_grad", "stop_gradient",
        "layout", "name", "persistable", "itemsize", "nbytes", "is_sparse", "training", "is_quantized",
    }
)  # fmt: skip
#: Tensor methods that return host values without a sync (the syncing ones are rules).
HOST_METHODS = {
    "torch": frozenset(
        {
            "size", "dim", "ndimension", "numel", "nelement", "element_size", "is_contiguous", "data_ptr",
            "get_device", "is_floating_point", "is_complex", "stride", "storage_offset", "type", "__len__",
            "item", "tolist", "numpy",
        }
    ),
    "paddle": frozenset(
        {"dim", "ndimension", "is_contiguous", "data_ptr", "is_floating_point", "is_complex", "item", "tolist",
         "numpy", "get_strides", "element_size"}
    ),
}  # fmt: skip

#: Python builtins that only read host metadata of a tensor.
HOST_BUILTINS = frozenset(
    {
        "len", "isinstance", "issubclass", "hasattr", "getattr", "callable", "type", "id", "range", "enumerate",
        "zip", "int", "float", "bool", "str", "repr", "format", "print", "round", "divmod", "hash", "tuple",
        "list", "dict", "set", "frozenset", "sorted", "reversed", "super", "iter", "next", "map", "filter",
        "vars", "setattr", "delattr", "chr", "ord", "bin", "hex", "oct", "complex", "slice", "object", "all",
        "any", "max", "min", "sum", "abs", "NotImplementedError", "ValueError", "TypeError", "RuntimeError",
        "AssertionError", "KeyError", "IndexError", "Exception", "globals", "locals",
    }
)  # fmt: skip
#: Builtins whose result is a tensor when given tensors (they apply operators).
TENSOR_BUILTINS = frozenset({"abs", "sum", "pow", "max", "min", "round", "divmod"})


def root(qualname: str) -> str:
    return qualname.split(".", 1)[0]


def is_framework(qualname: str) -> bool:
    return root(qualname) in FRAMEWORKS


@functools.lru_cache(maxsize=16384)
def layer_kind(qualname: str) -> str | None:
    """'base', 'known', 'container' or 'framework' for a framework class name; None when not the framework's."""
    fw = root(qualname)
    if fw not in FRAMEWORKS:
        return None
    if qualname in LAYER_BASES:
        return "base"
    short = qualname.rsplit(".", 1)[-1]
    if ".nn." not in qualname and not qualname.startswith(fw + ".nn"):
        return "framework"
    if short in CONTAINERS[fw]:
        return "container"
    if short in KNOWN_LAYERS[fw]:
        return "known"
    return "framework"
