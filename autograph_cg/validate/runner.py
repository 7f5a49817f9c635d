"""`validate()`: an eager reference run, a pass with the plan's sites wrapped, and one probe pass per layer class.

The static verdicts come from `analyze()` on the package that defines the model's classes; the runs
say what the runtime really did with them. See `autograph-cg validate --help`.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import logging
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from autograph_cg.analysis.verdicts import Guard
from autograph_cg.api import Options, analyze
from autograph_cg.runtime import CUDAGraphedLayer
from autograph_cg.runtime.settings import disabled_by_env
from autograph_cg.sources import display
from autograph_cg.validate.births import Births, recording
from autograph_cg.validate.frameworks import Framework, framework_of
from autograph_cg.validate.outcome import ClassResult, PassResult, Validation, judge
from autograph_cg.validate.passes import (
    FRAMEWORK_PACKAGES,
    Diff,
    Picker,
    class_picker,
    compare,
    dropin_differences,
    graphed_share,
    layers,
    plan_picker,
    presence_differences,
    qualname,
    run,
    run_stats,
    unwrap,
    wrap_where,
)
from autograph_cg.validate.target import Subject, TargetError, build


@dataclass(frozen=True)
class Settings:
    steps: int = 10  # inference calls, then training steps, per pass
    warmup_steps: int = 3  # the runtime's num_warmup_steps
    seed: int = 0
    lr: float = 0.01  # plain SGD
    tolerance: float = 1e-3  # largest relative difference to eager that still matches
    backend: str = "auto"  # "auto": CUDA when the framework sees a device, else the CPU stand-in; "cuda"; "standin"


def package_root(fw: Framework, model: Any) -> str:
    """The package folder (or lone module) that defines the first layer class of the model outside the frameworks."""
    for path in layers(fw, model):
        cls = type(path[-1][0])
        if cls.__module__.split(".")[0] in FRAMEWORK_PACKAGES:
            continue
        try:
            source = inspect.getsourcefile(cls)
        except TypeError:
            source = None
        if source:
            break
    else:
        raise TargetError("no layer class of the model is defined in a source file outside the frameworks")
    folder = os.path.dirname(os.path.abspath(source))
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return source
    while os.path.isfile(os.path.join(os.path.dirname(folder), "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


@contextlib.contextmanager
def _runtime_quiet() -> Iterator[None]:
    """Fallback warnings of deliberately failing probes would drown the report, which lists them all."""
    logger = logging.getLogger("autograph_cg.runtime")
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def validate(
    target: str,
    factory: Callable[[], Any],
    loss_fn: Callable[..., Any] | None = None,
    settings: Settings = Settings(),
    options_for: Callable[[str], Options] = lambda _: Options(),
    progress: Callable[[str], None] = lambda _: None,
) -> Validation:
    """Run the model eagerly and wrapped; raises `TargetError` when the target cannot be loaded or run eagerly."""
    if disabled_by_env():
        raise TargetError(f"{disabled_by_env()} is set: every wrapped layer would run eagerly")
    first = build(factory, target, loss_fn)
    fw = framework_of(first.model)
    backend = settings.backend
    if backend == "auto":
        backend = "cuda" if fw.cuda_available() else "standin"
    elif backend == "cuda" and not fw.cuda_available():
        raise TargetError(f"--backend cuda: {fw.name} sees no CUDA device")

    def place(subject: Subject) -> Subject:
        model, inputs = unwrap(fw, subject.model), subject.inputs
        if backend == "cuda":
            model, inputs = fw.to_cuda(model, inputs)
        return Subject(model, inputs, subject.loss_fn)

    reference = place(first)
    state = fw.state(reference.model)
    package = package_root(fw, reference.model)
    progress(f"analyzing {display(package)}")
    analysis = analyze([package], options_for(package))
    assert analysis.plan is not None  # planned: the options ask for a plan
    verdicts = analysis.plan.verdicts
    probed = list(dict.fromkeys(q for q in (qualname(type(p[-1][0])) for p in layers(fw, reference.model)) if q in verdicts))

    def fresh() -> tuple[Subject, Births]:
        with recording() as births:  # where each layer is made: what ties the plan's sites to the model's layers
            subject = place(build(factory, target, loss_fn))
        fw.load(subject.model, state)
        return Subject(subject.model, reference.inputs, subject.loss_fn), births

    def wrap(layer: Any, name: str, guard: Guard) -> Any:
        return CUDAGraphedLayer(layer, settings.warmup_steps, backend=backend, name=name, guard=dict(guard) or None)

    steps, seed, lr = settings.steps, settings.seed, settings.lr
    with _runtime_quiet():
        progress("eager reference")
        eager = run(fw, reference, reference.model, steps, seed, lr)
        if eager.error:
            raise TargetError(f"the model fails eagerly: {eager.error}")
        progress("eager again: how much eager differs from itself")
        again, _ = fresh()
        trace = run(fw, again, again.model, steps, seed, lr, follow=eager)
        noise = compare(trace, eager) if not trace.error else Diff(0.0, 0.0, True)
        del again, trace

        def wrapped_pass(picker: Callable[[Births], Picker], nested: bool = False) -> tuple[PassResult, tuple[int, int]]:
            subject, births = fresh()
            before = fw.names(subject.model)
            call, wrappers = wrap_where(fw, subject.model, picker(births), wrap, nested)
            share = graphed_share(fw, call)
            changed = dropin_differences(before, fw.names(call)) if wrappers else ()
            trace = run(fw, subject, call, steps, seed, lr, follow=eager)
            changed += presence_differences(fw, subject.model, trace, eager)
            result = judge(run_stats(wrappers), compare(trace, eager), trace.error, settings.tolerance, noise, changed)
            del subject, births, call, wrappers, trace
            gc.collect()
            return result, share

        progress(f"plan: {len(analysis.plan.sites)} site(s)")
        plan, share = wrapped_pass(lambda births: plan_picker(analysis.plan, births), nested=True)
        classes = []
        for i, name in enumerate(probed, 1):
            progress(f"probe {i}/{len(probed)}: {name}")
            result, _ = wrapped_pass(lambda _: class_picker(name))
            verdict = verdicts[name]
            reasons = tuple(r.render() for r in verdict.reasons)
            classes.append(ClassResult(name, verdict.status, reasons, result))
    return Validation(
        target=target,
        framework=fw.name,
        backend=backend,
        steps=steps,
        tolerance=settings.tolerance,
        package=display(package),
        sites=len(analysis.plan.sites),
        share=share,
        plan=plan,
        classes=tuple(classes),
        noise=noise,
    )
