"""`[tool.autograph-cg]` in the nearest pyproject.toml; command-line flags win over it.

Loaded once per run. Unknown keys are warned about (with a suggestion), not silently dropped.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10
    import tomli as tomllib

from autograph_cg.rules.registry import BY_NAME, RULES

UNKNOWN_MODES = ("unknown", "block", "allow")
#: Kernels per call below which a graph costs more than it saves: the training break-even of one wrapped
#: layer on its own (elementwise ops, fit of `bench/plan_cost_gpu.py` on the H200; see docs/performance.md).
#: Here, not in the plan, because every run's settings name it, `lint`'s too, which never loads the planner.
DEFAULT_MIN_KERNELS = 10
KEYS = (
    "select", "ignore", "exclude", "unknown", "cache-dir", "warmup-steps", "min-kernels", "capturable", "not-capturable",
    "compile",
)


class ConfigError(Exception):
    """Bad configuration or selection; one line, exit 2."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()  # codes, prefixes ("AG1") or rule names; empty: every rule on by default
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # glob patterns on names or relative paths
    unknown: str = "unknown"  # what unresolved calls make a verdict: "unknown", "block" or "allow"
    cache_dir: str | None = None
    warmup_steps: int | None = None
    min_kernels: int | None = None  # the plan wraps a site only when one call launches at least this many kernels
    capturable: tuple[str, ...] = ()  # callables and layer classes outside the package, vouched for by the user
    not_capturable: tuple[str, ...] = ()  # ... and those known not to capture (names or fnmatch patterns)
    compile: tuple[str, ...] = ()  # rewrite: classes whose new wrappers compile their layer ("*": every site)
    source: str | None = None  # the pyproject.toml it came from
    warnings: tuple[str, ...] = field(default=())

    def keeps(self, code: str) -> bool:
        rule = RULES.get(code)
        name = rule.name if rule is not None else ""
        if self.select:
            selected = any(_matches(code, name, s) for s in self.select)
        else:
            selected = rule is None or rule.default
        return selected and not any(_matches(code, name, s) for s in self.ignore)

    def with_overrides(self, **overrides: Any) -> Config:
        given = {k: v for k, v in overrides.items() if v is not None and v != ()}
        merged = replace(self, **given)
        merged.validate()
        return merged

    def validate(self) -> None:
        for selector in self.select + self.ignore:
            if not _known_selector(selector):
                raise ConfigError(f"unknown rule selector {selector!r} (use a code like AG101, a prefix like AG1, or a rule name)")
        if self.unknown not in UNKNOWN_MODES:
            raise ConfigError(f"unknown = {self.unknown!r}: expected one of {', '.join(UNKNOWN_MODES)}")
        if self.min_kernels is not None and (isinstance(self.min_kernels, bool) or not isinstance(self.min_kernels, int) or self.min_kernels < 0):
            raise ConfigError(f"min-kernels = {self.min_kernels!r}: expected a whole number, 0 or more")


def _matches(code: str, name: str, selector: str) -> bool:
    return code.startswith(selector.upper()) or selector.lower() == name or selector.upper() == "ALL"


def _known_selector(selector: str) -> bool:
    upper = selector.upper()
    return upper == "ALL" or selector.lower() in BY_NAME or any(code.startswith(upper) for code in RULES)


def find_pyproject(start: Path) -> Path | None:
    current = start.absolute()
    if current.is_file():
        current = current.parent
    for folder in (current, *current.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(paths: list[str], explicit: str | None = None) -> Config:
    """The configuration for a run over `paths`: the explicit file, else the nearest pyproject.toml."""
    source = Path(explicit) if explicit else find_pyproject(Path(paths[0]) if paths else Path.cwd())
    if source is None:
        return Config()
    try:
        with open(source, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{source}: cannot read configuration: {exc}") from None
    section = data.get("tool", {}).get("autograph-cg", {})
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: [tool.autograph-cg] must be a table")
    warnings = []
    for key in section:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            warnings.append(f"{source}: unknown key {key!r} in [tool.autograph-cg]{hint}")
    try:
        config = Config(
            select=_strings(section.get("select", ()), "select", source),
            ignore=_strings(section.get("ignore", ()), "ignore", source),
            exclude=_strings(section.get("exclude", ()), "exclude", source),
            unknown=str(section.get("unknown", "unknown")),
            cache_dir=section.get("cache-dir"),
            warmup_steps=section.get("warmup-steps"),
            min_kernels=section.get("min-kernels"),
            capturable=_strings(section.get("capturable", ()), "capturable", source),
            not_capturable=_strings(section.get("not-capturable", ()), "not-capturable", source),
            compile=_compile(section.get("compile", False)),
            source=str(source),
            warnings=tuple(warnings),
        )
        config.validate()
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return config


def _compile(value: Any) -> tuple[str, ...]:
    """`compile = true` (every site), `false`, or class name patterns."""
    if isinstance(value, bool):
        return ("*",) if value else ()
    try:
        return _strings(value, "compile", Path())
    except ConfigError:
        raise ConfigError("compile must be true, false, or a list of class name patterns") from None


def _strings(value: Any, key: str, source: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{key} must be a string or a list of strings")
