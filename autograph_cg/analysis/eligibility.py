"""Across the package: which layer classes can be captured whole, and why not.

A class is eligible when its forward, every method and package function it calls, and every sublayer it
invokes are free of blocking findings. Calls are resolved through imports and re-exports; a cycle counts as
eligible until something on it says otherwise.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Hashable, Iterable

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis import guards
from autograph_cg.analysis import refresh as refreshes
from autograph_cg.analysis.guards import Binder, same
from autograph_cg.analysis.ledger import Ledger
from autograph_cg.analysis.facts import CallRef, ClassFacts, FunctionFacts, ModuleFacts
from autograph_cg.analysis.framework_layers import Layer
from autograph_cg.analysis.failures import INTERNAL, describe, message
from autograph_cg.analysis.resolver.sites import SITE_DEPTH, Ctx, site_depth
from autograph_cg.analysis.resolver.solver import Solver
from autograph_cg.analysis.resolver.summaries import ITEMS, reads_self
from autograph_cg.analysis.resolver.values import Value, order_key
from autograph_cg.analysis.verdicts import Guard, Guarded, Reason, Status, Verdict
from autograph_cg.findings import Finding, SourceError, Span
from autograph_cg.rules.base import Rule
from autograph_cg.rules.dispatch import DISPATCH
from autograph_cg.rules.registry import RULES

MAX_REASONS = 8
_AUTOGRAD_BASES = frozenset({"PyLayer", "Function", "InplaceFunction"})
#: Methods every layer has (framework ones): calling them on a sublayer runs no forward code of the package.
_LAYER_METHODS = frozenset({"parameters", "named_parameters", "buffers", "children", "modules", "state_dict", "train", "eval", "to", "cuda", "float", "half", "bfloat16", "zero_grad", "requires_grad_", "extra_repr"})
_STATUS_ORDER = {Status.ELIGIBLE: 0, Status.CONDITIONAL: 1, Status.UNKNOWN: 2, Status.SKIPPED: 3, Status.INELIGIBLE: 4}
#: Families a default-off condition may waive: a host sync, a dynamic shape or host control flow fails capture
#: loudly and the runtime falls back; side effects (AG4xx) would replay wrong silently and are never waived.
_WAIVABLE = ("AG1", "AG2", "AG3", "AG9")
#: How many calls deep the methods of `self` that a refresh calls are followed for what they write (and whose
#: writes of the layer's state are then a refresh too): beyond it, their writes are hazards as anywhere.
REFRESH_DEPTH = 3


@dataclass
class _Result:
    status: Status = Status.ELIGIBLE  # of what runs outside the branches a guard keeps out
    reasons: list[Reason] = field(default_factory=list)
    hard: bool = False  # holds a blocking reason that no condition can waive
    kernels: int = 0  # about how many kernels one forward launches: what a graph of it saves
    guarded: dict[tuple[Guard, ...], Guarded] = field(default_factory=dict)  # by the alternatives keeping them out

    def absorb(
        self, status: Status, reasons: Iterable[Reason], step: str | None, hard: bool = False, condition: str = "", kernels: int = 0
    ) -> None:
        self.kernels += kernels
        if status is Status.SKIPPED:
            status = Status.INELIGIBLE
        self.hard = self.hard or hard
        if _STATUS_ORDER[status] > _STATUS_ORDER[self.status]:
            self.status = status
        if status is Status.ELIGIBLE:
            return
        for reason in reasons:
            added = _stepped(reason, step, condition)
            if len(self.reasons) < MAX_REASONS:
                self.reasons.append(added)
            elif not added.condition:  # what decides the status comes before what only makes it conditional
                waived = next((i for i, r in enumerate(self.reasons) if r.condition), None)
                if waived is None:
                    return
                del self.reasons[waived]
                self.reasons.append(added)

    def keep_out(self, alternatives: tuple[Guard, ...], status: Status, reasons: Iterable[Reason], step: str | None, hard: bool) -> None:
        """Hazards that any one of `alternatives` (tests of this function's parameters) keeps from running."""
        known = self.guarded.get(alternatives)
        kept = known.reasons if known is not None else ()
        added = tuple(_stepped(r, step, "") for r in reasons)[: MAX_REASONS - len(kept)]
        if known is not None:
            status = max(status, known.status, key=_STATUS_ORDER.__getitem__)
            hard = hard or known.hard
        self.guarded[alternatives] = Guarded(alternatives, status, hard, kept + added)

    def guarded_by(self, alternatives: tuple[Guard, ...]) -> "_Result":
        """This result as code that runs only when none of `alternatives` holds: what blocks here is kept out."""
        out = _Result(kernels=self.kernels, guarded=dict(self.guarded))
        out.keep_out(alternatives, self.status, self.reasons, None, self.hard)
        return out

    def take(self, other: "_Result", step: str | None, condition: str = "", bind: Binder | None = None) -> None:
        """Absorb what a call found; under a default-off `condition` a waivable failure only makes it conditional.
        `bind` turns the callee's guards into this function's (`same` for a result of this function itself); a
        guard it cannot carry leaves its hazards blocking as they are."""
        if condition and other.status in (Status.INELIGIBLE, Status.UNKNOWN) and not other.hard:
            self.absorb(Status.CONDITIONAL, other.reasons, step, condition=condition, kernels=other.kernels)
        else:
            self.absorb(other.status, other.reasons, step, other.hard, kernels=other.kernels)
        for alternatives, entry in other.guarded.items():
            carried = _carried(alternatives, bind)
            if carried is True:  # it cannot run through this call
                continue
            if carried:
                self.keep_out(carried, entry.status, entry.reasons, step, entry.hard)
            elif condition and not entry.hard:
                self.absorb(Status.CONDITIONAL, entry.reasons, step, condition=condition)
            else:
                self.absorb(entry.status, entry.reasons, step, entry.hard)


def _stepped(reason: Reason, step: str | None, condition: str) -> Reason:
    chain = (step, *reason.chain) if step else reason.chain
    return Reason(chain, reason.code, reason.message, reason.path, reason.line, reason.condition or condition, reason.guard)


def _carried(alternatives: tuple[Guard, ...], bind: Binder | None) -> tuple[Guard, ...] | bool:
    """The caller's alternatives for a callee's: True when one holds for this call, () when none is carried."""
    if bind is None:
        return ()
    found = []
    for guard in alternatives:
        bound = bind(guard)
        if bound is True:
            return True
        if bound:
            found.append(bound)
    return guards.few(found)


def _condition_text(function: FunctionFacts, conditions: tuple[int, ...], off: Callable[[int], bool]) -> str:
    """The default-off conditions among `conditions`, as written: "" when none is off."""
    texts = []
    for index in conditions:
        if off(index):
            condition = function.conditions[index]
            texts.append(f"not ({condition.text})" if condition.negated else condition.text)
    return " and ".join(texts)


def _callable(value: Value | None) -> bool:
    """Whether the default build's answer for a callee says what runs: one that holds only constants (`None`) says
    that what the call runs was not found, not that nothing runs (a registry read through a `__getitem__`)."""
    return bool(value) and any(atom[0] not in ("C", "H") for atom in value)  # type: ignore[union-attr]


def _of_verdict(verdict: Verdict) -> _Result:
    """A class's verdict as a result a caller takes: what runs outside its guarded branches, and those."""
    plain = [r for r in verdict.reasons if not r.guard]
    status = verdict.plain or verdict.status
    return _Result(status, plain, verdict.hard, verdict.kernels, {e.alternatives: e for e in verdict.guarded})


def _lone_object(value: Value) -> bool:
    return len(value) == 1 and next(iter(value))[0] in ("G", "I")


def _internal(where: str, detail: str, path: str, line: int) -> Reason:
    return Reason((), INTERNAL, detail, path, line)


class Package:
    """All facts of one run, indexed for resolution, with the verdicts computed on demand."""

    def __init__(
        self,
        modules: list[ModuleFacts],
        keep: Callable[[str], bool],
        unknown: str = "unknown",
        capturable: tuple[str, ...] = (),
        not_capturable: tuple[str, ...] = (),
        solved: "Package | None" = None,
        ahead: Callable[[str], None] | None = None,
        changed: frozenset[str] | None = None,
        summaries: frozenset[tuple[str, str]] = frozenset(),
        deepen: Callable[[str], ModuleFacts | None] | None = None,
    ) -> None:
        """`solved`: an earlier package of the same files: this run's, some of them indexed less deeply; or the last
        run's, with the files `changed` edited since (`summaries` changed, as (module, scope); no frame did). Its resolver
        answers hold here too, but for those that read a changed summary (the resolver reads the summaries of every
        body, which a deeper index of a file does not change), and so do its verdicts and function results that read
        nothing a deeper index replaces, no file of `changed` and no resolver answer dropped: all are kept.
        `ahead`: told each file that forward code may soon need indexed deeply (to start on it elsewhere).
        `deepen`: indexes a file deeply now (None when it cannot): forward code that reaches a file indexed without its
        bodies reads them at once (`deepened`), and nothing is judged from what was not walked. Without it (or where it
        fails) such a result is provisional, the file is noted in `shallow_reached`, and the caller judges again once
        those files are indexed deeply: on transformers that second round judged 11,000 results again (7 s)."""
        self.modules = {m.module: m for m in modules}
        self.capturable = capturable  # names (or fnmatch patterns) outside the package the user vouches for
        self.not_capturable = not_capturable
        self.optional = {q for m in modules for q in m.optional_imports}  # outside code used only if installed
        self.keep = keep  # select/ignore: a code not kept neither reports nor blocks
        self.unknown = unknown  # what AG9xx means for verdicts: "unknown", "block" or "allow"
        self.classes: dict[str, tuple[ModuleFacts, ClassFacts]] = {}
        self.functions: dict[str, tuple[ModuleFacts, FunctionFacts]] = {}
        for module in modules:
            for cls in module.classes.values():
                self.classes[cls.qualname] = (module, cls)
            for function in module.functions.values():
                self.functions[f"{module.module}.{function.name}"] = (module, function)
        self._roots = {name.split(".", 1)[0] for name in self.modules}
        self._resolved: dict[str, str | None] = {}
        self._mro: dict[str, list[str]] = {}
        self._method_memo: dict[tuple[str, str, bool], tuple[str, FunctionFacts] | None] = {}
        self._layer: dict[str, bool] = {}
        self._function_memo: dict[tuple[str, str, str], _Result] = {}
        self._ahead: set[tuple[str, str]] = set()  # bodies whose callees' files were asked for ahead
        self._in_progress: set[tuple[str, str, str]] = set()
        self._class_memo: dict[str, Verdict] = {}
        self._judging: set[str] = set()  # classes whose verdict is being computed (their memo is a placeholder)
        self._depth = 0  # verdicts being judged inside one another
        self.shallow_reached: set[str] = set()  # files forward code reaches where something was not indexed yet
        self._on_deep = ahead  # told each file forward code may soon need indexed deeply, once
        self._announced: set[str] = set()
        self._deepen = deepen
        self.deepened: dict[str, ModuleFacts] = {}  # path -> the deep facts this package read in place of its own
        # what each memoized result read and added (functions reached, AG9xx places, extra findings, internal errors)
        self.ledger = Ledger()
        self.kept = 0  # memoized results kept from the last run's package
        if solved is not None:
            self.solver, self.defaults, self.configured = solved.solver, solved.defaults, solved.configured
            for solver in (self.solver, self.defaults, self.configured):
                solver.rebind(self, self._asking)
            self._carry(solved, changed or frozenset(), self._refresh(summaries) if summaries else set())
            self.kept = self.results() if changed is not None else solved.kept
            return
        self.solver = Solver(self)
        self.defaults = Solver(self, defaults=True, index_from=self.solver)  # what holds when nobody passes anything: default-off flags
        self.configured = Solver(self, branches=self.defaults, sites_from=self.solver)  # what the default configuration builds
        for solver in (self.solver, self.defaults, self.configured):
            solver.asker = self._asking

    def _asking(self) -> Hashable | None:
        """The result asking the resolver now: it reads the answers it gets (see `FixedPoint.forget`)."""
        return self.ledger.current()

    def __getstate__(self) -> dict:
        """What a later run may keep (`solved.Solved`): the resolver's answers and the memoized results with their
        ledger; not the facts, which the later run reads afresh."""
        kept = ("solver", "defaults", "configured", "_class_memo", "_function_memo", "ledger")
        return {name: self.__dict__[name] for name in kept}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def _refresh(self, summaries: frozenset[tuple[str, str]]) -> set[Hashable]:
        """The resolver after an edit of `summaries`: what read them is dropped, the calls of their modules are
        indexed again and the calls through values found again; the results that asked for a dropped answer."""
        sites = self.solver.sites
        by_name, through_self = sites.reindex({module for module, _ in summaries})
        names = set(by_name)
        for cls in by_name & self.classes.keys():  # constructing a class runs the __init__ it inherits
            runs = sites.method_owner(cls, "__init__")
            if runs is not None:
                names.add(f"{runs}.__init__")
        solvers = (self.solver, self.defaults, self.configured)
        for solver in solvers:
            solver.refresh(summaries, names, through_self)
        self.solver.rediscover([self.configured])
        return set().union(*(solver.forgotten for solver in solvers))

    def _carry(self, solved: "Package", changed: frozenset[str], dropped: set[Hashable]) -> None:
        """Keep what `solved` judged from facts that stay: a deeper index replaces only the bodies and sublayers it
        had not walked, and every result that read one of those (or a cycle's placeholder) is judged again; so is
        every result that read a file of `changed` (edited since) or asked the resolver for an answer `dropped`.
        What is reported is what the results of this package add up to (`Ledger.live`), so kept parts add up to what
        judging all again would give."""
        ledger = solved.ledger
        keep = ledger.standing([*solved._class_memo, *solved._function_memo], changed, dropped)
        self._class_memo = {q: v for q, v in solved._class_memo.items() if q in keep}
        self._function_memo = {k: v for k, v in solved._function_memo.items() if k in keep}
        self.ledger = ledger.kept(keep)

    def results(self) -> int:
        """How many verdicts and function results are memoized."""
        return len(self._class_memo) + len(self._function_memo)

    def judged_anew(self) -> int:
        """How many results this run judged that a later run could keep: not kept from the last run's package, and
        not provisional (a provisional result is never kept: every run judges it again, whatever state it starts from)."""
        provisional = sum(1 for key in self.ledger.provisional if key in self._class_memo or key in self._function_memo)
        return self.results() - self.kept - provisional

    def _needs_deep(self, path: str) -> bool:
        """Forward code reaches a file where something was not indexed, and what is being computed reads it: indexed
        deeply now where it can be (True: the package reads its deep facts from now on), else the next round does."""
        if self._deepen is not None and path not in self.deepened and path not in self.shallow_reached:
            facts = self._deepen(path)
            if facts is not None and facts.complete:
                self._replace(facts)
                return True
        self.ledger.provisional_read()
        self.shallow_reached.add(path)
        self._announce(path)
        return False

    def _ask_ahead(self, path: str) -> None:
        """Forward code is about to reach a file's bodies not walked: its deep index is asked for now, to be ready when
        read (without `deepen`, the next round indexes it)."""
        if self._deepen is None:
            self.shallow_reached.add(path)
        self._announce(path)

    def _announce(self, path: str) -> None:
        if path not in self._announced:
            self._announced.add(path)
            if self._on_deep is not None:
                self._on_deep(path)

    def _replace(self, facts: ModuleFacts) -> None:
        """Read a file's deep facts in place of its shallow ones. Its summaries, which the resolver reads, are the same
        (every body is summarized); what was judged from the bodies it had walked stands (as between rounds)."""
        self.modules[facts.module] = facts
        for cls in facts.classes.values():
            self.classes[cls.qualname] = (facts, cls)
        for function in facts.functions.values():
            self.functions[f"{facts.module}.{function.name}"] = (facts, function)
        self._method_memo.clear()  # it holds the shallow facts' methods
        self.deepened[facts.path] = facts

    def _walked(self, owner: str, function: FunctionFacts) -> tuple[ModuleFacts, FunctionFacts]:
        """A function that forward code runs, with its body walked (its file indexed deeply now where it was not): what
        it calls is read before it is judged (`_run_for_call`). The files its calls lead to are asked for ahead."""
        module, function = self._current(owner, function)
        if not function.walked:
            self._reach_ahead(module.module, function.qualname)
            if self._needs_deep(module.path):
                module, function = self._current(owner, function)
        return module, function

    def _current(self, owner: str, function: FunctionFacts) -> tuple[ModuleFacts, FunctionFacts]:
        """A function's file and facts as the package reads them now (its file may have been indexed deeply since the
        caller found it)."""
        if owner in self.classes:
            module, cls = self.classes[owner]
            return module, cls.methods.get(function.name, function)
        module = self.modules[owner]
        return module, module.functions.get(function.name, function)

    def _report(self, kind: str) -> list[tuple]:
        """What the results of the package's verdicts added of one `kind`, each item once."""
        return [item[1:] for item in set(self.ledger.live(self.layer_classes())) if item[0] == kind]

    @property
    def unresolved_names(self) -> Counter[str]:
        """What AG9xx reasons named (what a user could declare), by how many places name it."""
        return Counter(name for name, *_ in sorted(self._report("unresolved")))  # sorted: ties keep one order every run

    # ----- resolution ------------------------------------------------------------------------------------------
    def resolve(self, qual: str) -> str | None:
        """Follow re-exports (`from .mlp import MLP` in `__init__`) to a class or function of the package."""
        try:
            return self._resolved[qual]
        except KeyError:
            pass
        current: str | None = qual
        for _ in range(8):
            if current in self.classes or current in self.functions:
                break
            module, _, name = current.rpartition(".")  # type: ignore[union-attr]
            facts = self.modules.get(module)
            target = facts.imports.get(name) if facts is not None else None
            current = target if target is not None and target != current else None
            if current is None:
                break
        else:
            current = None
        self._resolved[qual] = current
        return current

    def in_package(self, qual: str) -> bool:
        return qual.split(".", 1)[0] in self._roots

    def is_layer(self, qual: str) -> bool:
        if qual in self._layer:
            return self._layer[qual]
        self._layer[qual] = False
        found = self.classes.get(qual)
        result = False
        if found is not None:
            _, cls = found
            for base in cls.bases:
                resolved = self.resolve(base)
                if resolved is not None:
                    result = result or self.is_layer(resolved)
                elif fw.layer_kind(base) is not None and fw.layer_kind(base) != "framework":
                    result = True
            result = result or "forward" in cls.methods and not any(self.resolve(b) for b in cls.bases)
        self._layer[qual] = result
        return result

    def layer_classes(self) -> list[str]:
        return [q for q in self.classes if self.is_layer(q)]

    def mro(self, qual: str) -> list[str]:
        known = self._mro.get(qual)
        if known is not None:
            return known
        order: list[str] = []
        stack = [qual]
        while stack:
            current = stack.pop(0)
            if current in order or current not in self.classes:
                continue
            order.append(current)
            for base in self.classes[current][1].bases:
                resolved = self.resolve(base)
                if resolved is not None:
                    stack.append(resolved)
        self._mro[qual] = order
        return order

    def framework_bases(self, qual: str) -> list[str]:
        bases = []
        for owner in self.mro(qual):
            for base in self.classes[owner][1].bases:
                if self.resolve(base) is None:
                    bases.append(base)
        return bases

    def find_method(self, qual: str, name: str, skip_self: bool = False) -> tuple[str, FunctionFacts] | None:
        key = (qual, name, skip_self)
        if key not in self._method_memo:
            owners = self.mro(qual)[1 if skip_self else 0 :]
            self._method_memo[key] = next(((o, m) for o in owners if (m := self.classes[o][1].methods.get(name)) is not None), None)
        return self._method_memo[key]

    def _touch(self, module: ModuleFacts) -> bool:
        """Forward code needs this file's bodies or sublayers: its deep index (True: read from now on)."""
        return not module.complete and not module.deep and self._needs_deep(module.path)

    # ----- verdicts --------------------------------------------------------------------------------------------
    def verdict(self, qual: str) -> Verdict:
        known = self._class_memo.get(qual)
        if known is not None:
            self.ledger.used(qual)
            if qual in self._judging:  # a cycle's optimistic placeholder is provisional too
                self.ledger.provisional_read()
            return known
        self._judging.add(qual)
        try:
            return self.ledger.track(qual, lambda: self._judge(qual))
        finally:
            self._judging.discard(qual)

    def _judge(self, qual: str) -> Verdict:
        module, cls = self.classes[qual]
        self.ledger.read(module.path)
        if self._touch(module):
            module, cls = self.classes[qual]
        if cls.skipped:
            verdict = Verdict(qual, module.path, cls.line, Status.SKIPPED, (Reason((cls.name,), "skip", "skipped by `# autograph-cg: skip`", module.path, cls.line),), hard=True)
            self._class_memo[qual] = verdict
            return verdict
        self._class_memo[qual] = Verdict(qual, module.path, cls.line, Status.ELIGIBLE)  # cycles: optimistic
        in_progress = set(self._in_progress)
        self._depth += 1
        try:
            result = self._class_result(qual)
        except RecursionError:
            if self._depth > 1:  # unwind to the outermost verdict, where there is stack again; the classes on
                del self._class_memo[qual]  # the way are judged afresh when next asked, not left optimistic
                raise
            self._in_progress = in_progress
            self.ledger.provisional_read()  # how deep it went depends on what was judged before: never kept
            result = _Result()
            reason = Reason((cls.name,), "AG901", "what forward runs is nested too deep to follow", module.path, cls.line)
            result.absorb(Status.UNKNOWN, [reason], None)
        except Exception as exc:  # an analyzer bug on one class: it ends unknown, the others are still judged
            self._in_progress = in_progress
            self.ledger.provisional_read()  # judged again next round, so its failure is recorded again
            detail = describe(exc)
            self.ledger.add(("failure", module.path, cls.name, detail))
            result = _Result()
            result.absorb(Status.UNKNOWN, [_internal(cls.name, detail, module.path, cls.line)], None, hard=True)
        finally:
            self._depth -= 1
        verdict = self._guarded_verdict(qual, result)
        self._class_memo[qual] = verdict
        return verdict

    def _guarded_verdict(self, qual: str, result: _Result) -> Verdict:
        """The verdict of a class's result: hazards behind tests of its forward's arguments make it conditional
        under a guard that keeps them all out; without one consistent guard they block as they are."""
        module, cls = self.classes[qual]
        entries = tuple(result.guarded.values())
        found = self.find_method(qual, "forward")
        summary = self.solver.scope(self.classes[found[0]][0].module, found[1].qualname) if found is not None and entries else None
        chosen = None
        if summary is not None:
            forward_module = self.classes[found[0]][0].module  # type: ignore[index]

            def at_default(name: str, kind: str) -> bool:
                """An argument left out passes at its default; a setting of the layer (`self.use_dynamic_ntk`)
                where the defaults solver knows its truth as built with the default settings. The mode
                (`training`) is no setting: a model is switched between the two."""
                if not guards.is_setting(name):
                    value = summary.defaults.get(name)
                    return value is not None and value[0] == "c" and guards.holds(kind, value[1])
                expr = guards.setting_expr(name)
                if expr is None or name.rsplit(".", 1)[-1] == "training" or kind not in ("truthy", "falsy"):
                    return False
                truth = self.defaults.truth(expr, forward_module, found[1].qualname)  # type: ignore[index]
                return truth is not None and truth == (kind == "truthy")

            chosen = guards.choose((e.alternatives for e in entries), at_default)
        if chosen is None or result.status is Status.INELIGIBLE:
            for entry in entries:
                result.absorb(entry.status, entry.reasons, None, entry.hard)
            return Verdict(qual, module.path, cls.line, result.status, tuple(result.reasons), result.hard, result.kernels)
        guard, picks = chosen
        kept = [replace(r, guard=pick) for entry, pick in zip(entries, picks) for r in entry.reasons]
        first = [r for r in result.reasons if not r.condition]  # what decides first, then the guarded, then the waived
        reasons = (first + kept + [r for r in result.reasons if r.condition])[:MAX_REASONS]
        status = max(result.status, Status.CONDITIONAL, key=_STATUS_ORDER.__getitem__)
        return Verdict(qual, module.path, cls.line, status, tuple(reasons), result.hard, result.kernels, guard, entries, result.status)

    def _class_result(self, qual: str) -> _Result:
        result = _Result()
        found = self.find_method(qual, "forward")
        module, cls = self.classes[qual]
        for owner in self.mro(qual):
            self.ledger.read(self.classes[owner][0].path)
            failed = self.classes[owner][1]
            if failed.error:
                result.absorb(Status.UNKNOWN, [_internal(failed.name, failed.error, self.classes[owner][0].path, failed.line)], None, hard=True)
        aliases: list[str] = []  # set by an `__init__` nearer than any forward method: the instance's forward
        for owner in self.mro(qual):
            if found is not None and owner == found[0]:
                break
            aliases += self.classes[owner][1].forwards
        if aliases:  # any of them
            for name in aliases:
                method = self.find_method(qual, name)
                if method is not None:
                    result.take(self._function(qual, method[0], method[1]), None, bind=same)
            return result
        init = next((self.classes[o][1] for o in self.mro(qual) if self.classes[o][1].has_init), None)
        if found is None and init is not None and init.init_raises:  # building one raises: nothing of it ever runs
            return result
        if found is None:
            external = [b for b in self.framework_bases(qual) if fw.layer_kind(b) not in ("base", None)]
            called = self.find_method(qual, "__call__") if not external else None
            if called is not None:  # a layer that overrides `__call__`: calling it runs that, not a forward
                result.take(self._function(qual, called[0], called[1]), None, bind=same)
                return result
            if not external:
                result.absorb(Status.UNKNOWN, [Reason((cls.name,), "AG902", "no forward method found", module.path, cls.line)], None)
            for base in external:
                self._external_layer(base, result, None, module, cls.line, cls.name)
            if any(fw.layer_kind(b) == "container" for b in external):  # Sequential's forward runs what it holds
                given, assigned = self.solver.held(qual)
                held = given | {a for a in assigned if self.solver.may_be_layer(a)}
                span = Span(cls.line, 1, cls.line, 1)  # each item is called with one input
                items = CallRef("self", ITEMS, span, f"{cls.name}'s own items", passes=((0, guards.OTHER),))
                self._run(held, items, module, result, cls.name, every=True)
            return result
        owner, method = found
        result.take(self._function(qual, owner, method), None, bind=same)
        if self._autograd(qual):  # an autograd function runs its backward too
            backward = self.find_method(qual, "backward")
            if backward is not None:
                result.take(self._function(qual, backward[0], backward[1]), None)
        return result

    def _function(
        self, context: str, owner: str, function: FunctionFacts, site: Ctx | None = None, refresh: tuple[str, int] | None = None
    ) -> _Result:
        """`site`: the function runs for one call (a package function called by name whose calls go through
        its parameters): what those calls run is solved for that call's arguments. `refresh`: a method of `self`
        that runs for this call only in a refresh, (its test as written, how many calls deep), whose own writes of
        the layer's state are part of that refresh (`_refresh_of`)."""
        key = (context, owner, function.name, site) if refresh is None else (context, owner, function.name, site, refresh)
        memo = self._function_memo.get(key)
        if memo is not None:
            self.ledger.used(key)
            return memo
        if key in self._in_progress:
            self.ledger.provisional_read()  # a cycle: what it reads now depends on where the cycle was entered
            return _Result()
        return self.ledger.track(key, lambda: self._function_result(key, context, owner, function, site, refresh))

    def _function_result(
        self, key: tuple, context: str, owner: str, function: FunctionFacts, site: Ctx | None, refresh: tuple[str, int] | None
    ) -> _Result:
        self._in_progress.add(key)
        self.ledger.add(("reached", owner, function.name))
        module, function = self._walked(owner, function)  # a file not indexed deeply walked none of its bodies
        self.ledger.read(module.path)
        step = function.qualname
        result = _Result(kernels=function.ops)
        if function.error:
            result.absorb(Status.UNKNOWN, [_internal(function.qualname, function.error, module.path, function.line)], step, hard=True)
        off = self._off_conditions(module, function)
        for index, finding in enumerate(function.findings):
            if not self.keep(finding.code) or self._unfounded(function, index) or function.refresh(index) is not None:
                continue
            if function.writes_state_at(index):  # in a refresh through a method of `self` it calls, or run by one
                text = refresh[0] if refresh is not None else self._refresh_of(context, function, function.guard(index))
                self.ledger.add(("refreshed", owner, function.name, index, text) if text else ("unrefreshed", owner, function.name, index))
                if text:
                    continue
            rule = RULES[finding.code]
            if rule.blocks:
                reason = Reason((), finding.code, finding.message, finding.path, finding.line)
                condition = _condition_text(function, function.guard(index), off)
                waivable = finding.code.startswith(_WAIVABLE)
                kept_out = guards.keep_out(function, function.guard(index))  # what nothing else waives, a guard may
                if condition and waivable:
                    result.absorb(Status.CONDITIONAL, [reason], step, condition=condition)
                elif kept_out:
                    result.keep_out(kept_out, Status.INELIGIBLE, [reason], step, hard=not waivable)
                else:
                    result.absorb(Status.INELIGIBLE, [reason], step, hard=not waivable)
        for call in function.calls:
            if not call.conditions and not call.cut:
                self._call(context, owner, module, call, result, step, site, self._refresh_call(context, function, call, refresh))
                continue
            found = _Result()  # whether its conditions are off by default matters only if the call fails
            self._call(context, owner, module, call, found, step, site, self._refresh_call(context, function, call, refresh))
            if call.cut and not found.hard and not any(e.hard for e in found.guarded.values()) and self._out_of_graphs(call.cut):
                continue  # the library skips it while capturing; a side effect skipped would make a replay differ
            blocks = found.status in (Status.INELIGIBLE, Status.UNKNOWN)
            condition = _condition_text(function, call.conditions, off) if blocks and not found.hard else ""
            kept_out = guards.keep_out(function, call.conditions) if blocks and not condition else ()
            result.take(found.guarded_by(kept_out) if kept_out else found, None, condition, bind=same)
        if function.decorated and result.guarded:
            entries, result.guarded = list(result.guarded.values()), {}
            from_config = self._filled_from_config(owner, function)
            for entry in entries:
                result.keep_out(guards.strict(entry.alternatives, from_config), entry.status, entry.reasons, None, entry.hard)
        self._in_progress.discard(key)
        self._function_memo[key] = result
        return result

    # ----- refreshes through methods of `self` ---------------------------------------------------------------------
    def _refresh_call(
        self, context: str, function: FunctionFacts, call: CallRef, refresh: tuple[str, int] | None
    ) -> tuple[str, int] | None:
        """The refresh a call of a method of `self` runs in, when it runs only in one: (its test as written, how many
        calls deep); None otherwise. A call in the function's own code (not a closure's) of a method that runs in a
        refresh, or in the body of an `if` whose test, in every way it may hold, reads state of `self` that the body
        writes, itself or through the methods of `self` it calls (`_refresh_of`)."""
        if call.kind != "self" or call.scope or not self.is_layer(context):  # the runtime watches layers' attributes only
            return None
        if refresh is not None:
            return (refresh[0], refresh[1] + 1) if refresh[1] < REFRESH_DEPTH else None
        text = self._refresh_of(context, function, call.conditions)
        return (text, 1) if text else None

    def _refresh_of(self, context: str, function: FunctionFacts, conditions: tuple[int, ...]) -> str:
        """The test of a refresh among `conditions` (the branches code of `function` sits in) that holds only where
        what it reads of the state its body writes, through the methods of `self` it calls too, says so; "" when
        none does. `analysis/refresh.py` finds those whose body writes that state itself, as the walk reads it."""
        for index in conditions:
            condition = function.conditions[index]
            if condition.negated or not condition.stale or not self.is_layer(context):
                continue
            written = set(condition.wrote)
            for call in function.calls:
                if call.kind == "self" and not call.scope and index in call.conditions:
                    written |= self._writes_state(context, call.target, REFRESH_DEPTH)
            if refreshes.stale(condition.stale, written):
                return condition.text
        return ""

    def _writes_state(self, context: str, name: str, depth: int) -> set[str]:
        """The attributes of `self` that method `name` of class `context` writes in its own code, with the methods of
        `self` it calls there, `depth` calls deep; nothing for a method not walked yet (its deep index is asked for)."""
        found = self.find_method(context, name)
        if found is None or depth <= 0:
            return set()
        owner, method = found
        module = self.classes[owner][0]
        self.ledger.read(module.path)
        if not method.walked and self._needs_deep(module.path):
            owner, method = self.find_method(context, name)  # type: ignore[misc]  # read from its deep facts
        if not method.walked:
            return set()
        written = set(method.writes_state)
        for call in method.calls:
            if call.kind == "self" and not call.scope:
                written |= self._writes_state(context, call.target, depth - 1)
        return written

    def _filled_from_config(self, owner: str, function: FunctionFacts) -> Callable[[str], bool]:
        """The parameters of a decorated function that a call leaving them out gets from the layer's config or from
        their own false default: its outermost decorator's code fills only from the config (`config_fill`)."""
        decorator = self._module_function(function.decorator) if function.decorator else None
        if decorator is None or not decorator.fills_from_config:
            return lambda name: False
        module = self.classes[owner][0] if owner in self.classes else self.modules[owner]
        summary = self.solver.scope(module.module, function.qualname)

        def false_default(name: str) -> bool:
            default = summary.defaults.get(name) if summary is not None and name in summary.params else None
            return default is not None and default[0] == "c" and not default[1]

        return false_default

    def _unfounded(self, function: FunctionFacts, index: int) -> bool:
        """A finding that is no hazard once other files are read: a host read, shape or branch whose code never
        runs while a graph captures (a side effect skipped there would make a replay differ from eager: it stays), or
        what it reads is a tensor only if another module's function returns one, and each is annotated not to."""
        cut, assumed = function.cut(index), function.assumed(index)
        if cut and function.findings[index].code.startswith(_WAIVABLE) and self._out_of_graphs(cut):
            return True
        return bool(assumed) and all(self._host_result(q) for q in assumed)

    def _out_of_graphs(self, cut: tuple[str, ...]) -> bool:
        """Code that sits where these calls fail never runs inside a graph, when each is true while one captures."""
        return all(self._capturing(qual, ()) for qual in cut)

    def _capturing(self, qual: str, seen: tuple[str, ...]) -> bool:
        """Whether a call of `qual` is true while a graph captures: a framework's query, or a package function
        annotated to return a host value whose every `return` is an `or` with such a call (`capture.truthy_calls`)."""
        if qual in fw.CAPTURE_QUERIES:
            return True
        found = self._module_function(qual) if qual not in seen else None
        if found is None or not found.truthy:
            return False
        inner = seen + (qual,)
        return all(any(self._capturing(q, inner) for q in calls) for calls in found.truthy)

    def _host_result(self, qual: str) -> bool:
        found = self._module_function(qual)
        return found is not None and found.host_return

    def _module_function(self, qual: str) -> FunctionFacts | None:
        """The module function `qual` names, its file read by the result being computed."""
        resolved = self.resolve(qual)
        found = self.functions.get(resolved) if resolved is not None else None
        if found is None:
            return None
        self.ledger.read(found[0].path)
        return found[1]

    def _reach_ahead(self, module: str, scope: str) -> None:
        """Ask now for the files that the calls of a body not walked yet lead to, by their summaries: once walked,
        it would reach them, and each file found one round later costs another round of verdicts."""
        todo = [(module, scope)]
        while todo:
            for qual in self.solver.named_callees(*todo.pop()):
                found = self.functions.get(qual)
                if found is not None and not found[1].walked and (found[0].module, found[1].qualname) not in self._ahead:
                    self._ahead.add((found[0].module, found[1].qualname))
                    self._ask_ahead(found[0].path)
                    todo.append((found[0].module, found[1].qualname))

    def _off_conditions(self, module: ModuleFacts, function: FunctionFacts) -> Callable[[int], bool]:
        """Whether a condition of `function` is off when nothing is passed and no flag is set: asked of the
        defaults solver (which memoizes it) each time, so that every result that relies on it reads it."""

        def off(index: int) -> bool:
            condition = function.conditions[index]
            holds = self.defaults.truth(condition.expr, module.module, function.qualname)
            return holds is not None and holds == condition.negated

        return off

    def _call(
        self,
        context: str,
        owner: str,
        module: ModuleFacts,
        call: CallRef,
        result: _Result,
        step: str,
        site: Ctx | None = None,
        refresh: tuple[str, int] | None = None,
    ) -> None:
        """`refresh`: a call of a method of `self` that runs only in that refresh (`_refresh_call`)."""
        kind, target = call.kind, call.target
        here = site if site is not None else (module.module, step, None)  # where the call's expressions are solved
        if site is None and context != owner and owner in self.classes and context in self.classes:
            summary = self.solver.scope(module.module, step)  # an inherited method: for the class it runs for, when
            read = call.callee if call.callee is not None else call.call  # what it solves depends on which that is
            if summary is not None and read is not None and reads_self(read, summary):
                here = (module.module, step, ("self", context))
        if call.scope:  # inside a closure: its own names first, then the function's (for this call, if any)
            here = (module.module, call.scope, ("in", site) if site is not None else None)
        if kind == "self" and context in self.classes:
            method = self.find_method(context, target)
            if method is not None:
                runs_for = self._run_for_call(call, here, method[0], method[1])
                ran = self._function(context, method[0], method[1], runs_for, refresh)
                result.take(ran, step, bind=self._binder(call, *method, holder="self"))
                return
            if target in DISPATCH.layer_methods and self.is_layer(context) and not self.solver.assigns(context, target):
                return  # the framework's `self.register_buffer(...)`: a rule judges the call itself (AG407)
            held = self.solver.attribute(context, target) or self.solver.assigned_under_tests(context, target)
            self._run(
                held, call, module, result, f"{step} → self.{target}", default=lambda: self.configured.attribute(context, target), holder=f"self.{target}"
            )
        elif kind == "self-attr" and context in self.classes:
            attr, _, method_name = target.partition(".")
            self._methods(self.solver.attribute(context, attr), method_name, call, module, result, f"{step} → self.{attr}")
        elif kind == "super" and context in self.classes:
            start = owner if owner in self.classes else context
            method = self.find_method(start, target, skip_self=True)
            if method is not None:
                runs_for = self._run_for_call(call, here, method[0], method[1])
                result.take(self._function(context, method[0], method[1], runs_for), step, bind=self._binder(call, *method, holder="self"))
        elif kind == "name":
            resolved = self.resolve(target)
            if resolved is not None and resolved in self.functions:
                fmodule, function = self.functions[resolved]
                runs_for = self._run_for_call(call, here, fmodule.module, function)
                result.take(self._function("", fmodule.module, function, runs_for), step, bind=self._binder(call, fmodule.module, function))
            elif resolved is None and target.endswith(".apply") and self._autograd(target[: -len(".apply")]):
                self._autograd_function(self.resolve(target[: -len(".apply")]) or "", result, step)
            elif resolved is None:
                if fw.is_framework(target):
                    return
                self._run(self.solver.value(("g", target), module.module, ""), call, module, result, step, constructs=True)
        elif kind == "instance":  # a layer built in forward and called: `loss_fct = CrossEntropyLoss(); loss_fct(y)`
            self._run(self.solver.value(("g", target), module.module, ""), call, module, result, f"{step} → {call.text}")
        elif kind == "unresolved" and call.callee is not None:
            usual = lambda: self.configured.value_in(call.callee, here)  # noqa: E731 (what construction builds there)
            self._run(self.solver.value_in(call.callee, here), call, module, result, step, default=usual, site=site)
        elif kind == "result" and call.callee is not None:
            made = self._made_by(self.resolve(target) or target)
            value = made(self.solver.value_in(call.callee, here))
            if value:
                usual = lambda: made(self.configured.value_in(call.callee, here))  # noqa: E731
                self._run(value, call, module, result, step, default=usual, site=site)
        elif kind == "unresolved" or kind in ("self", "self-attr", "super"):
            self._unresolved(call, module, result, step)

    @staticmethod
    def _made_by(factory: str) -> Callable[[Value], Value]:
        """What a call of `factory`'s result may run, less the closures `factory` makes: those were walked with it, for
        the call that made them (`make_fn(...)(x)`), and counting them again would count their kernels twice."""
        inner = factory + ".<locals>."
        return lambda value: frozenset(a for a in value if not (a[0] == "G" and a[1].startswith(inner)))

    def _run_for_call(self, call: CallRef, here: Ctx, owner: str, function: FunctionFacts) -> Ctx | None:
        """Where a function or method (of class or module `owner`) called by name with arguments is judged: for this
        one call when it calls something through a value (`kernel = find(op); kernel(x)` in
        `self.call_kernel(ops.double, x)`), so what it runs is what this call's arguments make it, else for any call."""
        if call.call is None or site_depth(here) >= SITE_DEPTH:
            return None
        module, function = self._walked(owner, function)
        if not any(c.callee is not None for c in function.calls):
            return None
        return self.solver.for_call(call.call, here, module.module, function.qualname)

    # ----- what a call may run ------------------------------------------------------------------------------------
    def _run(
        self,
        value: Value,
        call: CallRef,
        module: ModuleFacts,
        result: _Result,
        step: str,
        constructs: bool = False,
        default: Callable[[], Value] | None = None,
        site: Ctx | None = None,
        every: bool = False,
        holder: str | None = None,
    ) -> None:
        """Absorb the verdicts of everything a call may run, given what its callee may hold.

        `constructs`: the call builds what it names (`Linear(...)` in forward), so a class is not yet an instance.
        `default`: what the callee holds in the default configuration; what only other configurations build
        is conditional on them (asked only when something fails). `every`: the items of a container called
        (a Sequential runs them all): their kernels add up, where of a callee's candidates only the largest counts.
        `holder`: how the caller names the object called (`self.bert`), for the tests of its settings."""
        if default is not None and not _lone_object(value):  # a lone class or instance: the default build holds
            trial = _Result()  # it or nothing, which decides nothing, so it is not solved
            self._run(value, call, module, trial, step, constructs, site=site, holder=holder)
            if trial.status is not Status.ELIGIBLE and not trial.hard:
                usual = default()
                if _callable(usual) and usual != value:
                    self._run(usual, call, module, result, step, constructs, site=site, holder=holder)
                    other = _Result()
                    self._run(frozenset(value - usual), call, module, other, step, constructs, site=site, holder=holder)
                    other.kernels = 0
                    result.take(other, None, "a non-default configuration builds it", bind=same)
                    return
        targets = 0
        before, most = result.kernels, 0  # one of the candidates runs: the largest counts (`every`: they all run)
        for atom in sorted(value, key=order_key):
            kind = atom[0]
            if not every:
                result.kernels = before
            if kind in ("G", "I"):
                targets += 1
                made_in = atom[2] if len(atom) > 2 else site  # a closure carries the run it was made in
                self._run_object(atom[1], kind == "I" or constructs, call, module, result, step, made_in, holder if kind == "I" else None)
            elif kind in ("L", "K"):  # a container called or iterated: each item runs (Sequential, ModuleList)
                items = self.solver.items(frozenset({atom}))
                if items:
                    targets += 1
                    # the tests of the items' settings, where all are of one class, as tests of every item
                    # (`self.h.*.attn.training`); of items of several classes, one's setting is missing on another
                    inner = f"{holder}.*" if holder and _lone_object(items) else None
                    self._run(items, call, module, result, step, every=True, holder=inner)
            elif kind == "?":
                targets += 1
                self._unknown("AG901", call.text, call, module, call.span.line, result, step, why=atom[1])
            elif kind in ("T", "container-method"):  # a tensor; or `self.values()` of a container: nothing runs
                targets += 1
            most = max(most, result.kernels - before)
        result.kernels = before + most
        if not targets and not any(a[0] in ("C", "H") for a in value):
            self._unresolved(call, module, result, step)

    def _run_object(
        self, qual: str, instance: bool, call: CallRef, module: ModuleFacts, result: _Result, step: str, site: Ctx | None = None,
        holder: str | None = None,
    ) -> None:
        if qual in self.classes:
            if self.is_layer(qual):
                verdict = self.verdict(qual)
                forward = self.find_method(qual, "forward")
                result.take(_of_verdict(verdict), step, bind=self._binder(call, *forward, holder=holder) if forward is not None else None)
            elif not instance and self._autograd(qual):
                self._autograd_function(qual, result, step)
            else:  # an object of a plain package class called: its __call__
                found = self.find_method(qual, "__call__")
                if found is not None:
                    result.take(self._function(qual, found[0], found[1]), step, bind=self._binder(call, *found))
                elif instance:
                    self._unknown("AG902", qual, call, module, call.span.line, result, step, why="an object without __call__")
            return
        function = self._package_function(qual)
        if function is not None:
            # a closure is walked with its function, for the call it was made in (or the one being walked)
            inner = site is not None and ".<locals>." in qual and (function[1], function[2].qualname) == site[:2]
            result.take(self._function(*function, site if inner else None), step, bind=self._binder(call, function[1], function[2]))
            return
        if self._declared(qual, result, module, call.span.line, step):
            return
        kind = fw.layer_kind(qual)
        if kind in ("known", "container", "base"):
            result.kernels += fw.kernels(qual) if kind == "known" else 0
            return
        if fw.is_framework(qual):
            if qual.rsplit(".", 1)[-1][:1].isupper() or instance:
                self._external_layer(qual, result, call, module, call.span.line, step)
            else:
                result.kernels += 1  # a framework function stored or passed: one op
                self._value_rules(qual, call, module, result, step)
            return
        if fw.is_host(qual):
            self._value_rules(qual, call, module, result, step)
            return
        if qual in self.optional:  # the default, without it installed, is the package's own fallback
            found = _Result()
            self._unknown("AG902", qual, call, module, call.span.line, found, step)
            result.take(found, None, f"`{qual.split('.', 1)[0]}` is installed", bind=same)
            return
        self._unknown("AG902", qual, call, module, call.span.line, result, step)

    def _declared(self, qual: str, result: _Result, module: ModuleFacts, line: int, step: str) -> bool:
        """`capturable` / `not-capturable` in [tool.autograph-cg]: what the user vouches for outside the package."""
        if any(fnmatch.fnmatchcase(qual, p) for p in self.not_capturable):
            reason = Reason((), "declared", f"`{qual}` is declared not capturable in [tool.autograph-cg]", module.path, line)
            result.absorb(Status.INELIGIBLE, [reason], step, hard=True)
            return True
        if any(fnmatch.fnmatchcase(qual, p) for p in self.capturable):
            result.kernels += 1
            return True
        return False

    def _methods(self, value: Value, name: str, call: CallRef, module: ModuleFacts, result: _Result, step: str) -> None:
        """`self.attr.name(...)`: the method `name` of whatever `self.attr` may hold."""
        targets = 0
        for atom in sorted(value, key=order_key):
            if atom[0] in ("G", "I") and atom[1] in self.classes:
                targets += 1
                found = self.find_method(atom[1], name)
                if found is not None:
                    result.take(self._function(atom[1], found[0], found[1]), step, bind=self._binder(call, *found))
                elif atom[0] == "I" and self.solver.assigns(atom[1], name):  # `self.model.decoder(...)`: a sublayer's
                    self._run(self.solver.attribute(atom[1], name), call, module, result, step)  # attribute, called
                elif not self.is_layer(atom[1]) or name not in _LAYER_METHODS:
                    self._unknown("AG901", call.text, call, module, call.span.line, result, step, why=f"no method `{name}`")
            elif atom[0] in ("G", "I"):
                targets += 1
                if fw.layer_kind(atom[1]) not in ("known", "container", "base") and not fw.is_framework(atom[1]):
                    self._unknown("AG902", atom[1], call, module, call.span.line, result, step)
            elif atom[0] in ("T", "C", "H"):
                targets += 1
            elif atom[0] == "?":
                targets += 1
                self._unknown("AG901", call.text, call, module, call.span.line, result, step, why=atom[1])
            elif atom[0] in ("L", "K"):  # `for layer in self.layers: layer.forward(x)`: the method of each item
                items = self.solver.items(frozenset({atom}))
                if items:
                    targets += 1
                    self._methods(items, name, call, module, result, step)
        if not targets:
            self._unresolved(call, module, result, step)

    def takes_keywords(self, qual: str, names: set[str]) -> bool:
        """Whether a call of the layer class's forward may name each of `names`: its parameters, or any name where it
        takes `**kwargs` (the runtime then finds a guarded one among the call's keywords)."""
        found = self.find_method(qual, "forward")
        summary = self.solver.scope(self.classes[found[0]][0].module, found[1].qualname) if found is not None else None
        return summary is not None and (summary.kwarg is not None or names <= set(summary.params[summary.implicit :]))

    def _binder(self, call: CallRef | None, owner: str, function: FunctionFacts, holder: str | None = None) -> Binder | None:
        """How the guards of what `call` runs become the caller's: the callee's parameters bound to what it passes,
        the tests of its settings to the object the caller names (`holder`: "self" for its own methods)."""
        module = self.classes[owner][0] if owner in self.classes else self.modules.get(owner)
        summary = self.solver.scope(module.module, function.qualname) if call is not None and module is not None else None
        return None if summary is None else partial(guards.bind, passes=call.passes, summary=summary, owner=holder)  # type: ignore[union-attr]

    def _package_function(self, qual: str) -> tuple[str, str, FunctionFacts] | None:
        """(context, owner, facts) of a package function or method; a nested function is judged with its outer one,
        a lambda on its own (`index._lambdas`)."""
        head = qual if qual in self.functions else qual.split(".<locals>.", 1)[0]
        if head in self.functions:
            fmodule, function = self.functions[head]
            return "", fmodule.module, function
        owner, _, name = head.rpartition(".")
        if owner in self.classes:
            found = self.find_method(owner, name)
            if found is not None:
                return owner, found[0], found[1]
        return None

    def _autograd(self, qual: str) -> bool:
        resolved = self.resolve(qual)
        return resolved is not None and any(b.rsplit(".", 1)[-1] in _AUTOGRAD_BASES for b in self.framework_bases(resolved))

    def _autograd_function(self, qual: str, result: _Result, step: str) -> None:
        """`Fn.apply(...)` of a PyLayer / autograd Function: its forward and backward are what runs."""
        for name in ("forward", "backward"):
            found = self.find_method(qual, name)
            if found is not None:
                result.take(self._function("", found[0], found[1]), step)

    def _external_layer(self, cls: str, result: _Result, call: CallRef | None, module: ModuleFacts, line: int, step: str) -> None:
        if self._declared(cls, result, module, line, step):
            return
        kind = fw.layer_kind(cls)
        if kind in ("known", "container", "base"):
            return
        if kind is None and not cls[:1].isalpha():
            return
        short = cls.rsplit(".", 1)[-1]
        if kind is None and fw.is_framework(cls):
            return
        if fw.is_framework(cls) and not short[:1].isupper():
            return  # a framework function stored on self (F.gelu)
        entry = fw.hazard(cls, call.passes if call is not None else None)
        if entry is not None:  # off the list for a hazard read in its source: that hazard, not an unknown
            self._hazard(entry, call, module, line, result, step)
            return
        self._unknown("AG902", cls, call, module, line, result, step)

    def _hazard(self, entry: Layer, call: CallRef | None, module: ModuleFacts, line: int, result: _Result, step: str) -> None:
        """A framework layer whose forward has a definite hazard (`Layer.hazard`): the parent is ineligible by that
        rule, as if its forward held the finding."""
        rule = RULES[entry.hazard]
        self._found(rule, f"{rule.message.format(detail=entry.name)}: {entry.note}", call, module, line, result, step)

    def _value_rules(self, qual: str, call: CallRef, module: ModuleFacts, result: _Result, step: str) -> None:
        """A framework or host library function reached as a value and called (`self.op = torch.nonzero`, then
        `self.op(x)`): the rules that match its name and decide on what such a call shows (`Rule.fires_on_value`)
        find it at this call, as the walk finds `torch.nonzero(x)`."""
        for rule, name in DISPATCH.named(qual):
            if rule.fires_on_value(name, call.passes):
                message = f"{rule.message.format(detail=call.text + '()')}: `{call.text}` is `{qual}`"
                self._found(rule, message, call, module, call.span.line, result, step)

    def _found(self, rule: Rule, message: str, call: CallRef | None, module: ModuleFacts, line: int, result: _Result, step: str) -> None:
        """A hazard that the call itself is, with no body of the package to walk: a finding at the call, and a blocking
        one makes the caller ineligible; a side effect (AG4xx, a frozen random draw) no condition waives. A rule the
        configuration leaves out neither reports nor blocks, as a walk's finding."""
        if not self.keep(rule.code):
            return
        if call is not None:
            self.ledger.add(("finding", Finding(module.path, call.span, rule.code, message, step.split(" → ")[0])))
        if rule.blocks:
            hard = not rule.code.startswith(_WAIVABLE)
            result.absorb(Status.INELIGIBLE, [Reason((), rule.code, message, module.path, line)], step, hard=hard)

    def _unresolved(self, call: CallRef, module: ModuleFacts, result: _Result, step: str) -> None:
        self._unknown("AG901", call.text, call, module, call.span.line, result, step)

    def _unknown(
        self, code: str, detail: str, call: CallRef | None, module: ModuleFacts, line: int, result: _Result, step: str, why: str = ""
    ) -> None:
        """Unresolved calls shape the verdict whatever is reported; the finding is kept only when selected."""
        rule = RULES[code]
        message = rule.message.format(detail=detail) + (f": {why}" if why else "")
        self.ledger.add(("unresolved", detail, module.path, line, call.span.col if call is not None else -1))
        if call is not None and self.keep(code):
            self.ledger.add(("finding", Finding(module.path, call.span, code, message, step.split(" → ")[0])))
        status = {"block": Status.INELIGIBLE, "allow": Status.ELIGIBLE}.get(self.unknown, Status.UNKNOWN)
        result.absorb(status, [Reason((), code, message, module.path, line)], step)

    # ----- what lint reports -----------------------------------------------------------------------------------
    def internal_errors(self) -> list[SourceError]:
        """Every internal error met while indexing or judging, one line each, in file order."""
        failures = {(path, where): detail for path, where, detail in self._report("failure")}
        for module in self.modules.values():
            for cls in module.classes.values():
                if cls.error:
                    failures[(module.path, cls.name)] = cls.error
                for method in cls.methods.values():
                    if method.error:
                        failures[(module.path, method.qualname)] = method.error
            for function in module.functions.values():
                if function.error:
                    failures[(module.path, function.qualname)] = function.error
        return [SourceError(path, message(where, detail), internal=True) for (path, where), detail in sorted(failures.items())]

    def compute_all(self) -> dict[str, Verdict]:
        return {qual: self.verdict(qual) for qual in self.layer_classes()}

    def _refreshed_writes(self) -> dict[tuple[str, str, int], str]:
        """The writes of the layer's state that the verdicts found a refresh through a method of `self` (per function
        and finding, the first test as written), less those some call reaches outside one: a hazard there."""
        found: dict[tuple[str, str, int], str] = {}
        for owner, name, index, text in sorted(self._report("refreshed")):
            found.setdefault((owner, name, index), text)
        for owner, name, index in self._report("unrefreshed"):
            found.pop((owner, name, index), None)
        return found

    def reachable_findings(self) -> list[Finding]:
        """Findings in functions reached from some layer's forward, plus the unresolved calls met on the way."""
        found: list[Finding] = []
        refreshed = self._refreshed_writes()
        for owner, name in self._report("reached"):
            if owner in self.classes:
                if self.classes[owner][1].skipped:
                    continue
                function = self.classes[owner][1].methods.get(name)
            else:
                function = self.modules[owner].functions.get(name)
            if function is None:
                continue
            module = self.classes[owner][0] if owner in self.classes else self.modules[owner]
            off = self._off_conditions(module, function)
            for index, finding in enumerate(function.findings):
                if self.keep(finding.code) and not self._unfounded(function, index):
                    condition = _condition_text(function, function.guard(index), off)
                    refresh = function.refresh(index)
                    text = refresh.text if refresh is not None else refreshed.get((owner, name, index), "")  # no hazard
                    waived = text or condition and finding.code.startswith(_WAIVABLE) or not RULES[finding.code].blocks
                    kept_out = () if waived else guards.keep_out(function, function.guard(index))
                    guard = kept_out[0] if kept_out else ()
                    found.append(replace(finding, condition=condition, guard=guard, refresh=text) if condition or guard or text else finding)
        extra: dict[tuple[str, int, int, str], Finding] = {}
        for (finding,) in self._report("finding"):  # one per place, the same whatever order the calls were judged in
            key = (finding.path, finding.span.line, finding.span.col, finding.code)
            known = extra.get(key)
            if known is None or (finding.message, finding.function) < (known.message, known.function):
                extra[key] = finding
        found.extend(extra.values())
        found.sort(key=Finding.sort_key)
        return found
