"""Flatten nested call arguments and outputs into a list of tensors plus a hashable spec of everything else.

The spec is part of the graph key: two calls share a graph only when their structure and every
non-tensor leaf (by type and value) are equal, because a capture bakes those values in. Containers
are rebuilt with their own type: lists, tuples, dicts, namedtuples, dicts of other types (ordered
dicts, the ordered-dict dataclasses model libraries return), dataclasses, and whatever the
framework's pytree registry knows (``torch.utils._pytree``), which comes first.
"""

from __future__ import annotations

import dataclasses
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
_MAPPING, _RECORD, _NODE = "M", "R", "P"  # dict of another type, dataclass, registered pytree node
ONE_TENSOR_CALL = (_TUPLE, ((_TUPLE, ((TENSOR,),)), (_DICT, (), ())))  # the spec of f(tensor)

# A registry maps a container type to its (flatten, unflatten) pair, as torch's pytree nodes do:
# flatten(obj) -> (children, context); unflatten(children, context) -> obj.
Registry = Callable[[type], Any]


class UnsupportedArgument(TypeError):
    """A non-tensor leaf whose value cannot key a graph (mutable, unhashable or tensor-holding)."""


class Tree:
    """One framework's flattening: what a tensor is, which other leaves are constants, and the
    framework's registry of container types (None where the framework has none)."""

    __slots__ = ("is_tensor", "is_static", "registry")

    def __init__(
        self,
        is_tensor: Callable[[Any], bool],
        is_static: Callable[[Any], bool],
        registry: Registry | None = None,
    ) -> None:
        self.is_tensor, self.is_static, self.registry = is_tensor, is_static, registry

    def flatten(self, obj: Any) -> tuple[list[Any], tuple]:
        """Return the tensor leaves of ``obj`` in order and a hashable spec of its structure and constants."""
        tensors: list[Any] = []
        spec = self._flatten(obj, tensors)
        return tensors, spec

    def flatten_call(self, args: tuple, kwargs: dict) -> tuple[list[Any], tuple]:
        """``flatten((args, kwargs))``, with the usual call of one tensor answered without a walk."""
        if not kwargs and len(args) == 1 and self.is_tensor(args[0]):
            return [args[0]], ONE_TENSOR_CALL
        return self.flatten((args, kwargs))

    def _flatten(self, obj: Any, out: list[Any]) -> tuple:
        if self.is_tensor(obj):
            out.append(obj)
            return (TENSOR,)
        kind = type(obj)
        if kind is tuple or kind is list:
            children = tuple(self._flatten(item, out) for item in obj)
            return (_TUPLE if kind is tuple else _LIST, children)
        if kind is dict:
            keys = _constant_keys(obj)
            return (_DICT, keys, tuple(self._flatten(obj[k], out) for k in keys))
        node = self.registry(kind) if self.registry is not None else None
        if node is not None:
            children, context = node.flatten_fn(obj)
            frozen = _Context(node.unflatten_fn, context, self._freeze(context, kind))
            return (_NODE, kind, frozen, tuple(self._flatten(item, out) for item in children))
        if isinstance(obj, tuple) and hasattr(kind, "_fields"):
            return (_NAMED, kind, tuple(self._flatten(item, out) for item in obj))
        fields = getattr(kind, "__dataclass_fields__", None)
        if isinstance(obj, dict):  # an ordered dict, or a model output that is a dataclass and a dict
            keys = _constant_keys(obj)
            return (_MAPPING, kind, fields is not None, keys, tuple(self._flatten(obj[k], out) for k in keys))
        if fields is not None and not isinstance(obj, type):
            names = _init_fields(kind)
            return (_RECORD, kind, names, tuple(self._flatten(getattr(obj, n), out) for n in names))
        if isinstance(obj, _CONSTANT_TYPES) or self.is_static(obj):
            try:
                hash(obj)
            except TypeError as err:
                raise UnsupportedArgument(f"unhashable argument of type {kind.__name__}") from err
            return (_CONST, kind, obj)
        raise UnsupportedArgument(f"argument of type {kind.__name__} cannot key a graph")

    def _freeze(self, value: Any, owner: type) -> Any:
        """A registered node's context as a hashable value that compares equal when the node's
        structure is equal (contexts are often lists of keys)."""
        if self.is_tensor(value):
            raise UnsupportedArgument(f"the pytree context of {owner.__name__} holds a tensor")
        if isinstance(value, (list, tuple)):
            return (type(value), tuple(self._freeze(v, owner) for v in value))
        if isinstance(value, dict):
            return (type(value), tuple((k, self._freeze(v, owner)) for k, v in value.items()))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = dataclasses.fields(value)
            return (type(value), tuple(self._freeze(getattr(value, f.name), owner) for f in fields))
        try:
            hash(value)
        except TypeError as err:
            raise UnsupportedArgument(f"the pytree context of {owner.__name__} is not hashable") from err
        return value


class _Context:
    """A registered node's unflatten function and context in a spec: equal and hashed by the frozen context."""

    __slots__ = ("unflatten_fn", "value", "frozen", "_hash")

    def __init__(self, unflatten_fn: Callable[[list, Any], Any], value: Any, frozen: Any) -> None:
        self.unflatten_fn, self.value, self.frozen = unflatten_fn, value, frozen
        self._hash = hash(frozen)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Context) and self.unflatten_fn == other.unflatten_fn and self.frozen == other.frozen

    def __hash__(self) -> int:
        return self._hash


def _constant_keys(obj: dict) -> tuple:
    keys = tuple(obj)
    for key in keys:
        if not isinstance(key, (str, int, enum.Enum)):
            raise UnsupportedArgument(f"dict key of type {type(key).__name__}")
    return keys


def _init_fields(kind: type) -> tuple[str, ...]:
    """A dataclass is rebuilt through its constructor; a field the constructor does not take would be lost."""
    names = []
    for f in dataclasses.fields(kind):
        if not f.init:
            raise UnsupportedArgument(f"dataclass {kind.__name__} has a field outside __init__ ({f.name})")
        names.append(f.name)
    return tuple(names)


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
    if tag == _NODE:
        context = spec[2]
        return context.unflatten_fn([_unflatten(child, it) for child in spec[3]], context.value)
    if tag == _MAPPING:
        _, kind, is_dataclass, keys, children = spec
        items = {key: _unflatten(child, it) for key, child in zip(keys, children)}
        return kind(**items) if is_dataclass else kind(items)
    if tag == _RECORD:
        return spec[1](**{name: _unflatten(child, it) for name, child in zip(spec[2], spec[3])})
    raise ValueError(f"unknown spec tag {tag!r}")
