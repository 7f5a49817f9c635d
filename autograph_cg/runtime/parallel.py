"""Parallel engines a graph can't run under, found in the wrapped layer before a capture.

Data parallelism inside the wrapper (``DDP(CUDAGraphedLayer(model))``, a DataParallel holding
wrapped blocks) works: the reducer is told about every replayed backward (see ``Runner.__call__``).
What is refused here would train wrongly through a graph: an engine whose forward or backward does
host work a replay skips (a DDP or DataParallel inside the wrapper), or one that gathers parameters
before each use and frees them after (FSDP, ZeRO stage 3), or that splits them across ranks with
collectives inside the layer (tensor and pipeline parallelism). The layer then runs eagerly, with the
reason in ``report()``. An engine's module is only looked up, never imported: if it isn't imported,
it isn't in use. The table of engines is in docs/runtime.md.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator

_OUTSIDE = "wrap the layer it holds instead, e.g. {cls}(CUDAGraphedLayer(model))"
_SHARDED = "its parameters are gathered before each use and freed after, so a graph would read freed memory"
_SPLIT = "it runs collectives between ranks inside the layer, around what a graph would replay"


def _classes(*names: str) -> Iterator[type]:
    for name in names:
        module, _, attr = name.rpartition(".")
        cls = getattr(sys.modules.get(module), attr, None)
        if isinstance(cls, type):
            yield cls


def _first(pairs: Iterator[tuple[str, Any]], classes: tuple[type, ...]) -> tuple[str, str] | None:
    """The first (name, type name) of the objects that are instances of one of ``classes``."""
    if classes:
        for name, obj in pairs:
            if isinstance(obj, classes):
                return name or "the layer", type(obj).__name__
    return None


def torch_reason(layer: Any) -> str | None:
    """Why ``layer`` (a ``torch.nn.Module``) must run eagerly under a parallel engine; None if it need not."""
    outside = tuple(_classes(
        "torch.nn.parallel.distributed.DistributedDataParallel", "torch.nn.parallel.data_parallel.DataParallel"
    ))
    found = _first(layer.named_modules(), outside)
    if found:
        cls = found[1]
        return (
            f"{found[0]} is a {cls}: its forward prepares gradient reduction (and replicas), which a "
            "replay skips; " + _OUTSIDE.format(cls="DDP" if "Distributed" in cls else cls)
        )
    sharded = tuple(_classes(
        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.FSDPModule",
        "torch.distributed._composable.fsdp.FSDPModule",
    ))
    found = _first(layer.named_modules(), sharded)
    if found:
        return f"{found[0]} is sharded by FSDP ({found[1]}): {_SHARDED}"
    found = _first(layer.named_parameters(), tuple(_classes("torch.distributed.tensor.DTensor")))
    if found:
        return f"parameter {found[0]} is a DTensor (tensor parallel or FSDP): {_SPLIT}"
    for name, p in layer.named_parameters():
        if getattr(p, "_fsdp_flattened", False):
            return f"parameter {name} is a view of an FSDP flat parameter: {_SHARDED}"
    torch = sys.modules["torch"]
    for name, m in layer.named_modules():
        for attr, value in vars(m).items():
            if isinstance(value, torch.Tensor) and value.requires_grad:
                where = f"{name}.{attr}" if name else attr
                return (
                    f"{where} needs grad but is no registered parameter (FSDP's flat-parameter views do "
                    "this): a graph would hold it as a constant"
                )
    return _sharded_above(layer)


def _sharded_above(layer: Any) -> str | None:
    """FSDP2 (``fully_shard``) on a module that holds ``layer``: found through the registry of
    composable states, the only trace it leaves that the layer can see."""
    states = getattr(sys.modules.get("torch.distributed._composable_state"), "_module_state_mapping", None)
    if not states:
        return None
    for module, state in list(states.items()):
        if "FSDP" in type(state()).__name__ and any(m is layer for m in module.modules()):
            holder = type(module).__name__
            return f"a module holding the layer ({holder}) is sharded by FSDP (fully_shard): {_SHARDED}"
    return None


def paddle_reason(layer: Any) -> str | None:
    """Why ``layer`` (a ``paddle.nn.Layer``) must run eagerly under a parallel engine; None if it need not."""
    sublayers = [("", layer), *layer.named_sublayers()]
    found = _first(iter(sublayers), tuple(_classes("paddle.distributed.parallel.DataParallel")))
    if found:
        return (
            f"{found[0]} is a DataParallel: its gradient reduction is prepared in its own forward, which a "
            "replay skips; " + _OUTSIDE.format(cls="paddle.DataParallel")
        )
    fleet = "paddle.distributed.fleet.meta_parallel"
    found = _first(iter(sublayers), tuple(_classes(
        f"{fleet}.sharding.group_sharded_stage2.GroupShardedStage2",
        f"{fleet}.sharding.group_sharded_stage3.GroupShardedStage3",
        f"{fleet}.sharding.group_sharded_fully_shard.FullyShard",
    )))
    if found:
        return f"{found[0]} is sharded ({found[1]}): {_SHARDED}"
    found = _first(iter(sublayers), tuple(_classes(
        f"{fleet}.meta_parallel_base.MetaParallelBase",
        f"{fleet}.parallel_layers.pp_layers.PipelineLayer",
        "paddle.distributed.fleet.layers.mpu.mp_layers.VocabParallelEmbedding",
        "paddle.distributed.fleet.layers.mpu.mp_layers.ColumnParallelLinear",
        "paddle.distributed.fleet.layers.mpu.mp_layers.RowParallelLinear",
        "paddle.distributed.fleet.layers.mpu.mp_layers.ParallelCrossEntropy",
    )))
    if found:
        return f"{found[0]} is a fleet {found[1]}: {_SPLIT}"
    for name, p in layer.named_parameters():
        if getattr(p, "is_dist", bool)():
            return f"parameter {name} is a distributed tensor (auto parallel): {_SPLIT}"
    return None
