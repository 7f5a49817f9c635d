"""When a wrapped layer must re-read its parameters: a counter of registrations on watched layers.

A wrapper keeps its layer's parameter and buffer lists and re-reads them only after a parameter, buffer
or sublayer was registered on a layer inside some wrapped layer (``load_state_dict(assign=True)``,
``block.fc = nn.Linear(...)``). Registrations on other layers do not count: a model that builds a loss
layer in its forward (``CrossEntropyLoss()`` registers its ``weight`` buffer on every call) would
otherwise make every wrapper walk its whole layer on every call, a larger share of a replayed step
than the replay. Each adapter reports registrations from its framework's hooks (``bump``). The same count
moves when an eager run changed the attributes of a layer inside a wrapped layer (``invalidate``,
attributes.py): the wrappers holding that layer then drop their graphs when they read their lists again.
"""

from __future__ import annotations

import weakref
from typing import Any, Iterable

_watched: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> a layer inside a wrapped layer
_count_all = False  # a watched layer could not be referred to weakly: every registration counts
epoch = 0


def watch(layers: Iterable[Any]) -> None:
    """Count registrations on these layers from now on (a wrapper's layer and every layer below it)."""
    global _count_all
    for layer in layers:
        try:
            _watched[id(layer)] = layer
        except TypeError:
            _count_all = True


def bump(layer: Any, *rest: Any) -> None:
    """A registration on ``layer``: counted if the layer is watched."""
    global epoch
    if _count_all or _watched.get(id(layer)) is layer:
        epoch += 1


def invalidate() -> None:
    """Every wrapper reads its lists again at its next call (an eager run changed a layer's attributes)."""
    global epoch
    epoch += 1
