"""The transparent wrapper: a wrapped layer stays the same object, of a subclass of its own class.

``CUDAGraphedLayer(block)`` returns ``block`` itself. Its class becomes a subclass of the original
that has the original's name and only one method of its own, ``forward``, which routes calls
through the graph runtime; everything else (parameters, buffers, sublayers, their names,
``state_dict`` keys, attributes, hooks, ``isinstance``) is the layer's own, because nothing was put
around it. Tracers, compilers and exporters see the original ``forward``: the router steps aside
when they run, and TorchScript reads the original's source through ``__wrapped__``. The runtime's
state lives in one entry of the layer's ``__dict__``; copies and pickles carry its settings, never
graphs. Design and what it rules out: docs/runtime.md, "A wrapper nobody can see".
"""

from __future__ import annotations

import functools
import importlib
import sys
import types
import weakref
from dataclasses import dataclass
from typing import Any, Callable

from .core import Runner
from .options import Settings

KEY = "_autograph_cg"  # the layer's __dict__ entry holding its GraphedState
ORIGINAL = "__autograph_cg_original__"  # on a graphed class: the class it was made from
FORWARD = "__autograph_cg_forward__"  # on a graphed class: the original's forward, which the router runs
PLAIN = "__autograph_cg_plain__"  # on an instance's own router: the forward the instance held before


class Adapter:
    """What a framework adds to the wrapper (each adapter makes one)."""

    ops: Any  # the framework's Ops
    layer_base: type  # torch.nn.Module / paddle.nn.Layer

    def bypass(self) -> bool:
        """True while a tracer, compiler or exporter runs the layer: it must see the original forward."""
        raise NotImplementedError

    def class_methods(self, cls: type) -> dict[str, Any]:
        """Methods the graphed class defines besides ``forward`` (none change behaviour)."""
        return {}

    def is_replica(self, layer: Any) -> bool:
        """A copy a framework made to run the layer elsewhere (torch.nn.DataParallel's replicas)."""
        return False


@dataclass(eq=False)
class GraphedState:
    """The runtime's part of one wrapped layer: its settings and, once bound to it, its runner."""

    settings: Settings
    owner: Any = None  # weak reference to the layer the runner serves
    runner: Runner | None = None

    def __reduce__(self) -> tuple:
        # Copies and pickles carry the settings, never graphs: a copy captures anew.
        return (GraphedState, (self.settings,))

    def serves(self, layer: Any) -> bool:
        return self.owner is not None and self.owner() is layer


def state_of(layer: Any) -> GraphedState | None:
    """The runtime state of a wrapped layer, or None for a layer that is not wrapped."""
    state = getattr(layer, "__dict__", {}).get(KEY)
    return state if isinstance(state, GraphedState) else None


def is_graphed(layer: Any) -> bool:
    return getattr(type(layer), ORIGINAL, None) is not None and state_of(layer) is not None


def original_class(layer: Any) -> type:
    """The class the layer had before it was wrapped."""
    return getattr(type(layer), ORIGINAL, None) or type(layer)


def plain_forward(layer: Any) -> Callable[..., Any]:
    """The wrapped layer's own forward, bound, past the router (what an eager run calls): the
    forward its instance held when it was wrapped (``torch.compile``'s module, a library's hook),
    else its class's."""
    stashed = _stashed(layer)
    return stashed if stashed is not None else functools.partial(getattr(type(layer), FORWARD), layer)


def _stashed(layer: Any) -> Callable[..., Any] | None:
    router = getattr(layer.__dict__.get("forward"), "__func__", None)
    return getattr(router, PLAIN, None)


_classes: "weakref.WeakKeyDictionary[type, type]" = weakref.WeakKeyDictionary()


def graphed_class(cls: type, adapter: Adapter) -> type:
    """The subclass of ``cls`` that wrapped layers of ``cls`` get (one per class, cached)."""
    sub = _classes.get(cls)
    if sub is not None:
        return sub
    orig = cls.forward
    # The router has the original's globals and metadata (``__wrapped__`` included): TorchScript
    # compiles the source and resolves the names it finds there, and those must be the original's.
    template = _router(orig, adapter)
    forward = types.FunctionType(template.__code__, _names_of(orig), "forward", None, template.__closure__)
    functools.update_wrapper(forward, orig)
    namespace = {
        "forward": forward,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__,
        "__reduce_ex__": _reduce_ex,
        "__setstate__": _setstate(cls, adapter),
        ORIGINAL: cls,
        FORWARD: orig,
        **adapter.class_methods(cls),
    }
    sub = types.new_class(cls.__name__, (cls,), {}, lambda ns: ns.update(namespace))
    _classes[cls] = sub
    return sub


