"""Loading `module:factory` targets: the one place that imports and runs user code on purpose."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence


class TargetError(Exception):
    """The target cannot be imported, called or understood: a usage error (exit 2)."""


@dataclass(frozen=True)
class Subject:
    """What a factory returns: the model, its positional inputs, and the loss (None: a default)."""

    model: Any
    inputs: tuple
    loss_fn: Callable[..., Any] | None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def add_paths(paths: Sequence[str]) -> None:
    """The working directory and each `--path` go first on sys.path, as `python -c` would see them."""
    for path in [os.getcwd(), *reversed(paths)]:
        path = os.path.abspath(path)
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)


def resolve(spec: str, what: str = "factory") -> Callable[..., Any]:
    """`pkg.module:name` (or `:outer.inner`) to the callable it names."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise TargetError(f"{what} must be written MODULE:NAME, got {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # user code: any error while importing it is the user's
        raise TargetError(f"cannot import module {module_name!r}: {_first_line(exc)}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise TargetError(f"{spec} is not callable")
    return obj


def build(factory: Callable[..., Any], spec: str, loss_fn: Callable[..., Any] | None = None) -> Subject:
    """Call the factory and accept `(model, inputs)`, `(model, inputs, loss_fn)` or a dict with those keys."""
    try:
        made = factory()
    except Exception as exc:
        raise TargetError(f"{spec} raised {_first_line(exc)}") from None
    if isinstance(made, dict):
        if "model" not in made or "inputs" not in made:
            raise TargetError(f"{spec} returned a dict without 'model' and 'inputs'")
        model, inputs, own_loss = made["model"], made["inputs"], made.get("loss_fn")
    elif isinstance(made, (tuple, list)) and len(made) in (2, 3):
        model, inputs, own_loss = made[0], made[1], made[2] if len(made) == 3 else None
    else:
        raise TargetError(f"{spec} must return (model, inputs), (model, inputs, loss_fn) or a dict of those")
    if own_loss is not None and not callable(own_loss):
        raise TargetError(f"the loss function {spec} returned is not callable")
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    return Subject(model, inputs, loss_fn or own_loss)
