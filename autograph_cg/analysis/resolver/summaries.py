"""The summary language: expressions as tagged tuples (cheap to build, hash and pickle), and scope summaries.

An `Expr` is a tuple whose first item is its tag:

    ("c", value)                 a host constant (bool, None, int, float, short str)
    ("h",) / ("t",)              a host value / a tensor
    ("n", name)                  a name, looked up at solve time: local, enclosing function, module, builtin; "x#1"
                                 is a version of local x (`summarize._versioned`)
    ("arg", name)                what the callers pass to parameter `name` (and its default): the version of a
                                 rebound parameter before the function rebinds it
    ("g", qualname)              a qualified reference (a local `import`)
    ("self",)                    the instance a method runs on
    ("s", attr)                  `self.attr`
    ("a", base, attr)            an attribute of another expression
    ("sup", attr)                `super().attr`
    ("call", callee, args, kw)   args: Exprs, or ("*", Expr) for `*x`; kw: (name, Expr), name None for `**x`
    ("i", base[, key])           an item of a container (iteration, unpacking; a subscript gives its key)
    ("key", base, key)           what a dict holds under a literal key (`cfg["act_layer"]`)
    ("u", (e, ...))              any of these (ternaries, `or`, both arms of an `if`)
    ("l", (e, ...))              a list/tuple/set literal; an entry ("*", e) stands for the items of e
    ("d", ((key, e), ...))       a dict literal; key a str, or None when unknown, or "**" for a merged dict, or ("=", e)
                                 for a key solved with the value (the key of a table a store into a part of it fills)
    ("fn", name)                 a function defined in this module (nested ones too: "outer.<locals>.inner"; a lambda,
                                 named by `lambda_scope`)
    ("not", e)                   a negation (for flags)
    ("if", cond, negated, e)     e, where it flows only when the `if` test cond holds (or fails, negated)
    ("named", name, e)           e, set as the attribute that `name` names (`setattr(self, name, e)`)
    ("in", scope, e)             e, read in the closure `scope` (what it stores into a name of the function it is in)
    ("ann", e)                   an instance of the package class annotation e names (`config: LlamaConfig` in a class body)
    ("?", reason)                unknown, with why
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Expr = tuple[Any, ...]

HOST: Expr = ("h",)
TENSOR: Expr = ("t",)
SELF: Expr = ("self",)


def unknown(reason: str) -> Expr:
    return ("?", reason)


#: The name of the module-level scope in a module's summaries.
MODULE_SCOPE = "<module>"
#: What a lambda's scope name holds: no identifier does, so it never meets a name the code binds.
LAMBDA = "<lambda:"


def lambda_scope(outer: str, line: int, col: int) -> str:
    """The scope of the lambda written at (line, col) inside scope `outer`: its place tells lambdas apart."""
    own = f"{LAMBDA}{line}:{col}>"
    return own if outer == MODULE_SCOPE else f"{outer}.<locals>.{own}"
#: The attribute under which a layer keeps sublayers added under computed names (`add_module(str(i), m)`).
ITEMS = "[items]"
#: The attribute under which an object keeps what `setattr(self, name, value)` sets under computed names.
DYNAMIC = "[dynamic]"


@dataclass(frozen=True)
class ScopeSummary:
    """One function, method or module body: what flows where, order ignored (every assignment counts), but for the
    versions of the names a module-level function rebinds among its own statements (`summarize._versioned`)."""

    name: str  # within its module: "func", "Class.method", "func.<locals>.inner", or MODULE_SCOPE
    parent: str | None = None  # the enclosing function of a closure: its locals are visible here
    params: tuple[str, ...] = ()  # positional parameters in order (self included), then keyword-only ones
    positional: int = 0  # how many of `params` can be given by position
    defaults: dict[str, Expr] = field(default_factory=dict)
    annotations: dict[str, Expr] = field(default_factory=dict)  # parameters annotated with a dotted name
    vararg: str | None = None
    kwarg: str | None = None
    method: str = ""  # "", "method", "static" or "class": how the first parameter is bound
    locals: dict[str, tuple[Expr, ...]] = field(default_factory=dict)
    returns: tuple[Expr, ...] = ()
    self_attrs: dict[str, tuple[Expr, ...]] = field(default_factory=dict)  # `self.attr = ...` and its kin
    global_writes: dict[str, tuple[Expr, ...]] = field(default_factory=dict)  # names a `global` statement declares
    calls: tuple[Expr, ...] = ()  # calls that may reach a package class or function: parameter binding

    @property
    def implicit(self) -> int:
        """Leading parameters a call binds without an argument: `self` or `cls`."""
        return 1 if self.method in ("method", "class") else 0

    @property
    def self_name(self) -> str | None:
        return self.params[0] if self.method == "method" and self.params else None



def reads_self(expr: tuple, summary: ScopeSummary) -> bool:
    """Whether `expr` (of `summary`'s scope) may depend on which class `self` is: it reads self, super(), a local
    (which may have been computed from self) or a required parameter without annotation (what no call passes may be
    told by the class's declarations: `Solver._declared`). Parts that are no expression (argument lists, keyword pairs)
    are read through; a keyword named like a tag counts as one, which only errs towards reading self."""
    if not expr:
        return False
    head = expr[0]
    if head in ("self", "s", "sup"):
        return True
    if head == "n" and len(expr) == 2 and isinstance(expr[1], str):
        name = expr[1]
        return name in summary.locals or name == summary.self_name or (
            name in summary.params and name not in summary.defaults and name not in summary.annotations
        )
    return any(isinstance(part, tuple) and reads_self(part, summary) for part in expr)


def returns_closures(summary: ScopeSummary) -> bool:
    """Whether every `return` of a function gives a closure it makes (a nested `def` or lambda of its own): each call's
    closure is then its own, made in that call's run."""
    made = [summary.locals.get(e[1], (e,)) if e[0] == "n" else (e,) for e in summary.returns]
    return bool(made) and all(len(m) == 1 and m[0][0] == "fn" for m in made)
