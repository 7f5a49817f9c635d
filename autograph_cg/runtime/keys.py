"""The graph key: everything a capture freezes, so a call replays a graph only when all of it matches."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence


class GraphKey(NamedTuple):
    training: bool  # layer.training (dropout, batch norm)
    needs_grad: bool  # forward + backward graphs, or one inference graph
    context: tuple  # grad mode, inference mode, autocast, as the adapter reads them
    spec: tuple  # structure of args/kwargs and the value of every non-tensor leaf
    tensors: tuple  # (shape, dtype, device, requires_grad[, strides]) per tensor leaf


_FIELDS = ("shape", "dtype", "device", "requires_grad", "strides")


def explain_miss(key: GraphKey, known: Sequence[GraphKey]) -> str:
    """Say how ``key`` differs from the closest known key, for the one-line fallback reason."""
    if not known:
        return "no graph yet"
    other = known[-1]
    if key.training != other.training:
        return f"training={key.training} (graphs exist for training={other.training})"
    if key.needs_grad != other.needs_grad:
        return "grad mode changed" if key.needs_grad else "called without grad"
    if key.context != other.context:
        return f"grad/autocast context {key.context} vs {other.context}"
    if key.spec != other.spec:
        return "non-tensor arguments or argument structure differ"
    if len(key.tensors) != len(other.tensors):
        return f"{len(key.tensors)} tensor arguments vs {len(other.tensors)}"
    for i, (mine, theirs) in enumerate(zip(key.tensors, other.tensors)):
        for name, a, b in zip(_FIELDS, mine, theirs):
            if a != b:
                return f"{name} of tensor argument {i}: {_show(a)} vs {_show(b)}"
    return "same key"


def _show(value: Any) -> str:
    return str(tuple(value)) if isinstance(value, (list, tuple)) else str(value)