def _names_of(fn: Callable[..., Any]) -> dict:
    """The names ``fn``'s source may use: its globals, and the variables of its closure (a class
    defined inside a function reads ``torch`` from there). The router runs on closure variables
    only; TorchScript resolves the source's names in the router's globals."""
    cells = getattr(fn, "__closure__", None)
    if not cells:
        return fn.__globals__
    names = dict(fn.__globals__)
    for name, cell in zip(fn.__code__.co_freevars, cells):
        try:
            names[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            pass
    return names


def _router(orig: Callable[..., Any], adapter: Adapter) -> Callable[..., Any]:
    # Everything the router uses is a closure variable: it runs with the original's globals.
    bypass, route_ = adapter.bypass, route

    def forward(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if bypass():
            return orig(self, *args, **kwargs)
        return route_(self, args, kwargs, orig, adapter)

    return forward


def route(layer: Any, args: tuple, kwargs: dict, orig: Callable[..., Any], adapter: Adapter) -> Any:
    """A call of a wrapped layer's forward (its own hooks already ran in the framework's ``__call__``)."""
    state = layer.__dict__.get(KEY)
    if state.__class__ is GraphedState and state.serves(layer):
        return state.runner(args, kwargs)  # type: ignore[union-attr]
    if not isinstance(state, GraphedState):  # made by the class, not wrapped (a slice of a Sequential)
        return orig(layer, *args, **kwargs)
    if state.owner is not None and adapter.is_replica(layer):
        runner = state.runner
        if runner is not None:
            runner.stats.eager_calls += 1
            runner.stats.fallback("a torch.nn.DataParallel replica (a copy of the layer, run in a thread)")
        return orig(layer, *args, **kwargs)
    # A copy (copy.copy shares the state; deepcopy and pickle carry only its settings): graphs of its own.
    return bind(layer, state.settings, adapter).runner(args, kwargs)  # type: ignore[union-attr]


def bind(layer: Any, settings: Settings, adapter: Adapter) -> GraphedState:
    """Give ``layer`` a runner of its own, and make the wrapped layers below it part of its graphs."""
    name = settings.name or f"{original_class(layer).__name__}#{id(layer) & 0xFFFF:04x}"
    state = GraphedState(settings, weakref.ref(layer))
    state.runner = Runner(adapter.ops, layer, plain_forward(layer), settings, name)
    layer.__dict__[KEY] = state
    for inner in wrapped_inside(layer, adapter):  # nested wrapping: the outer graph covers them
        inner_state = state_of(inner)
        if inner_state is None or not inner_state.serves(inner):
            inner_state = bind(inner, inner_state.settings if inner_state else Settings(), adapter)
        inner_state.runner.outer = state.runner  # type: ignore[union-attr]
    return state


def wrap(layer: Any, adapter: Adapter, settings: Settings) -> Any:
    """Make ``layer`` a wrapped layer in place and return it."""
    cls = original_class(layer)
    if type(layer) is not graphed_class(cls, adapter):
        layer.__class__ = graphed_class(cls, adapter)
    own = layer.__dict__.get("forward")
    if own is not None and _stashed(layer) is None:
        # The instance has a forward of its own, which hides the class's (torch.compile's module sets
        # one, so do libraries that hook a layer): the router takes its place and runs it.
        stashed = own
        router = _router(lambda self, *args, **kwargs: stashed(*args, **kwargs), adapter)
        setattr(router, PLAIN, stashed)
        layer.__dict__["forward"] = types.MethodType(router, layer)
    bind(layer, settings, adapter)
    return layer


def unwrap(layer: Any) -> Any:
    """Undo ``CUDAGraphedLayer(layer)`` in place: the layer's class and ``__dict__`` as before; returns it."""
    cls = getattr(type(layer), ORIGINAL, None)
    if cls is not None:
        layer.__class__ = cls
    stashed = _stashed(layer)
    if stashed is not None:
        layer.__dict__["forward"] = stashed
    layer.__dict__.pop(KEY, None)
    return layer


def wrapped_inside(layer: Any, adapter: Adapter) -> list:
    """The top-most wrapped layers below ``layer`` (not below them)."""
    found, stack = [], list(_children(layer))
    while stack:
        sub = stack.pop()
        if state_of(sub) is not None and getattr(type(sub), ORIGINAL, None) is not None:
            found.append(sub)
        else:
            stack.extend(_children(sub))
    return found


def _children(layer: Any) -> list:
    d = getattr(layer, "__dict__", {})
    children = d.get("_modules") or d.get("_sub_layers") or {}
    return [c for c in children.values() if c is not None]


def _reduce_ex(self: Any, protocol: int) -> tuple:
    """Pickle and copy a wrapped layer as its original class plus the wrapping: the graphed class
    is made anew where it is loaded, as only the original can be found by name."""
    rv = object.__reduce_ex__(self, max(protocol, 2))  # (copyreg.__newobj__, (cls, *args), state, ...)
    cls = getattr(type(self), ORIGINAL)
    return (_new_graphed, (cls, *rv[1][1:]), *rv[2:])


def _setstate(cls: type, adapter: Adapter) -> Callable[[Any, Any], None]:
    """A copy or an unpickled wrapped layer gets its runner as soon as its state is set."""
    base = getattr(cls, "__setstate__", None)

    def __setstate__(self: Any, state: Any) -> None:
        if base is not None:
            base(self, state)
        else:
            self.__dict__.update(state)
        own = self.__dict__.get(KEY)
        if isinstance(own, GraphedState) and own.owner is None:
            bind(self, own.settings, adapter)

    return __setstate__


def _new_graphed(cls: type, *args: Any) -> Any:
    """Unpickle: an instance of the graphed class of ``cls`` (its state is set after)."""
    sub = graphed_class(cls, adapter_for_class(cls))
    return sub.__new__(sub, *args)


_FRAMEWORKS = (("torch", "nn.Module"), ("paddle", "nn.Layer"))


def adapter_for_class(cls: type) -> Adapter:
    """The adapter of the framework whose layer class ``cls`` derives from; the framework is one
    the process imported already, and its adapter is imported now."""
    for framework, base in _FRAMEWORKS:
        module = sys.modules.get(framework)
        if module is not None and isinstance(cls, type) and issubclass(cls, _attr(module, base)):
            return importlib.import_module(f"{__package__}.{framework}_adapter").ADAPTER
    raise TypeError(f"CUDAGraphedLayer wraps a paddle.nn.Layer or a torch.nn.Module, not {cls.__name__}")


def _attr(module: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        module = getattr(module, part)
    return module
