"""What the analyzer knows about Paddle and PyTorch without importing them: names, not code.

The layer allowlist is short and reviewed: a framework layer not on it makes its parent `unknown`, never
`eligible` by guess.
"""

from __future__ import annotations

import functools

from autograph_cg.analysis.framework_layers import BASE, CONTAINER, KNOWN, LAYERS, Layer

FRAMEWORKS = ("paddle", "torch")


def root(qualname: str) -> str:
    return qualname.split(".", 1)[0]


def is_framework(qualname: str) -> bool:
    return root(qualname) in FRAMEWORKS


#: Where framework layers live outside `<framework>.nn`: each of these prefixes keys its own lists.
LAYER_HOMES = ("torchvision.ops", "paddle.vision.ops", "torch.ao.quantization")
_HOME_ROOTS = frozenset(root(h) for h in LAYER_HOMES) - set(FRAMEWORKS)


def home(qualname: str) -> str | None:
    """The key of the lists a framework class name is looked up in: its framework for `<fw>.nn`, else a prefix."""
    fw = root(qualname)
    if fw in FRAMEWORKS and (".nn." in qualname or qualname.startswith(fw + ".nn")):
        return fw
    return next((h for h in LAYER_HOMES if qualname.startswith(h + ".")), None)


def _by_home(role: str) -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {fw: set() for fw in FRAMEWORKS}
    for layer in LAYERS:
        place = home(layer.name)
        if layer.role == role and place is not None:
            found.setdefault(place, set()).add(layer.short)
    return {place: frozenset(names) for place, names in found.items()}


#: Base classes that make a class a layer (Paddle 2.4 and earlier spelled them `paddle.fluid.dygraph...`).
LAYER_BASES = frozenset(layer.name for layer in LAYERS if layer.role == BASE) | {
    "paddle.fluid.dygraph.Layer",
    "paddle.fluid.dygraph.layers.Layer",
}
#: Framework layers checked capturable, by short name per home: a framework layer not on it makes its parent
#: `unknown`, never `eligible` by guess. The evidence for each is in `framework_layers.py`.
KNOWN_LAYERS = _by_home(KNOWN)
#: Framework layers without parameters or buffers: building one in forward costs a Python object, nothing more.
PARAMETERLESS = frozenset(layer.short for layer in LAYERS if layer.stateless)
#: Off-list layers whose forward has a definite capture hazard (`Layer.hazard`), by home and short name.
_HAZARDOUS = {(home(layer.name), layer.short): layer for layer in LAYERS if layer.hazard}


def hazard(qualname: str, passes: tuple[tuple[int | str | None, object], ...] | None) -> Layer | None:
    """The entry of a framework layer whose forward has a definite capture hazard where a call passing `passes`
    (positions and keywords, as `CallRef.passes`; None: a call not seen, a subclass's inherited forward) runs it:
    one whose hazard holds only under an argument counts where the call may pass it (`**x`, `*xs` included)."""
    layer = _HAZARDOUS.get((home(qualname), qualname.rsplit(".", 1)[-1]))
    if layer is None or not layer.when:
        return layer
    if passes is None:
        return None
    keyword, position = layer.when
    for key, value in passes:
        spread = value == ("*",) and isinstance(key, int) and key <= position
        if (key in (keyword, position, None) or spread) and value != ("c", None):
            return layer
    return None


#: Containers: sequences and dicts of layers. Only `Sequential` is callable.
CONTAINERS = _by_home(CONTAINER)
CALLABLE_CONTAINERS = frozenset({"Sequential"})

# The name lists below are checked by calling or reading each name in both frameworks
# (`tests/analysis/test_framework_lists.py`). A name is on a list only if it means the same in every framework that
# has it: `paddle.equal` and `paddle.allclose` return tensors where `torch.equal` returns a bool, so neither is a host
# function, and `paddle.numel` / `Tensor.numel` return tensors where torch's return ints.

#: Framework functions that return host values (the rest return tensors): flags, devices, dtypes, process groups.
HOST_FUNCTIONS = frozenset(
    {
        "is_tensor", "is_grad_enabled", "is_autocast_enabled", "get_default_dtype", "is_available",
        "device_count", "current_device", "is_compiled_with_cuda", "in_dynamic_mode", "is_scripting",
        "is_tracing", "is_compiling", "finfo", "iinfo", "Size", "device", "CUDAPlace", "CPUPlace", "get_device",
        "is_nonzero", "is_floating_point", "is_complex", "get_rank", "get_world_size", "is_inference_mode_enabled",
        "get_autocast_gpu_dtype", "is_storage", "result_type", "promote_types", "can_cast", "get_device_name",
        "get_device_capability",
        # torch
        "get_autocast_dtype", "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
        "get_num_threads", "is_initialized", "is_bf16_supported", "get_device_properties", "get_default_device",
        "is_current_stream_capturing", "is_dynamo_compiling", "is_exporting", "is_in_onnx_export", "get_backend",
        "is_built", "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
        "is_torchelastic_launched", "is_same_size",
        # paddle
        "in_dygraph_mode", "in_dynamic_or_pir_mode", "in_pir_mode", "use_pir_api", "is_compiled_with_rocm",
        "is_compiled_with_xpu", "is_compiled_with_custom_device", "is_compiled_with_distribute",
        "is_compiled_with_cinn", "is_bfloat16_supported", "is_float16_supported", "get_all_custom_device_type",
        "get_cudnn_version", "get_flags", "is_integer", "in_declarative_mode", "in_to_static_mode",
        "get_hybrid_communicate_group",
        # distributed tensor placements
        "Shard", "Replicate", "Partial",
    }
)  # fmt: skip
#: Framework functions whose result is a tensor in host memory on every device: Paddle's `shape` and `shape64` kernels
#: fill their output with `HostAlloc`, registered for GPU with `OutputAt(0).SetBackend(phi::Backend::CPU)`
#: (`paddle/phi/kernels/shape_kernel.cc`). Reading it (a slice bound, an `arange` end, a test) copies nothing and waits
#: for nothing, and what it holds is shapes, which a graph is keyed by: a host value to the rules.
HOST_MEMORY_FUNCTIONS = frozenset({"paddle.shape", "paddle.tensor.shape", "paddle.tensor.attribute.shape"})


