"""Across the package: which layer classes can be captured whole, and why not.

A class is eligible when its forward, every method and package function it calls, and every sublayer it
invokes are free of blocking findings. Calls are resolved through imports and re-exports; a cycle counts as
eligible until something on it says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.facts import CallRef, ClassFacts, FunctionFacts, ModuleFacts
from autograph_cg.analysis.failures import INTERNAL, describe, message
from autograph_cg.analysis.index import REFERENCE
from autograph_cg.analysis.verdicts import Reason, Status, Verdict
from autograph_cg.findings import Finding, SourceError
from autograph_cg.rules.registry import RULES

MAX_REASONS = 8
_STATUS_ORDER = {Status.ELIGIBLE: 0, Status.UNKNOWN: 1, Status.SKIPPED: 2, Status.INELIGIBLE: 3}


@dataclass
class _Result:
    status: Status = Status.ELIGIBLE
    reasons: list[Reason] = field(default_factory=list)

    def absorb(self, status: Status, reasons: Iterable[Reason], step: str | None) -> None:
        if status is Status.SKIPPED:
            status = Status.INELIGIBLE
        if _STATUS_ORDER[status] > _STATUS_ORDER[self.status]:
            self.status = status
        if status is Status.ELIGIBLE:
            return
        for reason in reasons:
            if len(self.reasons) >= MAX_REASONS:
                return
            chain = (step, *reason.chain) if step else reason.chain
            self.reasons.append(Reason(chain, reason.code, reason.message, reason.path, reason.line))


def _internal(where: str, detail: str, path: str, line: int) -> Reason:
    return Reason((), INTERNAL, detail, path, line)


class Package:
    """All facts of one run, indexed for resolution, with the verdicts computed on demand."""

    def __init__(
        self,
        modules: list[ModuleFacts],
        keep: Callable[[str], bool],
        unknown: str = "unknown",
    ) -> None:
        self.modules = {m.module: m for m in modules}
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
        self._layer: dict[str, bool] = {}
        self._function_memo: dict[tuple[str, str, str], _Result] = {}
        self._in_progress: set[tuple[str, str, str]] = set()
        self._class_memo: dict[str, Verdict] = {}
        self.reached: set[tuple[str, str]] = set()  # (owner class or module, function name) reached from a forward
        self.extra_findings: dict[tuple[str, int, int, str], Finding] = {}
        self.shallow_reached: set[str] = set()  # files forward code reaches where something was not indexed yet
        self._failures: dict[tuple[str, str], str] = {}  # (path, where) -> an internal error of the verdict pass

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
        for owner in self.mro(qual)[1 if skip_self else 0 :]:
            method = self.classes[owner][1].methods.get(name)
            if method is not None:
                return owner, method
        return None

    def attr_classes(self, qual: str, attr: str) -> tuple[list[str], str | None]:
        """The classes `self.<attr>` may hold, and a class assumed from a constructor default, if any."""
        for owner in self.mro(qual):
            module, cls = self.classes[owner]
            self._touch(module)
            if attr in cls.attr_classes:
                return list(cls.attr_classes[attr]), None
            if attr in cls.attr_defaults:
                return [cls.attr_defaults[attr]], cls.attr_defaults[attr]
        return [], None

    def _touch(self, module: ModuleFacts) -> None:
        """Forward code needs this file's bodies or sublayers: ask for its deep index."""
        if not module.deep:
            self.shallow_reached.add(module.path)

    # ----- verdicts --------------------------------------------------------------------------------------------
    def verdict(self, qual: str) -> Verdict:
        known = self._class_memo.get(qual)
        if known is not None:
            return known
        module, cls = self.classes[qual]
        self._touch(module)
        if cls.skipped:
            verdict = Verdict(qual, module.path, cls.line, Status.SKIPPED, (Reason((cls.name,), "skip", "skipped by `# autograph-cg: skip`", module.path, cls.line),))
            self._class_memo[qual] = verdict
            return verdict
        self._class_memo[qual] = Verdict(qual, module.path, cls.line, Status.ELIGIBLE)  # cycles: optimistic
        in_progress = set(self._in_progress)
        try:
            result = self._class_result(qual)
        except RecursionError:
            raise
        except Exception as exc:  # an analyzer bug on one class: it ends unknown, the others are still judged
            self._in_progress = in_progress
            detail = describe(exc)
            self._failures[(module.path, cls.name)] = detail
            result = _Result()
            result.absorb(Status.UNKNOWN, [_internal(cls.name, detail, module.path, cls.line)], None)
        verdict = Verdict(qual, module.path, cls.line, result.status, tuple(result.reasons))
        self._class_memo[qual] = verdict
        return verdict

    def _class_result(self, qual: str) -> _Result:
        result = _Result()
        found = self.find_method(qual, "forward")
        module, cls = self.classes[qual]
        for owner in self.mro(qual):
            failed = self.classes[owner][1]
            if failed.error:
                result.absorb(Status.UNKNOWN, [_internal(failed.name, failed.error, self.classes[owner][0].path, failed.line)], None)
        if found is None:
            external = [b for b in self.framework_bases(qual) if fw.layer_kind(b) not in ("base", None)]
            if not external:
                result.absorb(Status.UNKNOWN, [Reason((cls.name,), "AG902", "no forward method found", module.path, cls.line)], None)
            for base in external:
                self._external_layer(base, result, None, module, cls.line, cls.name)
            return result
        owner, method = found
        status, reasons = self._function(qual, owner, method)
        result.absorb(status, reasons, None)
        return result

    def _function(self, context: str, owner: str, function: FunctionFacts) -> tuple[Status, list[Reason]]:
        key = (context, owner, function.name)
        memo = self._function_memo.get(key)
        if memo is not None:
            return memo.status, memo.reasons
        if key in self._in_progress:
            return Status.ELIGIBLE, []
        self._in_progress.add(key)
        self.reached.add((owner, function.name))
        module = self.classes[owner][0] if owner in self.classes else self.modules[owner]
        self._touch(module)
        if not function.walked:
            self.shallow_reached.add(module.path)
        step = function.qualname
        result = _Result()
        if function.error:
            result.absorb(Status.UNKNOWN, [_internal(function.qualname, function.error, module.path, function.line)], step)
        for finding in function.findings:
            if not self.keep(finding.code):
                continue
            rule = RULES[finding.code]
            if rule.blocks:
                result.absorb(Status.INELIGIBLE, [Reason((), finding.code, finding.message, finding.path, finding.line)], step)
        for call in function.calls:
            self._call(context, owner, module, call, result, step)
        self._in_progress.discard(key)
        self._function_memo[key] = result
        return result.status, result.reasons

    def _call(self, context: str, owner: str, module: ModuleFacts, call: CallRef, result: _Result, step: str) -> None:
        kind, target = call.kind, call.target
        if kind == "self" and context in self.classes:
            method = self.find_method(context, target)
            if method is not None:
                status, reasons = self._function(context, method[0], method[1])
                result.absorb(status, reasons, step)
                return
            classes, assumed = self.attr_classes(context, target)
            if not classes:
                self._unresolved(call, module, result, step)
                return
            for cls in classes:
                self._sublayer(cls, call, module, result, f"{step} → self.{target}", assumed)
        elif kind == "self-attr" and context in self.classes:
            attr, _, method_name = target.partition(".")
            classes, _ = self.attr_classes(context, attr)
            if not classes:
                self._unresolved(call, module, result, step)
                return
            for cls in classes:
                resolved = self.resolve(cls.lstrip(REFERENCE))
                if resolved is not None and resolved in self.classes:
                    method = self.find_method(resolved, method_name)
                    if method is not None:
                        status, reasons = self._function(resolved, method[0], method[1])
                        result.absorb(status, reasons, f"{step} → self.{attr}")
                        continue
                if fw.layer_kind(cls) in ("known", "container"):
                    continue
                self._unresolved(call, module, result, step)
        elif kind == "super" and context in self.classes:
            start = owner if owner in self.classes else context
            method = self.find_method(start, target, skip_self=True)
            if method is not None:
                status, reasons = self._function(context, method[0], method[1])
                result.absorb(status, reasons, step)
        elif kind == "name":
            resolved = self.resolve(target)
            if resolved is None:
                if fw.is_framework(target) or target.rsplit(".", 1)[-1][:1].isupper() and not self.in_package(target):
                    return
                self._unresolved(call, module, result, step)
            elif resolved in self.functions:
                fmodule, function = self.functions[resolved]
                status, reasons = self._function("", fmodule.module, function)
                result.absorb(status, reasons, step)
        elif kind == "instance":  # a layer built in forward and called: `loss_fct = CrossEntropyLoss(); loss_fct(y)`
            self._sublayer(target, call, module, result, f"{step} → {call.text}", None)
        elif kind == "unresolved" or kind in ("self", "self-attr", "super"):
            self._unresolved(call, module, result, step)

    def _sublayer(self, cls: str, call: CallRef, module: ModuleFacts, result: _Result, step: str, assumed: str | None) -> None:
        stored = cls.startswith(REFERENCE)
        cls = cls[len(REFERENCE) :] if stored else cls
        resolved = self.resolve(cls)
        if resolved is not None and resolved in self.classes:
            if not self.is_layer(resolved):
                return
            verdict = self.verdict(resolved)
            result.absorb(verdict.status, verdict.reasons, step)
            return
        if resolved is not None and stored:  # a package function stored on self and called in forward
            fmodule, function = self.functions[resolved]
            status, reasons = self._function("", fmodule.module, function)
            result.absorb(status, reasons, step)
            return
        if resolved is not None:  # built by a package factory function: which class it returns is not known
            self._unknown("AG902", f"{cls}() (a factory)", call, module, call.span.line, result, step)
            return
        self._external_layer(cls, result, call, module, call.span.line, step)

    def _external_layer(self, cls: str, result: _Result, call: CallRef | None, module: ModuleFacts, line: int, step: str) -> None:
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
        self._unknown("AG902", cls, call, module, line, result, step)

    def _unresolved(self, call: CallRef, module: ModuleFacts, result: _Result, step: str) -> None:
        self._unknown("AG901", call.text, call, module, call.span.line, result, step)

    def _unknown(self, code: str, detail: str, call: CallRef | None, module: ModuleFacts, line: int, result: _Result, step: str) -> None:
        """Unresolved calls shape the verdict whatever is reported; the finding is kept only when selected."""
        rule = RULES[code]
        message = rule.message.format(detail=detail)
        if call is not None and self.keep(code):
            key = (module.path, call.span.line, call.span.col, code)
            if key not in self.extra_findings:
                self.extra_findings[key] = Finding(module.path, call.span, code, message, step.split(" → ")[0])
        status = {"block": Status.INELIGIBLE, "allow": Status.ELIGIBLE}.get(self.unknown, Status.UNKNOWN)
        result.absorb(status, [Reason((), code, message, module.path, line)], step)

    # ----- what lint reports -----------------------------------------------------------------------------------
    def internal_errors(self) -> list[SourceError]:
        """Every internal error met while indexing or judging, one line each, in file order."""
        failures = dict(self._failures)
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

    def reachable_findings(self) -> list[Finding]:
        """Findings in functions reached from some layer's forward, plus the unresolved calls met on the way."""
        found: list[Finding] = []
        for owner, name in self.reached:
            if owner in self.classes:
                if self.classes[owner][1].skipped:
                    continue
                function = self.classes[owner][1].methods.get(name)
            else:
                function = self.modules[owner].functions.get(name)
            if function is None:
                continue
            found.extend(f for f in function.findings if self.keep(f.code))
        found.extend(self.extra_findings.values())
        found.sort(key=Finding.sort_key)
        return found
