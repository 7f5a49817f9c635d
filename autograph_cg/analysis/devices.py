"""Branches that cannot run on an NVIDIA GPU: code for other devices is never walked.

`if paddle.is_compiled_with_xpu():`, `if get_env_device() == "npu":`, `elif x.device.type == "mps":` and the
like pick code for another accelerator (or the CPU); on a CUDA device that arm never runs, so its hazards and
unresolved calls (vendor kernels) are not the graph's. Which names and device strings count is data here.
"""

from __future__ import annotations

import ast
import re
from typing import Callable

#: Framework predicates that are false on a CUDA build.
NOT_ON_CUDA = frozenset(
    {
        "paddle.is_compiled_with_xpu", "paddle.is_compiled_with_rocm", "paddle.is_compiled_with_custom_device",
        "paddle.is_compiled_with_npu", "paddle.is_compiled_with_mlu", "paddle.is_compiled_with_ipu",
        "paddle.device.is_compiled_with_xpu", "paddle.device.is_compiled_with_rocm",
        "paddle.device.is_compiled_with_custom_device", "paddle.device.is_compiled_with_npu",
        "paddle.device.is_compiled_with_mlu", "paddle.device.is_compiled_with_ipu",
        "paddle.fluid.core.is_compiled_with_xpu", "paddle.fluid.core.is_compiled_with_rocm",
        "paddle.base.core.is_compiled_with_xpu", "paddle.base.core.is_compiled_with_rocm",
        "torch.xpu.is_available", "torch.backends.mps.is_available", "torch.mps.is_available",
        "torch.is_vulkan_available", "torch.backends.mps.is_built",
    }
)  # fmt: skip
#: Device names that are not an NVIDIA GPU.
OTHER_DEVICES = frozenset(
    {"cpu", "xpu", "npu", "mlu", "gcu", "ipu", "hpu", "intel_hpu", "mps", "xla", "iluvatar_gpu", "metax_gpu", "sdaa",
     "musa", "dcu", "rocm", "hip", "vulkan", "meta"}
)  # fmt: skip
_DEVICE_WORDS = ("device", "place", "backend")
#: `is_torch_npu_available()`, `is_xpu_available()`: the usual name of a package's own check for another
#: accelerator (its plugin importable, its device present), false where the graphs run
_AVAILABLE = re.compile(r"is_(?:torch_)?(" + "|".join(sorted(OTHER_DEVICES - {"cpu", "meta"})) + r")_available")

Qualify = Callable[[ast.expr], "str | None"]


def on_cuda(test: ast.expr, qualify: Qualify) -> bool | None:
    """False when `test` is false on an NVIDIA GPU, True when it is true there, None when it depends on more."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = on_cuda(test.operand, qualify)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [on_cuda(v, qualify) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in parts else True if all(p is True for p in parts) else None
        return True if True in parts else False if all(p is False for p in parts) else None
    if isinstance(test, ast.Call):
        qual = qualify(test.func)
        if qual in NOT_ON_CUDA:
            return False
        name = qual.rsplit(".", 1)[-1] if qual else getattr(test.func, "id", getattr(test.func, "attr", ""))
        if _AVAILABLE.fullmatch(name):
            return False
        if isinstance(test.func, ast.Attribute) and test.func.attr == "startswith" and test.args:
            names = _device_names(test.args[0])
            if names and _device_like(test.func.value):
                return False
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Eq, ast.NotEq)):
            for value, other in ((left, right), (right, left)):
                names = _device_names(other)
                if names and _device_like(value):
                    return isinstance(op, ast.NotEq)
        if isinstance(op, (ast.In, ast.NotIn)):
            names = _device_names(right)
            if names and _device_like(left):  # get_env_device() in ["npu", "xpu"]
                return isinstance(op, ast.NotIn)
            names = _device_names(left)
            if names and _device_like(right):  # "xpu" in paddle.device.get_all_custom_device_type()
                return isinstance(op, ast.NotIn)
    return None


def _device_names(node: ast.expr) -> frozenset[str]:
    """The literal device names `node` spells, when all of them are other devices; else empty."""
    values: list[object] = []
    if isinstance(node, ast.Constant):
        values = [node.value]
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
    names = [v.split(":", 1)[0].lower() for v in values if isinstance(v, str)]
    if not names or len(names) != len(values) or not all(n in OTHER_DEVICES for n in names):
        return frozenset()
    return frozenset(names)


def _device_like(node: ast.expr) -> bool:
    """An expression that names a device: `get_env_device()`, `x.device.type`, `self.place`, `device_type`."""
    while isinstance(node, ast.Call):
        node = node.func
    text = []
    while isinstance(node, ast.Attribute):
        text.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        text.append(node.id)
    return any(word in part.lower() for part in text for word in _DEVICE_WORDS)