def returns_host(qualname: str) -> bool:
    """A framework call whose result is host data: a flag, a device, a dtype, a process group, or a tensor in host
    memory."""
    return qualname.rsplit(".", 1)[-1] in HOST_FUNCTIONS or qualname in HOST_MEMORY_FUNCTIONS


#: The frameworks' own "is a CUDA graph being captured on this stream" queries: true while a graph captures, so
#: code under their negation never runs in one (`analysis/capture.py`).
CAPTURE_QUERIES = frozenset(
    {
        "torch.cuda.is_current_stream_capturing", "torch.cuda.graphs.is_current_stream_capturing",
        "paddle.device.is_current_stream_capturing", "paddle.base.core.is_cuda_graph_capturing",
    }
)  # fmt: skip
#: Framework functions returning a sequence of tensors.
SEQUENCE_FUNCTIONS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "meshgrid", "broadcast_tensors", "hsplit", "vsplit", "dsplit", "unstack"}
)

#: Tensor attributes that are host metadata (`training` is the layer's flag).
HOST_ATTRIBUTES = frozenset(
    {
        "shape", "ndim", "dtype", "device", "place", "is_cuda", "is_leaf", "requires_grad", "stop_gradient",
        "layout", "name", "persistable", "itemsize", "nbytes", "is_sparse", "training", "is_quantized", "is_cpu",
        "is_meta", "is_nested", "is_sparse_csr", "is_mkldnn", "strides", "placements", "process_mesh",
    }
)  # fmt: skip
#: Tensor methods that return host values without a sync (the syncing ones are rules).
HOST_METHODS = {
    "torch": frozenset(
        {
            "size", "dim", "ndimension", "numel", "nelement", "element_size", "is_contiguous", "data_ptr",
            "get_device", "is_floating_point", "is_complex", "stride", "storage_offset", "type", "__len__",
            "item", "tolist", "numpy", "is_pinned", "is_signed", "is_inference", "is_conj", "is_neg", "is_same_size",
            "dim_order",
        }
    ),
    "paddle": frozenset(
        {"dim", "ndimension", "is_contiguous", "data_ptr", "is_floating_point", "is_complex", "item", "tolist",
         "numpy", "get_strides", "element_size", "is_dense", "is_dist", "is_sparse", "is_sparse_coo", "is_sparse_csr",
         "is_selected_rows", "is_same_shape"}
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


@functools.lru_cache(maxsize=16384)
def layer_kind(qualname: str) -> str | None:
    """'base', 'known', 'container' or 'framework' for a framework class name; None when not the framework's."""
    fw = root(qualname)
    if fw not in FRAMEWORKS and fw not in _HOME_ROOTS:
        return None
    if qualname in LAYER_BASES:
        return "base"
    short = qualname.rsplit(".", 1)[-1]
    place = home(qualname)
    if place is not None and short in CONTAINERS.get(place, ()):
        return "container"
    if place is not None and short in KNOWN_LAYERS.get(place, ()):
        return "known"
    return "framework" if fw in FRAMEWORKS else None


#: Roots of libraries whose calls are host code or known harmless; never "unresolved", never a layer.
HOST_LIBRARIES = frozenset(
    {
        "math", "random", "time", "logging", "warnings", "numpy", "functools", "itertools", "operator",
        "collections", "copy", "os", "sys", "re", "typing", "dataclasses", "inspect", "contextlib", "abc", "enum",
        "json", "pickle", "tqdm", "datetime", "einops", "string", "types", "weakref", "pathlib",
    }
)  # fmt: skip


def is_host(qualname: str) -> bool:
    """A builtin or a name of a host library: host code, never a layer."""
    return qualname.startswith("builtins.") or root(qualname) in HOST_LIBRARIES


#: Framework layers that launch no kernel of their own (they return their input or a view of it).
_VIEW_LAYERS = frozenset({"Identity", "Flatten", "Unflatten", "Permute"})


def kernels(qualname: str) -> int:
    """About how many kernels one call of a known framework layer launches in forward."""
    return 0 if qualname.rsplit(".", 1)[-1] in _VIEW_LAYERS else 1
