"""AG4xx: Python-side effects in forward, which run once at capture and never on replay."""

from __future__ import annotations

import ast
from typing import Iterator

from autograph_cg.analysis.frameworks import PARAMETERLESS, layer_kind
from autograph_cg.findings import Severity
from autograph_cg.rules.base import SIDE_EFFECTS, Passes, Rule, RuleContext


_REPLAY_WHY = (
    "A replay runs the recorded GPU work only: Python code around it runs once, during capture. State kept on "
    "the host stops changing after capture, silently."
)
#: What AG401 and AG407 say of a write of the layer's state that only a test of that state lets run.
_REFRESH = (
    "A write in the body of an `if` of the same method whose test reads an attribute of `self` that this body writes, "
    "in every way the test may hold (each operand of an `or`), is a refresh (`if n > self.max_len: self.max_len = n; "
    "self.table = ...`, `if self.t.dtype != x.dtype: self.t = ...`, `if self.cache is None: ...`): it is listed with "
    "that test (`refresh` in JSON and SARIF) and does not block. So are the writes of the layer's state in a method "
    "of `self` that such a body calls, and in the methods of `self` it calls (three calls deep), for that call only: "
    "`if seq_len > self.max_seq_len_cached: self._set_cos_sin_cache(seq_len)`, the test reading, in every way it may "
    "hold, what the body or those methods write; where the same method is also called outside such a body, its writes "
    "block there (and `lint` lists them without `refresh`). The runtime keeps no graph from a capture in which the layer's state changed, and drops the graphs that "
    "may have read it when an eager call changes it; between replays the test's answer cannot change, since it "
    "reads the layer's state and host values the graph's key fixes. A test of anything else (a flag, an argument, "
    "`self.training`), one that may also hold whatever the state (`self.deltas is None or past_length == 0`: "
    "per-call state), a write in the `else` branch, a test that reads a tensor's value, or a write in a closure is "
    "no refresh; what else the branch does is judged as always."
)


def _self_write(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.Attribute)
    yield node, "self." + node.attr


def _global_write(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.Name)
    yield node, node.id


def _outer(ctx: RuleContext, node: ast.expr) -> str | None:
    """`self.X`, a module-level name, or an object the caller passed to forward, or a part of one, through a local
    alias too (`cache = past.layers[i]`): they outlive the call. A tensor written in place is GPU work the graph
    records."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return "self." + node.attr
    if isinstance(node, ast.Name) and ctx.is_global(node.id):
        return node.id
    if ctx.owned(node) is not None:
        return ast.unparse(node)
    return None


def _container_mutation(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """`self.cache.append(x)` (a call), `self.cache[k] = x` or `past.seen = n` (assignment targets)."""
    if isinstance(node, ast.Subscript):
        owner = _outer(ctx, node.value)
        if owner is not None:
            yield node, f"{owner}[...] ="
    elif isinstance(node, ast.Attribute):  # an attribute set on an object the caller passed (not on self: AG401)
        if ctx.owned(node.value) is not None:
            yield node, f"{ast.unparse(node)} ="
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = _outer(ctx, node.func.value)
        if owner is not None:
            yield node, f"{owner}.{node.func.attr}()"


def _host_draw(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    """PyTorch's factories draw on the device they are given; without one, on the CPU (a `**kwargs` may give one)."""
    if not name.startswith("torch."):
        return True
    return not any(k.arg is None or (k.arg == "device" and not _is_none(k.value)) for k in call.keywords)


def _host_draw_passed(name: str, passes: Passes) -> bool:
    """`_host_draw` for a random factory reached as a value: no `device` passed (a `**kw` may pass one)."""
    if not name.startswith("torch."):
        return True
    return not any(key is None or (key == "device" and value != ("c", None)) for key, value in passes)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


#: Framework functions that create a parameter (the rule's own list: they fire by name).
_CREATES = ("paddle.create_parameter",)


