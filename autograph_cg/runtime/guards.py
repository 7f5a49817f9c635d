"""Argument guards: the tests a call must pass for a layer's graphs to serve it.

``rewrite`` writes a guard where a layer is capturable only while some of its forward's arguments
hold host values the plan names (``past_key_values`` left at ``None``, ``use_cache`` off); a call
that fails a test runs eagerly, with the reason counted. Docs: docs/runtime.md, "Guards".
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

_HOST = (bool, int, float, complex, str, bytes, type(None))
_MISSING = object()
_REQUIRED = object()  # the default of a test that a value left out fails


def _flag(value: Any) -> bool | None:
    """The truth of a host value, or None for anything else (a tensor's truth would sync the host)."""
    if isinstance(value, _HOST) or (isinstance(value, (tuple, list, dict)) and not value):
        return bool(value)
    return None


def _false_passed(value: Any) -> bool:
    return value is not None and _flag(value) is False


TESTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "is None": (lambda v: v is None, "is not None"),
    "is not None": (lambda v: v is not None, "is None"),
    "falsy": (lambda v: _flag(v) is False, "is not false"),
    "truthy": (lambda v: _flag(v) is True, "is not true"),
    # a decorated forward may fill what is left out (or passed as None): only a false value passed counts
    "passed false": (_false_passed, "is not passed as false"),
    # ... or, where its decorator fills it from the layer's config alone, a config value that is false
    "config false": (_false_passed, "is not passed as false and config.{} is not false"),
}
#: Tests that a value left at its default fails, whatever the default.
_PASSED_ONLY = frozenset({"passed false"})
_FROM_CONFIG = object()  # the default of a test that a value left out (or None) reads from the layer's config


def _reached(value: Any, path: tuple[str, ...]) -> list[Any]:
    """What the attribute chain ``path`` reaches from ``value``: one value, or one per item where a part is ``*``
    (``self.h.*.attn.training``: the setting of every layer a container holds, as forward runs them all)."""
    found = [value]
    for attr in path:
        if attr != "*":
            found = [getattr(v, attr, _MISSING) for v in found]
            continue
        items: list[Any] = []
        for v in found:
            if v is _MISSING:
                items.append(v)
            elif hasattr(v, "values") and callable(v.values):  # a dict of layers (ModuleDict, LayerDict): its values
                items.extend(v.values())
            else:
                try:
                    items.extend(v)
                except TypeError:  # nothing to iterate: the test cannot hold
                    items.append(_MISSING)
        found = items
    return found


class Guard:
    """Where each guarded parameter sits in the forward's signature, and its test. A name the forward takes only
    through ``**kwargs`` (it hands them on to a layer that has the parameter) is looked for among the call's
    keywords; left out, it passes (the plan guards such a name only where the default it reaches passes). A name
    ``self.a.b`` is a setting of the layer (``self.config.is_decoder``), read from it on every call (``*`` in it:
    every item of a container, ``self.h.*.attn.training``); so is ``config.<name>`` for a "config false" test the
    call leaves to the config."""

    __slots__ = ("checks", "settings")

    def __init__(self, forward: Callable[..., Any], tests: tuple) -> None:
        signature = inspect.signature(forward)
        positional = [
            name
            for name, p in signature.parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        keywords = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        checks, settings = [], []
        for name, test in tests:
            accept, failed = TESTS[test]
            failed = f"guard: {name} {failed.format(name)}"
            if name.startswith("self."):
                settings.append((tuple(name.split(".")[1:]), accept, failed))
                continue
            param = signature.parameters.get(name)
            if param is None and keywords and test != "config false":
                checks.append((name, None, _REQUIRED if test in _PASSED_ONLY else _MISSING, accept, failed))
                continue
            if param is None or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"guard {name!r}: forward{signature} has no parameter of that name")
            position = positional.index(name) if name in positional else None
            if test == "config false":
                default = _FROM_CONFIG
            elif test in _PASSED_ONLY:
                default = _REQUIRED
            else:
                default = _MISSING if param.default is param.empty else param.default
            checks.append((name, position, default, accept, failed))
        self.checks, self.settings = tuple(checks), tuple(settings)

    def failure(self, args: tuple, kwargs: dict, layer: Any = None) -> str | None:
        """The reason this call of ``layer`` may not replay, or None when every test passes."""
        for path, accept, failed in self.settings:
            if not all(value is not _MISSING and accept(value) for value in _reached(layer, path)):
                return failed
        for name, position, default, accept, failed in self.checks:
            if name in kwargs:
                value = kwargs[name]
            elif position is not None and position < len(args):
                value = args[position]
            elif default is _REQUIRED:
                return failed
            elif default is not _MISSING:
                value = default
            else:
                continue  # not passed and no default: the call itself fails eagerly, or a keyword left out passes
            if default is _FROM_CONFIG and (value is None or value is _FROM_CONFIG):
                value = getattr(getattr(layer, "config", None), name, None)
            if not accept(value):
                return failed
        return None
