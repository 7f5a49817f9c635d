"""Guards: tests on a forward's own arguments that keep a hazard's branch out of every graph.

`if past_key_values is not None: past_key_values.update(k, v)` mutates the caller's cache: a replay would not.
In training the argument is `None` and the branch never runs. A layer whose blocking hazards all sit behind such
tests is capturable *under a guard*: the wrapper checks the tests on every call (host values it binds anyway) and
runs eagerly when one fails. A guard is read from the tests the code makes, never from a name.

A test is `(parameter, kind)`, kind one of `TESTS`; a guard (`Guard`) is a sorted tuple of tests that must all
hold. A hazard is kept out by any one of its *alternatives* (`if a and b:` is kept out by a test failing `a` or
one failing `b`). Through a call, a callee's tests become the caller's when the caller passes its own parameter
unchanged, hold or fail when it passes a constant or leaves the default, and are lost otherwise. A caller that
hands its own `**kwargs` on untouched passes the callee every name it does not take itself: the callee's test on
such a name becomes the caller's test on the keyword of that name (absent, it holds: the test is carried only where
the callee's default passes it), which the runtime checks in the call's keywords.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable, Sequence

from autograph_cg.analysis.facts import Condition, FunctionFacts
from autograph_cg.analysis.resolver.summaries import Expr, ScopeSummary
from autograph_cg.analysis.verdicts import Guard, Test

#: What the runtime can test of one argument, bound to the wrapped forward's signature (defaults included);
#: "passed false" needs the call to pass a false value other than None (a decorated forward may fill what is left
#: out: its default says nothing of what the body gets); "config false" is "passed false" or, where the call leaves
#: it out or passes None, the wrapped layer's `config.<name>` false and not None (a decorator whose code fills it
#: from there, `config_fill`, on a forward whose own default is false).
TESTS = ("is None", "is not None", "falsy", "truthy", "passed false", "config false")
#: Pairs of tests no value passes both of (or that no one test says: "is None" and "config false").
_CONFLICTS = frozenset(
    {("is None", "is not None"), ("is None", "truthy"), ("falsy", "truthy"), ("is None", "passed false"), ("passed false", "truthy"),
     ("is None", "config false"), ("config false", "truthy")}
)  # fmt: skip
#: Tests of a flag a decorator may fill where the call leaves it out: the forward's default says nothing.
_FILLED = ("passed false", "config false")
_MAX_ALTERNATIVES = 8
_MAX_TESTS = 4
#: What a call passes for a parameter, in `CallRef.passes`: anything that is neither the caller's own
#: parameter nor a constant; `*xs` at a position.
OTHER: Expr = ("?",)
SPREAD: Expr = ("*",)
#: `**kwargs` of the caller's own, handed on untouched: ("**", the caller's named parameters).
KWARGS = "**"
#: What a call passes for a name a callee takes only through its own `**kwargs`, when the caller leaves it out.
ABSENT: Expr = ("-",)
#: A binder: the caller's guard for a callee's (True: it holds for this call, None: the call does not carry it).
Binder = Callable[[Guard], "Guard | bool | None"]


def same(guard: Guard) -> Guard:
    """The binder of a function's own result: its parameters are the guard's."""
    return guard


def keep_out(function: FunctionFacts, conditions: Iterable[int]) -> tuple[Guard, ...]:
    """The alternatives that keep code under `conditions` (indexes into the function's) from running: any one
    condition failing does."""
    return keep_out_of(function.conditions, conditions)


def keep_out_of(recorded: Sequence[Condition], conditions: Iterable[int]) -> tuple[Guard, ...]:
    """`keep_out` over the conditions a walk has recorded so far. A test of a parameter that code before it rebinds
    under tests of its own (`if use_cache and past is None: past = Cache()`) holds of the caller's value only where
    that rebinding is kept out too (`Condition.unless`)."""
    found: list[Guard] = []
    for index in conditions:
        condition = recorded[index]
        if condition.arguments or condition.settings or condition.fixed:  # else nothing it tests can be forced
            found.extend(_force(condition.expr, condition.negated, condition))
    return few(found)


def run_under(recorded: Sequence[Condition], conditions: Iterable[int]) -> tuple[Guard, ...]:
    """The alternatives under which code under `conditions` runs: each condition holding."""
    return few(_every([_force(recorded[i].expr, not recorded[i].negated, recorded[i]) for i in conditions]))


def both(first: tuple[Guard, ...], second: tuple[Guard, ...]) -> tuple[Guard, ...]:
    """Alternatives that keep out what `first` keeps out and what `second` does: one of each, together."""
    return few(g for a in first for b in second if (g := _join(a, b)) is not None)


def is_setting(name: str) -> bool:
    """Whether a test's name is an attribute chain of the layer itself (`self.config.is_decoder`), not an argument."""
    return name.startswith("self.")


def setting_expr(name: str) -> Expr | None:
    """The summarizer's form of a setting (`self.config.is_decoder`: ("a", ("s", "config"), "is_decoder")), the
    inverse of `setting_name`; None for a name over a container's items (`self.h.*.attn.training`)."""
    parts = name.split(".")[1:]
    if not parts or "*" in parts:
        return None
    expr: Expr = ("s", parts[0])
    for part in parts[1:]:
        expr = ("a", expr, part)
    return expr


def setting_name(expr: Expr) -> str | None:
    """`self.config.is_decoder` for ("a", ("s", "config"), "is_decoder"); None for anything but such a chain."""
    parts: list[str] = []
    while expr[0] == "a" and isinstance(expr[2], str):
        parts.append(expr[2])
        expr = expr[1]
    if expr[0] != "s":
        return None
    return ".".join(["self", expr[1], *reversed(parts)])


def _force(expr: Expr, want: bool, condition: Condition) -> list[Guard]:
    """Alternatives under which the test `expr` evaluates to `want`."""
    tag = expr[0]
    if tag == "n":
        return _name(expr[1], "truthy" if want else "falsy", lambda c: bool(c) == want, condition)
    if tag == "is":  # `x is None` (negated: `is not`)
        kind = "is None" if want != expr[2] else "is not None"
        if expr[1][0] == "n":
            return _name(expr[1][1], kind, lambda c: (c is None) == (kind == "is None"), condition)
        setting = setting_name(expr[1])
        return [((setting, kind),)] if setting in condition.settings else []
    if tag == "not":
        return _force(expr[1], not want, condition)
    if tag in ("and", "or"):
        parts = [_force(part, want, condition) for part in expr[1]]
        if (tag == "and") != want:  # one part decides: any of its alternatives
            return [g for part in parts for g in part]
        return _every(parts)  # every part must
    setting = setting_name(expr)
    return [((setting, "truthy" if want else "falsy"),)] if setting in condition.settings else []


def _name(name: str, kind: str, constant: Callable[[object], bool], condition: Condition) -> list[Guard]:
    """Alternatives under which a name the test reads passes `kind`: the caller's value does (where its rebinding is
    kept out), or a constant it was rebound to does (where that rebinding ran)."""
    found: list[Guard] = []
    if name in condition.arguments and (kind in ("is None", "is not None") or name not in condition.tensors):
        unless = next((u for n, u in condition.unless if n == name), None)
        found.extend(both((((name, kind),),), unless) if unless else [((name, kind),)])
    for fixed, value, ran in condition.fixed:
        if fixed == name and constant(value):
            found.extend(ran)
    return found


def _every(parts: list[list[Guard]]) -> list[Guard]:
    """One alternative of each part, together."""
    combined: list[Guard] = [()]
    for part in parts:
        combined = [g for g in (_join(a, b) for a in combined for b in part) if g is not None][:_MAX_ALTERNATIVES]
        if not combined:
            return []
    return combined


def _join(a: Guard, b: Guard) -> Guard | None:
    if not consistent(set(a) | set(b)):
        return None
    tests = normal(set(a) | set(b))
    return tests if len(tests) <= _MAX_TESTS else None


#: Two tests of one name that one test says (the wrapper takes one per name): None is false; a false value passed
#: is not None and false, and so stricter than both together where a default would pass them (sound: it fails more).
_ONE = {
    frozenset({"is None", "falsy"}): "is None",
    frozenset({"is not None", "truthy"}): "truthy",
    frozenset({"is not None", "falsy"}): "passed false",
    frozenset({"is not None", "passed false"}): "passed false",
    frozenset({"falsy", "passed false"}): "passed false",
    frozenset({"is not None", "config false"}): "passed false",
    frozenset({"passed false", "config false"}): "passed false",
    frozenset({"falsy", "config false"}): "config false",
}


def normal(tests: Iterable[Test]) -> Guard:
    """A consistent set of tests as a guard: one test per name, sorted."""
    by_name: dict[str, set[str]] = {}
    for name, kind in tests:
        by_name.setdefault(name, set()).add(kind)
    out = []
    for name, kinds in by_name.items():
        while len(kinds) > 1:
            first, second = sorted(kinds)[:2]
            kinds = (kinds - {first, second}) | {_ONE[frozenset({first, second})]}
        out.append((name, kinds.pop()))
    return tuple(sorted(out))


def few(alternatives: Iterable[Guard]) -> tuple[Guard, ...]:
    """Distinct alternatives, the smallest first, at most a handful."""
    return tuple(sorted(set(alternatives), key=lambda g: (len(g), g))[:_MAX_ALTERNATIVES])


def consistent(tests: Iterable[Test]) -> bool:
    """Whether one call could pass every test (none asks `x is None` and `x is not None`, say)."""
    by_name: dict[str, set[str]] = {}
    for name, kind in tests:
        by_name.setdefault(name, set()).add(kind)
    return not any((a, b) in _CONFLICTS or (b, a) in _CONFLICTS for kinds in by_name.values() for a in kinds for b in kinds)


def holds(kind: str, value: object) -> bool:
    """Whether a test passes for a known value."""
    if kind == "is None":
        return value is None
    if kind == "is not None":
        return value is not None
    if kind in _FILLED:  # None: what a decorator fills decides, not known here
        return value is not None and not value
    return bool(value) == (kind == "truthy")


def passed(passes: tuple[tuple[int | str | None, Expr], ...], summary: ScopeSummary, name: str) -> Expr:
    """What a call passes for the callee's parameter `name` (or the keyword of that name its `**kwargs` takes on):
    the caller's parameter ("n"), the keyword of that name in the caller's own `**kwargs` ("k"), a constant ("c",
    its default when left out), `ABSENT` for a keyword left out, or `OTHER`."""
    named = name in summary.params
    if not named and summary.kwarg is None:
        return OTHER
    index = summary.params.index(name) if named else len(summary.params)
    position = index - summary.implicit if named and index < summary.positional else -1  # -1: keyword-only
    spread = False
    for key, value in passes:
        if key == name:
            return value
        if isinstance(key, int) and position >= 0 and (key == position or value == SPREAD and key < position):
            return OTHER if value == SPREAD else value
        if key is None:  # `**x`: x may hold it
            if value[0] != KWARGS:
                return OTHER
            spread |= name not in value[1]  # the caller's own `**kwargs` holds only names it does not take
    if spread:
        return ("k", name)
    if not named:
        return ABSENT
    default = summary.defaults.get(name)
    return default if default is not None and default[0] == "c" else OTHER


def bind(guard: Guard, passes: tuple[tuple[int | str | None, Expr], ...], summary: ScopeSummary, owner: str | None = None) -> Guard | bool | None:
    """A callee's guard as the caller's: True when it holds for this call whatever the caller is given, None when
    some test is not carried (the caller passes something else, or a constant that fails it). A test reaching the
    callee's parameter through the caller's `**kwargs` is carried only when the callee's default passes it, for the
    keyword left out gets that default. A test of the callee's own settings is carried where the caller can name
    the callee's `self`: `owner` ("self" for its own methods, "self.bert" for a sublayer it holds)."""
    out: set[Test] = set()
    unless: list[tuple[Guard, ...]] = []
    for name, kind in guard:
        if is_setting(name):
            if owner is None:
                return None
            out.add((owner + name[len("self") :], kind))
            continue
        if kind == "config false" and owner != "self":
            kind = "passed false"  # the caller's wrapper would read its own config, not this layer's
        value = passed(passes, summary, name)
        if value == ABSENT:
            continue  # the test was carried up to this callee's keywords only where absence passes it
        if value[0] == "k" and name in summary.params and not _holds_at_default(summary, name, kind):
            return None
        if not _carry(value, kind, out, unless):
            return None
    for alternatives in unless:
        pick = next((a for a in alternatives if consistent(out | set(a))), None)
        if pick is None:
            return None
        out |= set(pick)
    if not consistent(out):  # two of the callee's parameters given one of the caller's
        return None
    return normal(out) if out else True


def _carry(value: Expr, kind: str, out: set[Test], unless: list[tuple[Guard, ...]]) -> bool:
    """Add to `out` what makes test `kind` hold of what a call passes (and to `unless` what keeps a rebinding of
    it out); False when nothing the caller can test does."""
    if value[0] == "either":  # `past if not training else None`: the test must hold of both
        return all(_carry(arm, kind, out, unless) for arm in value[1])
    if value[0] in ("n", "k"):
        out.add((value[1], kind))
        if len(value) > 2:  # ("n", p, alternatives): the caller's parameter where its rebinding is kept out
            unless.append(value[2])
        return True
    return value[0] == "c" and holds(kind, value[1])


def _holds_at_default(summary: ScopeSummary, name: str, kind: str) -> bool:
    default = summary.defaults.get(name)
    return kind not in _FILLED and default is not None and default[0] == "c" and holds(kind, default[1])


def strict(alternatives: tuple[Guard, ...], from_config: Callable[[str], bool] = lambda name: False) -> tuple[Guard, ...]:
    """The alternatives of a decorated function's hazards, as its callers must meet them: the decorator may set a
    flag the caller leaves out (or passes as None), so a test that it is false asks for a false value passed, or the
    layer's config false where `from_config(name)` says that is all the decorator fills it with."""

    def met(name: str, kind: str) -> str:
        if kind != "falsy" or is_setting(name):
            return kind
        return "config false" if from_config(name) else "passed false"

    return few(normal((n, met(n, k)) for n, k in g) for g in alternatives)


def choose(alternatives: Iterable[tuple[Guard, ...]], at_default: Callable[[str, str], bool]) -> tuple[Guard, tuple[Guard, ...]] | None:
    """One guard keeping every hazard out: per hazard one of its alternatives, preferring tests already chosen, then
    those that pass at the defaults (`at_default(name, kind)`: the call nobody passes anything to, as in training,
    on a layer built with its default settings), then the fewest. Returns the guard and the alternative chosen for
    each hazard, or None when no consistent choice is found."""
    chosen: set[Test] = set()
    picks: list[Guard] = []

    def rank(guard: Guard) -> tuple[int, int, int, Guard]:
        fresh = [t for t in guard if t not in chosen]
        passes = all(at_default(n, k) for n, k in guard)
        return (len(fresh) > 0, not passes, len(fresh), guard)

    for options in alternatives:
        usable = [g for g in options if consistent(chosen | set(g))]
        if not usable:
            return None
        pick = min(usable, key=rank)
        chosen |= set(pick)
        picks.append(pick)
    return normal(chosen), tuple(picks)



def written_guard(wrapper: ast.Call) -> Guard | None:
    """The guard a wrapper call in the source passes (`guard={"past_key_values": "is None"}`): () without one,
    None when it is not a literal of known tests (written by hand, left as it is)."""
    found = next((k.value for k in wrapper.keywords if k.arg == "guard"), None)
    return () if found is None else literal_guard(found)


def literal_guard(node: ast.expr) -> Guard | None:
    """A dict literal from parameter names to tests, as a guard; None for anything else."""
    if not isinstance(node, ast.Dict):
        return None
    tests: list[Test] = []
    for key, value in zip(node.keys, node.values):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(value, ast.Constant) and value.value in TESTS):
            return None
        tests.append((key.value, value.value))
    return tuple(sorted(tests)) if len({n for n, _ in tests}) == len(tests) else None


def literal(guard: Guard) -> str:
    """The guard as the wrapper's argument is written: `{"past_key_values": "is None"}` (the runtime's interface)."""
    return "{" + ", ".join(f'"{name}": "{kind}"' for name, kind in guard) + "}"
