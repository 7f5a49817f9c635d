"""Decorators that fill a forward's left-out keywords from the layer's config: read from their code, and the guard
the plan writes where one wraps a forward ("config false")."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from autograph_cg.analysis.config_fill import fills_from_config
from autograph_cg.api import Options, analyze

#: The shape of a model library's decorator: names from a list, each the value passed, else the config's.
FROM_CONFIG = """
def config_defaults(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        for name in ["use_cache", "output_router_logits"]:
            index = None
            if name in func.__code__.co_varnames:
                index = func.__code__.co_varnames.index(name) - 1
            if index is not None and len(args) > index and args[index] is not None:
                value = args[index]
            elif kwargs.get(name) is not None:
                value = kwargs[name]
            else:
                value = getattr(self.config, name, None)
            if value is not None:
                if self.training and value:
                    value = False
                if index is not None and len(args) > index:
                    args = list(args)
                    args[index] = value
                    args = tuple(args)
                else:
                    kwargs[name] = value
        causal = kwargs.get("is_causal", getattr(self.config, "is_causal", None))
        if causal is not None:
            kwargs["is_causal"] = causal
        return func(self, *args, **kwargs)

    return wrapper
"""


def _decorator(source: str) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_a_decorator_filling_each_name_from_the_config_of_that_name_is_read_as_such() -> None:
    assert fills_from_config(_decorator(FROM_CONFIG))


@pytest.mark.parametrize(
    "change",
    [
        ('value = getattr(self.config, name, None)', 'value = getattr(self.config, "use_cache", None)'),  # another name
        ('value = getattr(self.config, name, None)', 'value = getattr(self.settings, name, None)'),  # not the config
        ('value = False', 'value = True'),  # a true constant
        ('value = kwargs[name]', 'value = kwargs["other"]'),  # another keyword's value
        ('kwargs["is_causal"] = causal', 'kwargs["is_causal"] = causal\n        fill(kwargs)'),  # handed on
        ('kwargs["is_causal"] = causal', 'kwargs["is_causal"] = causal\n        kwargs.pop("use_cache", None)'),
        ('kwargs["is_causal"] = causal', 'kwargs["is_causal"] = causal\n        kwargs.update(use_cache=True)'),
        ('kwargs["is_causal"] = causal', 'kwargs["is_causal"] = causal\n        del kwargs["use_cache"]'),
        ('kwargs["is_causal"] = causal', 'kwargs["is_causal"] = causal\n        kwargs = {"use_cache": True}'),
        ('index = func.__code__.co_varnames.index(name) - 1', 'index = 1'),  # a position not tied to the name
        ('return func(', 'self.later = lambda: kwargs\n        return func('),  # a closure over the keywords
    ],
)
def test_a_decorator_that_may_fill_from_anywhere_else_is_not(change: tuple[str, str]) -> None:
    old, new = change
    assert old in FROM_CONFIG
    assert not fills_from_config(_decorator(FROM_CONFIG.replace(old, new, 1)))


PACKAGE = """import functools

import torch
from torch.nn import Module, Linear

FILLER


class Cache:
    def update(self, q):
        return q


class Attention(Module):
    def __init__(self):
        super().__init__()
        self.q = Linear(4, 4)

    def forward(self, x, past_key_values=None):
        q = self.q(x)
        if past_key_values is not None:
            q = past_key_values.update(q)
        return q


class Model(Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.attn = Attention()

    @config_defaults
    def forward(self, x, past_key_values=None, use_cache=None):
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class OnByDefault(Model):
    @config_defaults
    def forward(self, x, past_key_values=None, use_cache=True):
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        return self.attn(x, past_key_values=past_key_values)


class Head(Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)

    def forward(self, x, use_cache=None):
        return self.model(x, use_cache=use_cache)
"""


def _guards(tmp_path: Path, filler: str) -> dict[str, tuple]:
    return _planned_guards(tmp_path / "pkg", PACKAGE.replace("FILLER", textwrap.dedent(filler)))


def _planned_guards(pkg: Path, source: str) -> dict[str, tuple]:
    """The guard of each class of a one-module package holding `source`, by class name."""
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m.py").write_text(source)
    plan = analyze([str(pkg)], Options(use_cache=False, jobs=1)).plan
    return {q.removeprefix(f"{pkg.name}.m."): v.guard for q, v in plan.verdicts.items()}


def test_a_forward_so_decorated_is_guarded_by_its_config_where_its_own_default_is_false(tmp_path: Path) -> None:
    guards = _guards(tmp_path, FROM_CONFIG)
    assert guards["Model"] == (("past_key_values", "is None"), ("use_cache", "config false"))
    # left out, the body gets True where the config holds None: only a false value passed counts
    assert guards["OnByDefault"] == (("past_key_values", "is None"), ("use_cache", "passed false"))
    # the caller's wrapper would read the caller's config, not the model's
    assert guards["Head"] == (("use_cache", "passed false"),)


def test_a_decorator_filling_a_true_value_keeps_the_strict_guard(tmp_path: Path) -> None:
    guards = _guards(tmp_path, FROM_CONFIG.replace("value = False", "value = True"))
    assert guards["Model"] == (("past_key_values", "is None"), ("use_cache", "passed false"))


#: Forwards that fill the flag themselves, first thing, from the layer's config (no decorator).
BODY = """import torch
from torch.nn import Module, Linear


class Cache:
    def __init__(self):
        self.seen = []

    def update(self, q):
        self.seen.append(q)
        return q


class Model(Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.q = Linear(4, 4)

    def forward(self, x, past_key_values=None, use_cache=None):
        use_cache = FILL
        if use_cache and past_key_values is None:
            past_key_values = Cache()
        q = self.q(x)
        if use_cache:
            q = past_key_values.update(q)
        return q


class Head(Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)

    def forward(self, x, use_cache=None):
        return self.model(x, use_cache=use_cache)
"""


@pytest.mark.parametrize(
    ("fill", "want"),
    [
        ("use_cache if use_cache is not None else self.config.use_cache", "config false"),
        ("self.config.use_cache if use_cache is None else use_cache", "config false"),
        # another setting than the argument's own name, or another object's config: only a value passed counts
        ("use_cache if use_cache is not None else self.config.cache_on", "passed false"),
        ("use_cache if use_cache is not None else self.other.use_cache", "passed false"),
        ("use_cache if use_cache else self.config.use_cache", None),
    ],
)
def test_a_forward_filling_its_flag_from_its_config_is_guarded_by_it(tmp_path: Path, fill: str, want: str | None) -> None:
    guards = _planned_guards(tmp_path / "pkg", BODY.replace("FILL", fill))
    assert guards["Model"] == ((("use_cache", want),) if want else ())
    if want:  # the caller's wrapper would read the caller's config, not the model's
        assert guards["Head"] == (("use_cache", "passed false"),)


def test_a_filled_flag_in_a_branch_or_with_a_true_default_keeps_the_strict_guard(tmp_path: Path) -> None:
    source = BODY.replace("FILL", "use_cache if use_cache is not None else self.config.use_cache")
    shapes = [
        source.replace("use_cache=None):\n        use_cache =", "use_cache=True):\n        use_cache ="),
        source.replace("        use_cache = use_cache if", "        if x is not None:\n            use_cache = use_cache if"),
    ]
    for i, shape in enumerate(shapes):
        guard = _planned_guards(tmp_path / f"pkg{i}", shape)["Model"]
        assert ("use_cache", "config false") not in guard, (i, guard)
