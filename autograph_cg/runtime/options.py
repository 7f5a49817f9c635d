"""A wrapped layer's options: what ``CUDAGraphedLayer`` takes and what copies and pickles of it carry."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from .guards import TESTS


@dataclass(frozen=True)
class Settings:
    """A wrapped layer's options: what copies and pickles of it carry."""

    num_warmup_steps: int = 3
    max_graphs: int = 32
    backend: str = "auto"
    name: str | None = None
    fuse: bool = True
    guard: tuple = ()  # ((parameter, test), ...): the graph serves only calls that pass every test
    verify: bool = True  # compare the first replay of every new graph with an eager run
    compile: Any = False  # False, True, or torch.compile's keyword arguments as a dict

    def __post_init__(self) -> None:
        if self.num_warmup_steps < 0:
            raise ValueError("num_warmup_steps must be >= 0")
        if self.max_graphs < 1:
            raise ValueError("max_graphs must be >= 1")
        for param, test in self.guard:
            if test not in TESTS:
                raise ValueError(f"guard {param!r}: unknown test {test!r} (one of {', '.join(TESTS)})")


def settings_from(num_warmup_steps: int, options: Mapping[str, Any]) -> Settings:
    """``CUDAGraphedLayer``'s arguments as Settings, with one clear error for a wrong one."""
    options = dict(options)
    guard = options.pop("guard", None) or {}
    if not isinstance(guard, Mapping):
        raise TypeError("guard must be a dict from forward parameter names to tests")
    compile_ = options.pop("compile", False)
    known = {f for f in Settings.__dataclass_fields__ if f not in ("num_warmup_steps", "guard", "compile")}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"CUDAGraphedLayer got unexpected keyword argument(s): {', '.join(unknown)}")
    return replace(
        Settings(),
        num_warmup_steps=num_warmup_steps,
        guard=tuple(sorted(guard.items())),
        compile=compile_,
        **options,
    )
