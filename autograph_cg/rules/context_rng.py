"""AG5xx: streams, collectives, RNG state and per-call Python state: capturable only with care."""

from __future__ import annotations

import ast
from typing import Iterator

from autograph_cg.findings import Severity
from autograph_cg.rules.base import CONTEXT_RNG, Rule, RuleContext


_COLLECTIVES = frozenset(
    {
        "all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "reduce_scatter",
        "reduce_scatter_tensor", "broadcast", "reduce", "scatter", "gather", "all_to_all", "all_to_all_single",
        "alltoall", "alltoall_single", "send", "recv", "isend", "irecv", "stream",
    }
)  # fmt: skip


def _collective(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    return _collective_name(name)


def _collective_name(name: str) -> bool:
    """A collective by its name alone: so whether called as written or through a value."""
    return name.rsplit(".", 1)[-1] in _COLLECTIVES


def _never(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Reported by the index once per class (it needs every method's writes); no per-node check."""
    return iter(())


RULES = (
    Rule(
        code="AG501",
        name="rng-state-in-forward",
        family=CONTEXT_RNG,
        severity=Severity.WARNING,
        message="`{detail}` reads or sets RNG state inside forward",
        what="Finds seeding, RNG get/set state, generator creation and RNG-tracker contexts in code reachable "
        "from forward.",
        why="Graphs keep dropout fresh by advancing the device generator's offset on each replay. Seeding or "
        "restoring state inside the captured region happens once on the host, so replays either repeat the same "
        "random numbers or desynchronize from eager runs. Trackers must be graph-safe (registered generators).",
        example="with get_rng_state_tracker().rng_state():\n    x = self.dropout(x)",
        instead="x = self.dropout(x)  # default generator; the runtime registers it for replay",
        functions=(
            "paddle.seed", "torch.manual_seed", "torch.seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
            "torch.get_rng_state", "torch.set_rng_state", "torch.cuda.get_rng_state", "torch.cuda.set_rng_state",
            "paddle.get_rng_state", "paddle.set_rng_state", "paddle.get_cuda_rng_state", "paddle.set_cuda_rng_state",
            "torch.random.fork_rng", "torch.Generator", "paddle.framework.random.get_rng_state_tracker",
            "paddle.distributed.fleet.meta_parallel.get_rng_state_tracker",
            "paddle.distributed.fleet.layers.mpu.random.get_rng_state_tracker",
        ),  # fmt: skip
        methods=("manual_seed", "get_state", "set_state"),
        invalid=("torch: torch.manual_seed(0)\ny = x", "paddle: paddle.seed(0)\ny = x"),
        valid=("y = F.dropout(x, 0.1)",),
    ),
    Rule(
        code="AG502",
        name="stream-in-forward",
        family=CONTEXT_RNG,
        severity=Severity.WARNING,
        message="`{detail}` switches streams or events inside forward",
        what="Finds stream and event creation, stream contexts and cross-stream waits in code reachable from "
        "forward.",
        why="Work on a side stream is captured only if it forks from and joins back to the capturing stream; "
        "otherwise capture fails (errors 904-906) or the graph misses the work. Events recorded once do not "
        "order later replays.",
        example="with torch.cuda.stream(self.side):\n    y = self.proj(x)",
        instead="y = self.proj(x)  # or fork/join explicitly with wait_stream on both sides",
        functions=(
            "torch.cuda.stream", "torch.cuda.Stream", "torch.cuda.Event", "torch.cuda.set_stream",
            "paddle.device.stream_guard", "paddle.device.cuda.stream_guard", "paddle.device.Stream",
            "paddle.device.Event", "paddle.device.cuda.Stream", "paddle.device.cuda.Event", "paddle.device.set_stream",
        ),  # fmt: skip
        methods=("wait_stream", "record_stream", "wait_event"),
        invalid=("torch: s = torch.cuda.Stream()\ny = x",),
        valid=("y = x",),
    ),
    Rule(
        code="AG503",
        name="collective-in-forward",
        family=CONTEXT_RNG,
        severity=Severity.WARNING,
        message="collective `{detail}` inside forward",
        what="Finds collective communication calls in code reachable from forward.",
        why="NCCL collectives can be captured, but only when every rank captures the same sequence with the "
        "same shapes and the environment allows it (NCCL version, NCCL_GRAPH_REGISTER with expandable "
        "segments, no synchronous all-reduce flags). Review before wrapping.",
        example="dist.all_reduce(x)",
        instead="# keep communication at layer boundaries, or verify capture on every rank",
        prefixes=("torch.distributed.", "paddle.distributed."),
        guard=_collective,
        on_value=lambda name, passes: _collective_name(name),
        invalid=(
            "torch: torch.distributed.all_reduce(x)\ny = x",
            "paddle: paddle.distributed.all_reduce(x)\ny = x",
            "torch: from torch.distributed import all_reduce as sum_over_ranks\nsum_over_ranks(x)\ny = x",
            "paddle: import paddle.distributed as pd_dist\npd_dist.all_reduce(x)\ny = x",
        ),
        valid=(
            "torch: r = torch.distributed.get_rank()\ny = x",
            "torch: from torch.distributed import get_rank as rank_of\nr = rank_of()\ny = x",
        ),
    ),
    Rule(
        code="AG504",
        name="per-call-state-branch",
        family=CONTEXT_RNG,
        severity=Severity.WARNING,
        message="branch on `self.{detail}`, which the layer changes at run time",
        what="Finds conditions on `self` attributes that methods other than `__init__` assign (step counters, "
        "caches, flags flipped by forward). `self.training` is not flagged: the runtime keys graphs on it.",
        why="The branch taken at capture is replayed forever. A change the layer's own forward makes while it runs "
        "eagerly drops its graphs (the runtime watches the layers' attributes), but one made from outside its calls "
        "(a training loop or another method setting the attribute) is not seen unless the runtime keys graphs on it.",
        example="if self.step < self.warmup:\n    x = x * 0.5",
        instead="# pass the value as a forward argument (the runtime keys graphs on non-tensor arguments)",
        check=_never,
        hook="class",
        invalid=(
            "class M(nn.Layer):\n    def forward(self, x):\n        if self.warm:\n            return x\n        return x * 2\n"
            "    def finish(self):\n        self.warm = False\n",
        ),
        valid=(
            "class M(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.warm = True\n"
            "    def forward(self, x):\n        if self.warm:\n            return x\n        return x * 2\n",
        ),
    ),
)
