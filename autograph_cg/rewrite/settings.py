"""What a new wrapper is given besides the layer (`rewrite --warmup-steps`, `--compile`): checked when the command
starts, before any analysis; without libcst, which only writing the wrapper needs (`rewrite/shape.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

# Runtime constructor keywords that rewrite may pass through, with the type of their literal value.
SETTINGS: dict[str, type] = {"num_warmup_steps": int, "compile": bool}


@dataclass(frozen=True, slots=True)
class WrapSettings:
    """Runtime settings written into new wrappers; `None` leaves the runtime's default. `compile`: `fnmatch`
    patterns of the classes whose wrappers compile their layer before capture (`*` for every site)."""

    num_warmup_steps: int | None = None
    compile: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        steps = self.num_warmup_steps
        if steps is not None and (type(steps) is not int or steps < 0):
            raise ValueError(f"warmup-steps (num_warmup_steps) must be a whole number >= 0, not {steps!r}")
        if not isinstance(self.compile, tuple) or not all(isinstance(p, str) for p in self.compile):
            raise ValueError(f"compile must be true or a list of class name patterns, not {self.compile!r}")

    def keywords(self, wrapped_class: str = "") -> tuple[tuple[str, int | bool], ...]:
        """The keywords of a new wrapper of `wrapped_class` (a union `A | B` compiles if each does)."""
        out: list[tuple[str, int | bool]] = []
        if self.num_warmup_steps is not None:
            out.append(("num_warmup_steps", self.num_warmup_steps))
        classes = [c.strip() for c in wrapped_class.split("|") if c.strip()]
        if self.compile and classes and all(any(fnmatchcase(c, p) for p in self.compile) for c in classes):
            out.append(("compile", True))
        return tuple(out)
