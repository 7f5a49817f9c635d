"""A CPU stand-in for a CUDA graph that keeps graph semantics, so the runtime can be tested without a GPU.

Capture records a computation on the static input buffers; replay recomputes it from those same
buffers and writes the results in place into the same static output buffers. A runtime that forgot
to copy new inputs in, or handed out a static output that the next replay overwrites, gives wrong
numbers here as it would on a GPU. While capturing, the host-syncing tensor methods raise the way a
capturing CUDA stream refuses them (except on tensors that a GPU keeps in host memory, `HostTensors`), the
framework's own "is a graph being captured" answers yes (library code
that skips a check while capturing, `if is_tracing(x): return`, takes the path it takes on a GPU), and
``is_capturing()`` is true. A replay runs with the layers' attributes as the capture left them and undoes
what it changes there, as a graph's kernels read the tensors and host values they were captured with and
run no Python: a runtime that replays a graph after a layer rebound its cache table gives the old table's
numbers here too.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator, Sequence

_MISSING = object()
_depth = 0


class HostSyncDuringCapture(RuntimeError):
    """Raised by a host-syncing call made while a stand-in graph captures."""


def is_capturing() -> bool:
    """True while a stand-in graph records; test layers use it to act like code that syncs."""
    return _depth > 0


def _refuse(name: str, original: Any, host: "HostTensors | None") -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        if host is not None and args and host.holds(args[0]):  # host memory: reading it copies nothing
            return original(*args, **kwargs)
        raise HostSyncDuringCapture(f"operation not permitted when stream is capturing: {name}")

    return refuse


class HostTensors:
    """Tensors in host memory on a GPU, seen while a stand-in graph captures: there every tensor is in host memory,
    so which ones would be is followed from where they are made. Paddle's `shape` fills its output in host memory
    on every device (`analysis/frameworks.py`, HOST_MEMORY_FUNCTIONS), and a kernel whose operands are all in host
    memory (tensors there, or Python numbers) runs there too: a slice of it, its sum with a number. Reading such a
    tensor is no host sync on a GPU, nor then here."""

    def __init__(self, is_tensor: Callable[[Any], bool], sources: Sequence[tuple[Any, str]], carriers: Sequence[tuple[Any, str]]) -> None:
        """``sources``: functions whose result is in host memory; ``carriers``: functions and methods whose
        result is where their operands are."""
        self._is_tensor = is_tensor
        self.sources = list(sources)
        self.carriers = list(carriers)
        self._held: dict[int, Any] = {}

    def holds(self, t: Any) -> bool:
        ref = self._held.get(id(t))
        return ref is not None and ref() is t

    def _hold(self, result: Any) -> Any:
        for t in result if isinstance(result, (tuple, list)) else (result,):
            if self._is_tensor(t):
                self._held[id(t)] = weakref.ref(t, lambda _, key=id(t): self._held.pop(key, None))
        return result

    def _on_host(self, value: Any) -> bool:
        if self._is_tensor(value):
            return self.holds(value)
        if isinstance(value, (tuple, list)):
            return all(self._on_host(v) for v in value)
        return isinstance(value, (int, float, bool, slice, type(None), type(Ellipsis)))

    def source(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def made_on_host(*args: Any, **kwargs: Any) -> Any:
            return self._hold(original(*args, **kwargs))

        return made_on_host

    def carrier(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def where_its_operands_are(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            operands = [*args, *kwargs.values()]
            if any(self._is_tensor(v) for v in operands) and all(self._on_host(v) for v in operands):
                self._hold(result)
            return result

        return where_its_operands_are

    def clear(self) -> None:
        self._held.clear()


def _capturing(*args: Any, **kwargs: Any) -> bool:
    return True


@contextmanager
def refusing_host_syncs(
    targets: Sequence[tuple[Any, str]], queries: Sequence[tuple[Any, str]] = (), host: HostTensors | None = None
) -> Iterator[None]:
    """For the duration of a capture, replace each ``owner.name`` of `targets` by a function that raises (unless
    it reads a tensor of `host`), of `queries` by one that says a graph is being captured, and `host`'s sources
    and carriers by functions that note the tensors in host memory they return."""
    global _depth
    sources, carriers = (host.sources, host.carriers) if host is not None else ([], [])
    saved = [(owner, name, owner.__dict__.get(name, _MISSING)) for owner, name in (*targets, *queries, *sources, *carriers)]
    replaced = [(owner, name, _refuse(f"{getattr(owner, '__name__', owner)}.{name}", getattr(owner, name), host))
                for owner, name in targets]
    replaced += [(owner, name, _capturing) for owner, name in queries]
    if host is not None:
        replaced += [(owner, name, host.source(getattr(owner, name))) for owner, name in sources]
        replaced += [(owner, name, host.carrier(getattr(owner, name))) for owner, name in carriers]
    for owner, name, value in replaced:
        setattr(owner, name, value)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if host is not None:
            host.clear()
        for owner, name, original in reversed(saved):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


class StandInGraph:
    """Graph semantics on CPU: ``replay`` recomputes the captured function and writes in place."""

    def __init__(
        self,
        copy: Callable[[Any, Any], None],
        sync_targets: Sequence[tuple[Any, str]],
        queries: Sequence[tuple[Any, str]] = (),
        attributes: Callable[[], Any] | None = None,
        host: HostTensors | None = None,
    ) -> None:
        """``attributes()``: a snapshot of the captured layers' attributes (attributes.Snapshot), taken
        after the capture; its ``replayed()`` puts them in place for each replay. ``host``: the tensors in
        host memory on a GPU, which may be read while capturing."""
        self._copy = copy
        self._targets = sync_targets
        self._queries = queries
        self._attributes = attributes
        self._host = host
        self._seen: Any = None
        self._fn: Callable[[], list] | None = None
        self.outputs: list = []
        self._live: list = []

    def capture(self, fn: Callable[[], list]) -> list:
        with refusing_host_syncs(self._targets, self._queries, self._host):
            outputs = list(fn())
        self._fn, self.outputs, self._live = fn, outputs, outputs
        self._seen = self._attributes() if self._attributes is not None else None
        return outputs

    def replay(self) -> None:
        if self._fn is None:
            raise RuntimeError("replay before capture")
        with self._seen.replayed() if self._seen is not None else nullcontext():
            fresh = list(self._fn())
        for static, new in zip(self.outputs, fresh):
            if static is not new:
                self._copy(static, new)
        self._live = fresh

    @property
    def live_outputs(self) -> list:
        return self._live