def _layer_in_forward(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    """Parameters, hooks, and layers that own parameters; a loss or activation object built in forward is fine."""
    qual = ctx.qualify(call.func)
    if qual is None or qual in _CREATES:
        return True
    short = qual.rsplit(".", 1)[-1]
    if not short[:1].isupper() or ".initializer." in qual or short in PARAMETERLESS:
        return False
    return layer_kind(qual) in ("known", "framework", "container")


def _logger(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    return isinstance(receiver, (ast.Name, ast.Attribute)) and "log" in ast.unparse(receiver).lower()


def _print_host(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    return not any(ctx.is_tensor(a) for a in call.args)


def _logging(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    """`print` of host values, a logger's method, or any `logging.`/`warnings.warn`/`tqdm.` function."""
    if name == "print":
        return _print_host(ctx, call, name)
    if "." not in name:  # a method name: only on something that looks like a logger
        return _logger(ctx, call, name)
    return True


RULES = (
    Rule(
        code="AG401",
        name="state-in-forward",
        family=SIDE_EFFECTS,
        severity=Severity.ERROR,
        message="assigning `{detail}` in forward changes layer state that replays will not update",
        what="Finds assignments to attributes of `self` (`self.x = ...`, `self.n += 1`) in code reachable from "
        "forward. " + _REFRESH,
        why=_REPLAY_WHY + " A counter stays at its capture-time value; a cached tensor keeps pointing at a graph "
        "buffer that the next replay overwrites.",
        example="self.num_calls += 1\nself.last_attn = attn",
        instead="self.register_buffer('num_calls', paddle.zeros([1]))  # in __init__\nself.num_calls.add_(paddle.ones([1]))  # device-side, captured\n"
        "# a cache: rewrite it only where its own test finds it stale (a refresh)\n"
        "if x.shape[1] > self.max_len:\n    self.max_len = x.shape[1]\n    self.table = make_table(self.max_len)",
        check=_self_write,
        hook="self-write",
        invalid=(
            "self.count = 1\ny = x",
            "self.last = x",
            "if self.count < 10:\n    y = x\nelse:\n    self.count = 0",
            "if x.shape[0] > 1:\n    self.last = x",
            "if self.table is not None and self.table.shape[0] >= x.shape[0]:\n    y = self.table\nelse:\n    self.table = x * 2",
            "if x.sum() > self.limit:\n    self.limit = x.shape[0]",
            "if self.deltas is None or x.shape[0] == 1:\n    self.deltas = x * 2",
            "if self.table is None or self.table.shape[0] < x.shape[0]:\n    self.table = x * 2\n    def later():\n        self.seen = x\n    self.hook = later",
        ),
        valid=(
            "y = self.scale * x",
            "if x.shape[1] > self.max_len:\n    self.max_len = x.shape[1]\n    self.table = x[0] * 2\ny = self.table",
            "if self.cache is None or x.shape[0] > self.cache.shape[0]:\n    self.cache = x * 0\ny = x + self.cache[: x.shape[0]]",
            "paddle: if self.scale.dtype != x.dtype:\n    self.scale = self.scale.astype(x.dtype)\ny = x * self.scale",
            "torch: if self.scale.dtype != x.dtype:\n    self.scale = self.scale.to(x.dtype)\ny = x * self.scale",
            "if not getattr(self, 'warned', False):\n    self.warned = True\ny = x",
            "if self.enabled and (self.table is None or self.table.shape[0] < x.shape[0]):\n    self.table = x * 2",
        ),
    ),
    Rule(
        code="AG402",
        name="global-state-in-forward",
        family=SIDE_EFFECTS,
        severity=Severity.ERROR,
        message="writing global `{detail}` in forward is a host side effect replays skip",
        what="Finds assignments to names declared `global` in code reachable from forward.",
        why=_REPLAY_WHY,
        example="global STEP\nSTEP += 1",
        instead="# count steps in the training loop, outside the graphed layer",
        check=_global_write,
        hook="global-write",
        invalid=("global STEP\nSTEP = 1",),
        valid=("step = 1",),
    ),
    Rule(
        code="AG403",
        name="outer-container-mutation",
        family=SIDE_EFFECTS,
        severity=Severity.ERROR,
        message="`{detail}` in forward mutates a container that outlives the call",
        what="Finds `append`, `extend`, `update`, item assignment and similar on `self.<attr>`, module-level "
        "containers, and objects passed to `forward` as arguments or any part of them (`past.layers[i]`), also "
        "through a local alias (`cache = past.self_attention_cache; cache.update(k, v)`), and attributes set on "
        "such objects (`past.seen_tokens = n`), in code reachable from forward.",
        why=_REPLAY_WHY + " Tensors stored this way are graph buffers, overwritten by every replay.",
        example="self.cache.append(k)",
        instead="return out, k  # return what the caller needs and let it keep it",
        check=_container_mutation,
        hook="container-mutation",
        invalid=(
            "self.cache.append(x)",
            "self.stats['x'] = x",
            "class Case(nn.Module):\n    def forward(self, x, feats):\n        feats.append(x)\n        return x",
            "class Case(nn.Layer):\n    def forward(self, x, cache):\n        cache['k'] = x\n        return cache.get('v')",
            "class Case(nn.Module):\n    def forward(self, x, past):\n        cache = past.self_attention_cache\n        cache.update(x)\n        return x",
            "class Case(nn.Module):\n    def forward(self, x, past):\n        past.is_updated[0] = True\n        return x",
            "class Case(nn.Layer):\n    def forward(self, x, past):\n        for layer in past.layers:\n            layer.append(x)\n        return x",
            "class Case(nn.Module):\n    def forward(self, x, past: Cache):\n        past.seen_tokens = 1\n        return x",
        ),
        valid=(
            "outs = []\nouts.append(x)",
            "x[mask] = 0.0",
            "class Case(nn.Module):\n    def forward(self, x, feats):\n        feats = list(feats)\n        feats.append(x)\n        return feats",
            "class Case(nn.Module):\n    def forward(self, x, past):\n        cache = dict(past.layers)\n        cache.update(k=x)\n        return cache",
            "class Case(nn.Module):\n    def forward(self, x, past):\n        y = x[0]\n        y[0] = 1.0\n        return y",
            "class Case(nn.Module):\n    def forward(self, x):\n        x.requires_grad = False\n        return x",
            "class Case(nn.Layer):\n    def forward(self, x):\n        shape = x.shape\n        shape[0] = 1\n        return x.reshape(shape)",
        ),
    ),
    Rule(
        code="AG404",
        name="host-rng-in-forward",
        family=SIDE_EFFECTS,
        severity=Severity.ERROR,
        message="`{detail}` draws a host random number, frozen at capture",
        what="Finds Python `random` and NumPy random calls in code reachable from forward, PyTorch's random "
        "factories called without a `device` (they draw on the CPU generator), and framework layers whose kernels "
        "take their seed on the host at launch (Paddle's `Dropout2D`, `AlphaDropout`, the fused transformer "
        "layers: `framework_layers.py` names them, with what was read).",
        why=_REPLAY_WHY + " The number drawn at capture is reused by every replay (e.g. stochastic depth that "
        "always keeps or always drops, a channel permutation that never changes); a CPU tensor copied to the "
        "device inside a capture may also fail it.",
        example="if random.random() < self.drop_prob:\n    return x",
        instead="keep = (paddle.rand([x.shape[0], 1, 1]) >= self.drop_prob).astype(x.dtype)\nreturn x * keep / (1 - self.drop_prob)",
        prefixes=("random.", "numpy.random."),
        functions=("torch.rand", "torch.randn", "torch.randint", "torch.randperm"),
        guard=_host_draw,
        on_value=_host_draw_passed,
        invalid=(
            "import random\np = random.random()\ny = x * p",
            "p = np.random.rand()\ny = x * p",
            "torch: order = torch.randperm(4)\ny = x[:, order]",
            "torch: noise = torch.randn(x.shape).to(x.device)\ny = x + noise",
            "import random\ndraw = random.choice\ny = draw(x)",
            "torch: class Case(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.draw = torch.randperm\n"
            "    def forward(self, x):\n        return x[:, self.draw(x.shape[1])]\n",
            "paddle: class Case(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.drop = "
            "nn.Dropout2D(0.1)\n    def forward(self, x):\n        return self.drop(x)\n",
        ),
        valid=(
            "torch: y = torch.rand_like(x)",
            "paddle: y = paddle.rand(x.shape)",
            "torch: order = torch.randperm(4, device=x.device)\ny = x[:, order]",
            "torch: y = x + torch.randn(x.shape, **where)",
            "torch: class Case(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.draw = torch.randperm\n"
            "    def forward(self, x):\n        return x[:, self.draw(x.shape[1], device=x.device)]\n",
            "paddle: class Case(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.drop = "
            "nn.Dropout(0.1)\n    def forward(self, x):\n        return self.drop(x)\n",
        ),
    ),
    Rule(
        code="AG405",
        name="host-time-in-forward",
        family=SIDE_EFFECTS,
        severity=Severity.WARNING,
        message="`{detail}` reads the host clock once, at capture",
        what="Finds `time` and `datetime` clock reads in code reachable from forward.",
        why=_REPLAY_WHY + " Timings taken inside a graphed layer measure the capture, not the replays.",
        example="t0 = time.perf_counter()",
        instead="# time the step outside the graphed layer, with device events",
        prefixes=("time.", "datetime."),
        invalid=("import time\nt = time.time()\ny = x",),
        valid=("y = x",),
    ),
    Rule(
        code="AG406",
        name="logging-in-forward",
        family=SIDE_EFFECTS,
        severity=Severity.WARNING,
        message="`{detail}` logs once, at capture; replays log nothing",
        what="Finds logging, warnings, `print` of host values and progress bars in code reachable from forward.",
        why=_REPLAY_WHY,
        example='logger.info("routing %d tokens", n)',
        instead="# log from the training loop, with the layer's outputs",
        prefixes=("logging.", "warnings.warn", "tqdm."),
        builtins=("print",),
        methods=("info", "debug", "warning", "warn", "error", "exception", "critical"),
        guard=_logging,
        on_value=lambda name, passes: True,  # a qualified name reached as a value: a logging or warnings function
        invalid=(
            'print("step")\ny = x',
            'import logging\nlogging.info("x")\ny = x',
            'from logging import info as log_info\nlog_info("x")\ny = x',
        ),
        valid=("y = x", 'from report_tools import info as log_info\nlog_info("x")\ny = x'),
    ),
    Rule(
        code="AG407",
        name="create-in-forward",
        family=SIDE_EFFECTS,
        severity=Severity.ERROR,
        message="`{detail}` creates parameters, layers or hooks on every forward call",
        what="Finds parameter and buffer creation, layer construction and hook registration in code reachable "
        "from forward. `self.register_buffer(\"name\", ...)` writes the layer's state `name`: under a test of that "
        "state it is a refresh, as for AG401 (creating parameters or layers there is not). " + _REFRESH,
        why="What is created during capture is created once: new parameters are not trained on replay, and hooks "
        "run only at capture. Building layers in forward also allocates on every eager call.",
        example="proj = nn.Linear(x.shape[-1], 64)\ny = proj(x)",
        instead="self.proj = nn.Linear(d_model, 64)  # in __init__\ny = self.proj(x)",
        prefixes=("paddle.nn.", "torch.nn."),
        functions=_CREATES,
        methods=(
            "create_parameter", "register_buffer", "register_parameter", "register_forward_hook",
            "register_forward_pre_hook", "register_forward_post_hook", "register_backward_hook",
            "register_full_backward_hook", "register_hook", "add_sublayer", "add_module",
        ),  # fmt: skip
        hook="layer-method",
        guard=_layer_in_forward,
        invalid=(
            "paddle: proj = nn.Linear(4, 4)\ny = proj(x)", "torch: p = nn.Parameter(x)", "self.register_buffer('b', x)",
            "paddle: w = paddle.create_parameter([4, 4], 'float32')\ny = x @ w",
            "if x.shape[0] > 1:\n    self.register_buffer('b', x)",
            "torch: if x.shape[0] > 1:\n    self.w = nn.Parameter(x)",
            "paddle: if x.shape[0] > 1:\n    self.w = self.create_parameter([4, 4], 'float32')",
        ),
        valid=(
            "y = F.relu(x)", "loss_fn = nn.CrossEntropyLoss()\ny = loss_fn(x, mask)",
            "if self.table is None or x.shape[0] > self.table.shape[0]:\n    self.register_buffer('table', x * 2)\ny = self.table",
        ),
    ),
)
