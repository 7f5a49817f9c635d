"""A CPU stand-in for a CUDA graph that keeps graph semantics, so the runtime can be tested without a GPU.

Capture records a computation on the static input buffers; replay recomputes it from those same
buffers and writes the results in place into the same static output buffers. A runtime that forgot
to copy new inputs in, or handed out a static output that the next replay overwrites, gives wrong
numbers here as it would on a GPU. While capturing, the host-syncing tensor methods raise the way a
capturing CUDA stream refuses them, the framework's own "is a graph being captured" answers yes (library code
that skips a check while capturing, `if is_tracing(x): return`, takes the path it takes on a GPU), and
``is_capturing()`` is true. A replay runs with the layers' attributes as the capture left them and undoes
what it changes there, as a graph's kernels read the tensors and host values they were captured with and
run no Python: a runtime that replays a graph after a layer rebound its cache table gives the old table's
numbers here too.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Iterator, Sequence

_MISSING = object()
_depth = 0


class HostSyncDuringCapture(RuntimeError):
    """Raised by a host-syncing call made while a stand-in graph captures."""


def is_capturing() -> bool:
    """True while a stand-in graph records; test layers use it to act like code that syncs."""
    return _depth > 0


def _refuse(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise HostSyncDuringCapture(f"operation not permitted when stream is capturing: {name}")

    return refuse


def _capturing(*args: Any, **kwargs: Any) -> bool:
    return True


@contextmanager
def refusing_host_syncs(targets: Sequence[tuple[Any, str]], queries: Sequence[tuple[Any, str]] = ()) -> Iterator[None]:
    """Replace each ``owner.name`` of `targets` by a function that raises, and of `queries` by one that says a
    graph is being captured, for the duration of a capture."""
    global _depth
    saved = [(owner, name, owner.__dict__.get(name, _MISSING)) for owner, name in (*targets, *queries)]
    for owner, name in targets:
        setattr(owner, name, _refuse(f"{getattr(owner, '__name__', owner)}.{name}"))
    for owner, name in queries:
        setattr(owner, name, _capturing)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
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
    ) -> None:
        """``attributes()``: a snapshot of the captured layers' attributes (attributes.Snapshot), taken
        after the capture; its ``replayed()`` puts them in place for each replay."""
        self._copy = copy
        self._targets = sync_targets
        self._queries = queries
        self._attributes = attributes
        self._seen: Any = None
        self._fn: Callable[[], list] | None = None
        self.outputs: list = []
        self._live: list = []

    def capture(self, fn: Callable[[], list]) -> list:
        with refusing_host_syncs(self._targets, self._queries):
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
