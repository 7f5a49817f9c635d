"""AG1xx: the CPU waits for the GPU (a device-to-host copy or an explicit synchronize) inside forward."""

from __future__ import annotations

import ast
from typing import Iterator

from autograph_cg.findings import Severity
from autograph_cg.rules import host_values
from autograph_cg.rules.base import HOST_SYNC, Passes, Rule, RuleContext
from autograph_cg.rules.matchers import (
    any_arg_tensor,
    argument,
    first_arg_tensor,
    is_method_form,
    is_true,
    keyword,
    names_cpu,
    spreads,
)


_SYNC_WHY = (
    "Capture records GPU work only. A device-to-host copy needs the value now, so during capture it fails "
    "(`cudaErrorStreamCaptureUnsupported`, or 'operation not permitted when stream is capturing'); outside capture "
    "it stalls the CPU until the GPU queue drains, which removes the launch-overhead savings graphs exist for."
)


def _to_cpu(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    if name in ("cpu", "pin_memory"):
        return True
    target = argument(call, 0, "device")
    return names_cpu(target) and not is_true(keyword(call, "non_blocking"))


def _tensor_formatted(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.JoinedStr)
    for value in node.values:
        if isinstance(value, ast.FormattedValue) and ctx.is_tensor(value.value):
            yield value, "an f-string"


def _builtin_reduce(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    return len(call.args) >= 1 and any(ctx.is_tensor(a) for a in call.args) and not keyword(call, "key")


def _index_list(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.Subscript)
    if not ctx.is_tensor(node.value):
        return
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if isinstance(part, ast.List):
            yield part, "a Python list"


def _slice_bound(ctx: RuleContext, node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    assert isinstance(node, ast.Subscript)
    if not ctx.is_tensor(node.value):
        return
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if isinstance(part, ast.Slice):
            for bound in (part.lower, part.upper, part.step):
                if bound is not None and ctx.is_tensor(bound):
                    yield bound, ast.unparse(bound)


def _tensor_as_host_value(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    """A tensor (or a list holding one) at a place the framework's signature reads on the host (`host_values`)."""
    qualname = ctx.qualify(call.func)
    method = isinstance(call.func, ast.Attribute) and qualname is None
    for positions, keywords, varargs in host_values.lookup(qualname, name, method, ctx.framework):
        for index, arg in enumerate(call.args):
            spread = varargs is not None and index >= varargs  # `x.view(b, *size, -1)`: all of them are sizes
            if isinstance(arg, ast.Starred) and not spread:
                break  # where the arguments after it go cannot be told
            if (index in positions or spread) and ctx.holds_tensor(arg):
                return True
        if any(kw.arg in keywords and ctx.holds_tensor(kw.value) for kw in call.keywords):
            return True
    return False


def _not_a_tensor_copy(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    """`paddle.to_tensor(x)` / `torch.as_tensor(x)` of a tensor copies on device; of host data it uploads."""
    data = argument(call, 0, "data")
    return data is not None and not ctx.is_tensor(data)


def _data_passed(name: str, passes: Passes) -> bool:
    """`_not_a_tensor_copy` for a function reached as a value: whether its data is a tensor is not seen there, so
    data passed is read as host data, as the walk reads an argument of unknown kind."""
    return any(key in (0, "data") for key, _ in passes) or spreads(passes)


def _to_cuda(ctx: RuleContext, call: ast.Call, name: str) -> bool:
    return name == "cuda" and isinstance(call.func, ast.Attribute)


RULES = (
    Rule(
        code="AG101",
        name="host-sync-item",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`.item()` copies a tensor to the host and waits for the device",
        what="Finds `.item()` on a tensor in code that runs inside a captured layer.",
        why=_SYNC_WHY,
        example="scale = x.abs().max().item()\ny = x / scale",
        instead="scale = x.abs().max()  # keep it a 0-d tensor\ny = x / scale",
        methods=("item",),
        invalid=("s = x.sum().item()", "return int(x.argmax().item())"),
        valid=("s = x.sum()", "d = {'a': 1}\nfor k, v in d.items():\n    pass"),
    ),
    Rule(
        code="AG102",
        name="host-sync-numpy",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`{detail}` copies a tensor to a NumPy array on the host",
        what="Finds `.numpy()` on a tensor and `np.array(t)` / `np.asarray(t)` of a tensor.",
        why=_SYNC_WHY,
        example="counts = np.bincount(ids.numpy())",
        instead="counts = paddle.bincount(ids, minlength=vocab)  # stays on the device (fixed length)",
        methods=("numpy",),
        functions=("numpy.array", "numpy.asarray"),
        guard=lambda ctx, call, name: is_method_form(ctx, call) or first_arg_tensor(ctx, call),
        invalid=("a = x.numpy()", "a = np.asarray(x)"),
        valid=("a = np.asarray([1, 2, 3])", "n = x.shape[0]"),
    ),
    Rule(
        code="AG103",
        name="host-sync-tolist",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`.tolist()` copies a tensor to a Python list",
        what="Finds `.tolist()` on a tensor and `paddle.tolist(t)`.",
        why=_SYNC_WHY,
        example="lengths = seq_lens.tolist()\nout = [x[i, :n] for i, n in enumerate(lengths)]",
        instead="mask = paddle.arange(x.shape[1]) < seq_lens.unsqueeze(-1)  # a mask instead of host lengths",
        methods=("tolist",),
        functions=("paddle.tolist",),
        invalid=("ids = x.argmax(-1).tolist()", "paddle: ids = paddle.tolist(x.argmax(-1))"),
        valid=("ids = x.argmax(-1)", "dims = list(x.shape)", "paddle: ids = paddle.flatten(x.argmax(-1))"),
    ),
    Rule(
        code="AG104",
        name="host-copy-to-cpu",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`{detail}` moves a tensor to the CPU and waits for it",
        what="Finds `.cpu()`, `.pin_memory()` and `.to('cpu')` (without `non_blocking=True`) on a tensor, and "
        "framework layers whose kernels copy a tensor argument to the host (Paddle's `LSTM`, `GRU` and `SimpleRNN` "
        "given `sequence_length`: `framework_layers.py` names them, with what was read).",
        why=_SYNC_WHY,
        example="stats = x.mean(0).cpu()",
        instead="stats = x.mean(0)  # copy after the graph, outside the captured layer",
        known_problems="A non-blocking copy into pinned memory can be captured but its host buffer must outlive "
        "every replay; the rule does not flag `non_blocking=True`.",
        methods=("cpu", "to", "pin_memory"),
        guard=_to_cpu,
        invalid=(
            "y = x.cpu()", "y = x.to('cpu')", "torch: y = x.to(device=torch.device('cpu'))",
            "paddle: class Case(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.rnn = "
            "nn.LSTM(4, 4)\n    def forward(self, x, lengths):\n        return self.rnn(x, sequence_length=lengths)\n",
        ),
        valid=(
            "torch: y = x.to('cpu', non_blocking=True)", "y = x.to(x.dtype)",
            "paddle: class Case(nn.Layer):\n    def __init__(self):\n        super().__init__()\n        self.rnn = "
            "nn.LSTM(4, 4)\n    def forward(self, x):\n        return self.rnn(x, None, None)\n",
        ),
    ),
    Rule(
        code="AG105",
        name="host-sync-python-scalar",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`{detail}` of a tensor reads its value on the host",
        what="Finds `float(t)`, `int(t)`, `bool(t)` and `complex(t)` of a tensor.",
        why=_SYNC_WHY,
        example="n_tokens = int(mask.sum())\nloss = loss_sum / n_tokens",
        instead="n_tokens = mask.sum()\nloss = loss_sum / n_tokens  # tensor division, no host value",
        builtins=("float", "int", "bool", "complex"),
        guard=lambda ctx, call, name: first_arg_tensor(ctx, call),
        invalid=("n = int(x.sum())", "f = float(x.mean())"),
        valid=("n = int(x.shape[0])", "f = float(self.training)"),
    ),
    Rule(
        code="AG106",
        name="host-sync-format",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="formatting a tensor ({detail}) reads its values on the host",
        what="Finds `print`, `str`, `repr`, `format`, `%`-formatting, `.format()` and f-strings applied to a tensor.",
        why=_SYNC_WHY + " Printing happens once, at capture; replays print nothing.",
        example='print(f"attention max {attn.max()}")',
        instead="# log outside the captured layer, from the returned tensors",
        builtins=("print", "str", "repr", "format"),
        guard=lambda ctx, call, name: any_arg_tensor(ctx, call),
        check=_tensor_formatted,
        node_types=(ast.JoinedStr,),
        invalid=("print(x)", 's = f"{x.mean()}"', 's = "{}".format(x)'),
        valid=('print("shape", x.shape)', 's = f"{x.shape[0]} rows"'),
    ),
    Rule(
        code="AG107",
        name="host-sync-synchronize",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`{detail}` makes the CPU wait for the device",
        what="Finds device, stream and event synchronization and barriers.",
        why="Synchronizing is illegal while a stream is capturing (the capture is invalidated), and there is nothing "
        "to wait for on replay: the graph is one launch.",
        example="paddle.device.synchronize()\nt1 = time.time()",
        instead="# time the whole step outside the graph, or use device events",
        functions=(
            "paddle.device.synchronize",
            "paddle.device.cuda.synchronize",
            "torch.cuda.synchronize",
            "torch.distributed.barrier",
            "paddle.distributed.barrier",
        ),
        methods=("synchronize",),
        invalid=("paddle: paddle.device.synchronize()", "torch: torch.cuda.synchronize()", "torch: torch.cuda.current_stream().synchronize()"),
        valid=("y = x + 1",),
    ),
    Rule(
        code="AG108",
        name="host-data-to-device",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`{detail}` builds a device tensor from host data on every call",
        what="Finds `paddle.to_tensor`, `torch.tensor`, `torch.as_tensor`, `torch.from_numpy` of host data and "
        "`.cuda()` inside forward.",
        why="The upload is a host-to-device copy from pageable memory: during capture it is either refused or "
        "records a copy from a host buffer that may be gone by the next replay, and the host values are frozen at "
        "capture.",
        example="pos = paddle.to_tensor(list(range(seq_len)))",
        instead="pos = paddle.arange(seq_len)  # or register_buffer in __init__ and slice it",
        functions=("paddle.to_tensor", "torch.tensor", "torch.as_tensor", "torch.from_numpy", "paddle.assign"),
        methods=("cuda",),
        guard=lambda ctx, call, name: _to_cuda(ctx, call, name) or _not_a_tensor_copy(ctx, call, name),
        on_value=_data_passed,
        invalid=(
            "paddle: pos = paddle.to_tensor(list(range(x.shape[1])))",
            "torch: pos = torch.tensor([0, 1, 2], device=x.device)",
            "y = x.cuda()",
            "paddle: upload = paddle.to_tensor\npos = upload(x)",
        ),
        valid=("paddle: y = paddle.to_tensor(x)", "torch: y = torch.as_tensor(x)", "pos = x.new_zeros(3)"),
    ),
    Rule(
        code="AG109",
        name="tensor-as-host-value",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="a tensor is passed to `{detail}` where a host int or shape is expected",
        what="Finds tensors (or lists holding tensors) given to shape, size, count, index and bound arguments, e.g. "
        "`x.reshape([b, n, -1])` with `n = lengths.max()`, `paddle.full(shape=t)`, `topk(k=t)`, "
        "`torch.arange(t)`. Which arguments of which ops: the table derived from the frameworks' own signatures "
        "(`autograph_cg/rules/host_values.json`; Paddle's `int | Tensor` and shape parameters, PyTorch's `int`, "
        "`SymInt`, size and Scalar parameters that no overload takes as a tensor). `paddle.shape(x)` is no such "
        "tensor: Paddle fills it in host memory on every device, so reading it copies nothing.",
        why="The framework must know the value on the host to build the output, so it copies the tensor to the "
        "CPU and waits (Paddle's IntArray/Scalar conversion does a blocking copy; PyTorch calls `.item()`).",
        known_problems="Paddle's float parameters are not in the table (`paddle.arange(end=t)` reads `end` on the host too, "
        "but its signature, `float | Tensor`, is the one of operands such as `pow`'s exponent).",
        example="n = lengths.max()\ny = x.reshape([0, n, -1])",
        instead="y = x.reshape([0, x.shape[1], -1])  # x.shape is host metadata",
        ops=host_values.names(),
        guard=_tensor_as_host_value,
        invalid=(
            "paddle: n = x.sum(1).max()\ny = x.reshape([0, n, -1])",
            "paddle: y = paddle.full(shape=[x.max()], fill_value=0.0)",
            "torch: y = torch.arange(x.sum())",
            "torch: from torch.nn.functional import pad as torch_pad\ny = torch_pad(x, [x.sum(), 1])",
            "paddle: from paddle import reshape as reshaped\ny = reshaped(x, [x.max(), -1])",
            "k = x.argmax(-1)\ny = x.topk(k=k.max())",
            "torch: y = x.narrow(0, 0, x.sum())",
            "torch: y = torch.nn.functional.one_hot(x, num_classes=x.max())",
            "torch: n = x.sum()\ny = x.view(n, -1)",
            "paddle: y = paddle.gather(x, x, axis=x.argmax())",
            "paddle: y = x.narrow(0, 0, x.sum())",
        ),
        valid=(
            "torch: y = x.masked_fill(x > 0, x.max())",
            "torch: y = torch.clamp(x, min=x.mean())",
            "paddle: y = paddle.pow(x, x.max())",
            "paddle: y = paddle.masked_fill(x, x > 0, x.max())",
            "y = x.reshape([x.shape[0], -1])",
            "paddle: y = paddle.full([2, 3], 0.0)",
            "paddle: n = paddle.shape(x)[1]\ny = x.reshape([0, n, -1])",
            "torch: y = x.view(-1, 4)",
            "torch: from torch.nn.functional import pad as torch_pad\ny = torch_pad(x, (1, 1))",
            "paddle: from paddle import reshape as reshaped\ny = reshaped(x, [x.shape[0], -1])",
        ),
    ),
    Rule(
        code="AG110",
        name="host-index",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="indexing a tensor with {detail} uploads the index from the host",
        what="Finds tensors indexed with a Python list (`x[[0, 2]]`).",
        why="The list becomes an index tensor through a host-to-device copy on every call, which capture refuses.",
        example="y = x[[0, 2, 4]]",
        instead="self.register_buffer('idx', paddle.to_tensor([0, 2, 4]))  # in __init__\ny = x[self.idx]",
        check=_index_list,
        node_types=(ast.Subscript,),
        invalid=("y = x[[0, 2]]", "y = x[:, [1, 3]]"),
        valid=("y = x[0, 2]", "y = x[:, 1:3]"),
    ),
    Rule(
        code="AG111",
        name="tensor-slice-bound",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="slice bound `{detail}` is a tensor, read on the host",
        what="Finds slices of a tensor whose start, stop or step is a tensor.",
        why="Slicing needs host integers; a tensor bound is converted with a blocking `.item()`.",
        example="end = lengths.max()\ny = x[:, :end]",
        instead="y = x * mask.unsqueeze(-1)  # keep the full length and mask",
        check=_slice_bound,
        node_types=(ast.Subscript,),
        invalid=("end = x.sum()\ny = x[:end]",),
        valid=("y = x[: x.shape[0] // 2]",),
    ),
    Rule(
        code="AG112",
        name="host-reduce-builtin",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="Python `{detail}` over a tensor compares its elements on the host",
        what="Finds the builtins `max`, `min`, `any`, `all` and `sorted` applied to tensors.",
        why="The builtin iterates the tensor and converts each comparison to a Python bool: one blocking copy per "
        "element.",
        example="if any(x > 0):\n    ...",
        instead="y = paddle.maximum(a, b)  # or x.max(), (x > 0).any() kept as a tensor",
        builtins=("max", "min", "any", "all", "sorted"),
        guard=_builtin_reduce,
        invalid=("m = max(x.sum(), 1.0)", "ok = all(x > 0)"),
        valid=("m = max(x.shape[0], 1)", "ok = all(d > 0 for d in x.shape)"),
    ),
    Rule(
        code="AG113",
        name="host-sync-compare",
        family=HOST_SYNC,
        severity=Severity.ERROR,
        message="`{detail}` returns a Python bool, read from the device",
        what="Finds `torch.equal`, `torch.allclose` and `torch.is_nonzero`.",
        why="They compare on the device and return a host bool: a blocking copy.",
        example="if torch.allclose(a, b):\n    ...",
        instead="same = torch.isclose(a, b).all()  # a 0-d tensor; use torch.where on it",
        frameworks=("torch",),
        functions=("torch.equal", "torch.allclose", "torch.is_nonzero"),
        invalid=("torch: same = torch.equal(x, mask)",),
        valid=("torch: same = torch.isclose(x, mask).all()",),
    ),
)
