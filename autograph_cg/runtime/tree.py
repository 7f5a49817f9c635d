"""Flatten nested call arguments into a list of tensors plus a hashable spec of everything else.

The spec is part of the graph key: two calls share a graph only when their structure and every
non-tensor leaf (by type and value) are equal, because a capture bakes those values in.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Callable, Iterator

# Non-tensor leaves that are safe to bake into a graph: immutable values without tensor state.
_CONSTANT_TYPES: tuple[type, ...] = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    enum.Enum,
    type,
    slice,
    range,
    type(Ellipsis),
    types.FunctionType,
    types.BuiltinFunctionType,
)

TENSOR = "T"
_LIST, _TUPLE, _DICT, _NAMED, _CONST = "L", "U", "D", "N", "C"
ONE_TENSOR_CALL = (_TUPLE, ((_TUPLE, ((TENSOR,),)), (_DICT, (), ())))  # the spec of f(tensor)


class UnsupportedArgument(TypeError):
    """A non-tensor leaf whose value cannot key a graph (mutable, unhashable or tensor-holding)."""


def flatten(
    obj: Any, is_tensor: Callable[[Any], bool], is_static: Callable[[Any], bool]
) -> tuple[list[Any], tuple]:
    """Return the tensor leaves of ``obj`` in order and a hashable spec of its structure and constants."""
    tensors: list[Any] = []
    spec = _flatten(obj, tensors, is_tensor, is_static)
    return tensors, spec


def flatten_call(
    args: tuple, kwargs: dict, is_tensor: Callable[[Any], bool], is_static: Callable[[Any], bool]
) -> tuple[list[Any], tuple]:
    """``flatten((args, kwargs))``, with the usual call of one tensor answered without a walk."""
    if not kwargs and len(args) == 1 and is_tensor(args[0]):
        return [args[0]], ONE_TENSOR_CALL
    return flatten((args, kwargs), is_tensor, is_static)


def _flatten(obj: Any, out: list[Any], is_tensor: Callable, is_static: Callable) -> tuple:
    if is_tensor(obj):
        out.append(obj)
        return (TENSOR,)
    kind = type(obj)
    if kind is tuple or kind is list:
        children = tuple(_flatten(item, out, is_tensor, is_static) for item in obj)
        return (_TUPLE if kind is tuple else _LIST, children)
    if kind is dict:
        keys = tuple(obj)
        _check_constant_keys(keys)
        return (_DICT, keys, tuple(_flatten(obj[k], out, is_tensor, is_static) for k in keys))
    if isinstance(obj, tuple) and hasattr(kind, "_fields"):
        return (_NAMED, kind, tuple(_flatten(item, out, is_tensor, is_static) for item in obj))
    if isinstance(obj, _CONSTANT_TYPES) or is_static(obj):
        try:
            hash(obj)
        except TypeError as err:
            raise UnsupportedArgument(f"unhashable argument of type {kind.__name__}") from err
        return (_CONST, kind, obj)
    raise UnsupportedArgument(f"argument of type {kind.__name__} cannot key a graph")


def _check_constant_keys(keys: tuple) -> None:
    for key in keys:
        if not isinstance(key, (str, int, enum.Enum)):
            raise UnsupportedArgument(f"dict key of type {type(key).__name__}")


def unflatten(spec: tuple, tensors: list[Any]) -> Any:
    """Rebuild the structure described by ``spec``, taking tensor leaves from ``tensors`` in order."""
    it = iter(tensors)
    return _unflatten(spec, it)


def _unflatten(spec: tuple, it: Iterator[Any]) -> Any:
    tag = spec[0]
    if tag == TENSOR:
        return next(it)
    if tag == _CONST:
        return spec[2]
    if tag == _TUPLE:
        return tuple(_unflatten(child, it) for child in spec[1])
    if tag == _LIST:
        return [_unflatten(child, it) for child in spec[1]]
    if tag == _DICT:
        return {key: _unflatten(child, it) for key, child in zip(spec[1], spec[2])}
    if tag == _NAMED:
        return spec[1](*(_unflatten(child, it) for child in spec[2]))
    raise ValueError(f"unknown spec tag {tag!r}")
