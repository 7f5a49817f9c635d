"""The framework lists hold only checked names: every layer entry carries its evidence and names a real class, the
PyTorch cases the GPU run captures build and run here, Paddle's known layers lint clean in forward, and every name on
the function, method and attribute lists is called or read in the installed frameworks."""

from __future__ import annotations

import importlib
import inspect
import os
from typing import Any

import pytest

from autograph_cg.analysis import frameworks as fw
from autograph_cg.analysis.framework_layers import BASE, CONTAINER, GPU, KNOWN, LAYERS, OFF, SOURCE, Layer

torch = pytest.importorskip("torch")

from tests.analysis.framework_cases import (  # noqa: E402
    TORCH_CASES,
    TORCHVISION_CASES,
    float_outputs,
    grad_targets,
    make_inputs,
    torchvision_missing,
    weighted_sum,
)


def _resolve(name: str) -> Any:
    module, _, attr = name.rpartition(".")
    while module:
        try:
            value: Any = importlib.import_module(module)
        except ImportError:
            module, _, head = module.rpartition(".")
            attr = f"{head}.{attr}"
            continue
        for part in attr.split("."):
            value = getattr(value, part)
        return value
    raise ImportError(name)


def _installed(prefix: str) -> bool:
    top = prefix.split(".", 1)[0]
    if top == "torchvision":
        return not torchvision_missing()
    return importlib.util.find_spec(top) is not None


def _entries(*prefixes: str) -> list[Layer]:
    return [layer for layer in LAYERS if layer.name.startswith(prefixes)]


# ----- the table -----------------------------------------------------------------------------------------------------
def test_every_entry_carries_its_evidence():
    names = [layer.name for layer in LAYERS]
    assert len(names) == len(set(names)), "an entry is listed twice"
    for layer in LAYERS:
        assert layer.role in (KNOWN, CONTAINER, BASE, OFF), layer.name
        assert layer.checked in (SOURCE, GPU), layer.name
        assert layer.note.strip(), f"{layer.name} has no note"
        assert layer.checked == SOURCE or layer.name.startswith(("torch.", "torchvision.")), "GPU runs are PyTorch's"
        assert not layer.caveat or layer.role == KNOWN, f"{layer.name}: only a listed layer needs a caveat"


def test_lists_are_derived_from_the_table():
    for layer in LAYERS:
        kind = fw.layer_kind(layer.name)
        expected = {KNOWN: "known", CONTAINER: "container", BASE: "base"}.get(layer.role)
        if expected is None:  # off: never on the allowlist, whatever name it shares
            assert kind in ("framework", None), layer.name
        else:
            assert kind == expected, layer.name
        if layer.stateless:
            assert layer.short in fw.PARAMETERLESS


def test_a_short_name_means_the_same_in_every_framework():
    """PARAMETERLESS is keyed by short name: a name may not be stateless in one framework and hold weights in another."""
    stateless: dict[str, set[bool]] = {}
    for layer in LAYERS:
        stateless.setdefault(layer.short, set()).add(layer.stateless)
    assert [name for name, flags in stateless.items() if len(flags) > 1] == []


def test_caveats_name_real_arguments():
    """`arg: why` or `arg, arg: why`: the arguments are the constructor's (or forward's) parameters."""
    for layer in LAYERS:
        if not layer.caveat or not _installed(layer.name):
            continue
        cls = _resolve(layer.name)
        params = set(inspect.signature(cls.__init__).parameters) | set(inspect.signature(cls.forward).parameters)
        for clause in layer.caveat.split("; "):
            head = clause.split(":", 1)[0]
            for arg in head.replace(" in inference", "").replace("=None", "").replace("=True", "").split(", "):
                assert arg in params, f"{layer.name}: {arg!r} is not a parameter"


def test_hazards_name_blocking_rules_and_real_arguments():
    """An off entry's definite hazard is a rule that blocks capture; the argument it holds under is forward's
    parameter at that position (what `frameworks.hazard` matches a call's keywords and positions against)."""
    from autograph_cg.rules.registry import RULES

    for layer in LAYERS:
        if not layer.hazard:
            assert not layer.when, layer.name
            continue
        assert layer.role == OFF and RULES[layer.hazard].blocks, layer.name
        if layer.when and _installed(layer.name):
            keyword, position = layer.when
            params = [p for p in inspect.signature(_resolve(layer.name).forward).parameters if p != "self"]
            assert params[position] == keyword, layer.name


def test_a_hazard_under_an_argument_holds_where_a_call_may_pass_it():
    lstm = "paddle.nn.LSTM"
    assert fw.hazard(lstm, ((0, ("?",)), ("sequence_length", ("n", "lengths")))) is not None
    assert fw.hazard(lstm, ((0, ("?",)), (1, ("?",)), (2, ("?",)))) is not None
    assert fw.hazard(lstm, ((0, ("?",)), (None, ("?",)))) is not None  # `**kwargs` may hold it
    assert fw.hazard(lstm, ((0, ("?",)), (1, ("*",)))) is not None  # and so may `*args`
    assert fw.hazard(lstm, ((0, ("?",)),)) is None
    assert fw.hazard(lstm, ((0, ("?",)), ("sequence_length", ("c", None)))) is None
    assert fw.hazard(lstm, None) is None  # a subclass's inherited forward: what its callers pass is not seen
    assert fw.hazard("paddle.nn.Dropout2D", None) is not None  # no argument needed
    assert fw.hazard("paddle.nn.CTCLoss", ((0, ("?",)),)) is None  # off, not checked: no hazard to name


# ----- PyTorch: the installed classes, and the cases the GPU test captures --------------------------------------------
def test_torch_entries_are_the_installed_classes():
    for layer in _entries("torch."):
        cls = _resolve(layer.name)
        assert inspect.isclass(cls) and issubclass(cls, torch.nn.Module), layer.name


def test_every_torch_nn_layer_is_decided():
    """A layer torch.nn exports and the table does not hold is a class nobody checked yet."""
    exported = {f"torch.nn.{n}" for n in dir(torch.nn) if inspect.isclass(getattr(torch.nn, n))
                and issubclass(getattr(torch.nn, n), torch.nn.Module)}
    assert sorted(exported - {layer.name for layer in LAYERS}) == []


def test_every_gpu_checked_entry_has_a_capture_case():
    checked = {layer.name for layer in LAYERS if layer.checked == GPU}
    assert checked == set(TORCH_CASES) | set(TORCHVISION_CASES)
    assert all(layer.role in (KNOWN, CONTAINER, OFF) for layer in LAYERS if layer.checked == GPU)


@pytest.mark.parametrize("name", sorted(TORCH_CASES) + sorted(TORCHVISION_CASES))
def test_capture_case_runs_on_the_cpu(name: str):
    if name.startswith("torchvision.") and torchvision_missing():
        pytest.skip(torchvision_missing())
    case = {**TORCH_CASES, **TORCHVISION_CASES}[name]
    module = case.build()
    assert isinstance(module, _resolve(name))
    args, kwargs = make_inputs(case, 0, "cpu")
    outputs = float_outputs(module(*args, **kwargs))
    assert outputs, "no floating-point output to compare"
    loss = weighted_sum(outputs, [torch.ones_like(o) for o in outputs])
    grads = torch.autograd.grad(loss, grad_targets(module, args), allow_unused=True)
    assert any(g is not None for g in grads)
    layer = next(layer for layer in LAYERS if layer.name == name)
    holds = any(True for _ in module.parameters()) or any(b is not None for b in module.buffers())
    assert layer.stateless == (not holds), "stateless flag disagrees with the built layer"


def test_torch_stateless_entries_without_a_case_hold_no_weights():
    for layer in _entries("torch."):
        if layer.stateless and layer.name not in TORCH_CASES:
            built = _resolve(layer.name)()
            assert list(built.parameters()) == [] and list(built.buffers()) == [], layer.name


# ----- Paddle: the installed classes, their parameters, and their forward linted by the analyzer ---------------------
paddle_only = pytest.mark.skipif(not _installed("paddle"), reason="paddle is not installed")


def _paddle_args(short: str) -> tuple[Any, ...]:
    """Small constructor arguments for the Paddle layers that need some."""
    for prefix, args in (
        ("ConstantPad", (1, 0.5)), ("Pad", (1,)), ("ZeroPad", (1,)), ("CircularPad", (1,)), ("ReflectionPad", (1,)),
        ("ReplicationPad", (1,)), ("LPPool", (2, 2)), ("FractionalMaxPool", (3,)), ("Fold", ([4, 4], [2, 2])),
        ("Unfold", ([2, 2],)), ("Unflatten", (1, [2, 3])), ("LocalResponseNorm", (2,)), ("Upsample", (None, 2)),
        ("RoIAlign", (2,)), ("RoIPool", (2,)), ("PSRoIPool", (2,)),
    ):
        if short.startswith(prefix):
            return args
    if short.startswith(("MaxPool", "AvgPool", "AdaptiveAvgPool", "AdaptiveMaxPool", "MaxUnPool", "MaxUnpool",
                         "PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "Maxout")):
        return (2,)
    return ()


@paddle_only
def test_paddle_entries_are_the_installed_classes():
    import paddle

    for layer in _entries("paddle."):
        if layer.name.startswith("paddle.fleet"):
            continue
        cls = _resolve(layer.name)
        assert inspect.isclass(cls) and issubclass(cls, paddle.nn.Layer), layer.name


@paddle_only
def test_every_paddle_layer_is_decided():
    import paddle
    import paddle.incubate.nn
    import paddle.vision.ops

    listed = {layer.name for layer in LAYERS}
    missing = []
    for module in (paddle.nn, paddle.incubate.nn, paddle.vision.ops):
        for name in dir(module):
            value = getattr(module, name)
            if inspect.isclass(value) and issubclass(value, paddle.nn.Layer) and value.__module__.startswith(module.__name__):
                if f"{module.__name__}.{name}" not in listed:
                    missing.append(f"{module.__name__}.{name}")
    assert missing == []


@paddle_only
@pytest.mark.parametrize("layer", [layer for layer in _entries("paddle.") if layer.stateless], ids=lambda layer: layer.name)
def test_paddle_stateless_layers_hold_no_weights(layer: Layer):
    built = _resolve(layer.name)(*_paddle_args(layer.short))
    assert list(built.parameters()) == [] and list(built.buffers()) == []


@pytest.fixture(scope="module")
def paddle_verdicts():
    """The analyzer run over Paddle's own layer source: the verdict of every class, keyed by its file and name."""
    paddle = pytest.importorskip("paddle")
    from autograph_cg.api import Options, analyze
    from autograph_cg.config import Config

    root = os.path.dirname(paddle.__file__)
    paths = [os.path.join(root, p) for p in ("nn/layer", "incubate/nn/layer", "vision/ops.py")]
    analysis = analyze(paths, Options(config=Config(select=("ALL",)), use_cache=False, jobs=1))
    return {(os.path.realpath(v.path), v.qualname.rsplit(".", 1)[-1]): v for v in analysis.plan.verdicts.values()}


@paddle_only
def test_paddle_known_layers_lint_clean_in_forward(paddle_verdicts):
    """No blocking finding in forward and what it calls in the layer's own file, but those the note explains."""
    from autograph_cg.rules.registry import RULES

    for layer in _entries("paddle."):
        if layer.role not in (KNOWN, CONTAINER):
            continue
        cls = _resolve(layer.name)
        verdict = paddle_verdicts[(os.path.realpath(inspect.getsourcefile(cls)), cls.__qualname__)]
        blocking = [r for r in verdict.reasons if r.code in RULES and RULES[r.code].blocks]
        used = set()
        for reason in blocking:
            waiver = next((w for w in layer.waives if reason.code == w.split(" ", 1)[0] and w.split(" ", 1)[1] in reason.message), None)
            assert waiver is not None, f"{layer.name}: {reason.code} {reason.message} ({reason.path}:{reason.line})"
            used.add(waiver)
        assert used == set(layer.waives), f"{layer.name}: a waiver no finding needs"


# ----- the function, method and attribute name lists ------------------------------------------------------------------
_NAMESPACES = (
    "torch", "torch.cuda", "torch.jit", "torch.compiler", "torch.distributed", "torch.overrides", "torch.onnx",
    "torch.backends.cuda", "torch.backends.cudnn", "torch.backends.mps", "torch.distributed.tensor", "paddle",
    "paddle.framework", "paddle.base.framework", "paddle.device", "paddle.device.cuda", "paddle.amp",
    "paddle.distributed", "paddle.distributed.fleet", "paddle.nn.layer.layers",
)


def _namespaces():
    for name in _NAMESPACES:
        try:
            yield name, importlib.import_module(name)
        except ImportError:
            continue


def _sample(framework: Any) -> Any:
    return framework.ones([2, 3]) if framework.__name__ == "paddle" else framework.ones(2, 3)


_HOST_CALLS: dict[str, Any] = {  # arguments for the host functions that take some; `t` is a tensor of the framework
    "is_tensor": lambda fw_, t: (t,), "is_floating_point": lambda fw_, t: (t,), "is_complex": lambda fw_, t: (t,),
    "is_nonzero": lambda fw_, t: (t.sum() * 0 + 1,), "is_integer": lambda fw_, t: (t,), "is_storage": lambda fw_, t: (t,),
    "get_device": lambda fw_, t: (t,) if fw_ == "torch" else (), "finfo": lambda fw_, t: (t.dtype,),
    "iinfo": lambda fw_, t: ((torch.int32 if fw_ == "torch" else "int32"),), "result_type": lambda fw_, t: (t, t),
    "promote_types": lambda fw_, t: (t.dtype, t.dtype), "can_cast": lambda fw_, t: (t.dtype, t.dtype),
    "Size": lambda fw_, t: ([2, 3],), "device": lambda fw_, t: ("cpu",), "is_same_size": lambda fw_, t: (t, t),
    "has_torch_function": lambda fw_, t: ((t,),), "has_torch_function_unary": lambda fw_, t: (t,),
    "has_torch_function_variadic": lambda fw_, t: (t, t), "Shard": lambda fw_, t: (0,), "Partial": lambda fw_, t: (),
    "get_flags": lambda fw_, t: ("FLAGS_use_cuda_managed_memory",), "CUDAPlace": lambda fw_, t: (0,),
    "is_compiled_with_custom_device": lambda fw_, t: ("npu",),
}
#: Host functions that answer only on a GPU or inside a process group; each was read instead (signature or source).
_NOT_CALLABLE_HERE = {
    "current_device", "get_device_name", "get_device_capability", "get_device_properties", "is_bf16_supported",
    "get_rank", "get_world_size", "get_backend", "is_current_stream_capturing", "get_autocast_gpu_dtype", "CUDAPlace",
    "get_hybrid_communicate_group",
}


@pytest.mark.parametrize("name", sorted(fw.HOST_FUNCTIONS))
def test_host_function_returns_no_tensor(name: str):
    called = found = 0
    for space, module in _namespaces():
        function = getattr(module, name, None)
        if function is None or not callable(function):
            continue
        found += 1
        framework = importlib.import_module(space.split(".", 1)[0])
        args = _HOST_CALLS.get(name, lambda fw_, t: ())(framework.__name__, _sample(framework))
        try:
            result = function(*args)
        except Exception:  # noqa: BLE001 - needs a GPU or a process group here; the other spaces still answer
            continue
        called += 1
        assert not isinstance(result, (torch.Tensor, *_paddle_tensor())), f"{space}.{name} returned a tensor"
    assert found, f"{name} is in no framework namespace"
    assert called or name in _NOT_CALLABLE_HERE, f"{name} could not be called anywhere"


def _paddle_tensor() -> tuple[type, ...]:
    if not _installed("paddle"):
        return ()
    import paddle

    return (paddle.Tensor,)


def _tensors() -> list[tuple[str, Any]]:
    found = [("torch", torch.ones(1))]
    if _installed("paddle"):
        import paddle

        found.append(("paddle", paddle.ones([1])))
    return found


@pytest.mark.parametrize("framework", ["torch", "paddle"])
def test_host_methods_return_no_tensor(framework: str):
    tensors = dict(_tensors())
    if framework not in tensors:
        pytest.skip(f"{framework} is not installed")
    tensor = tensors[framework]
    for method in sorted(fw.HOST_METHODS[framework]):
        bound = getattr(tensor, method)
        result = bound(tensor) if method in ("is_same_size", "is_same_shape") else bound()
        assert not isinstance(result, (torch.Tensor, *_paddle_tensor())), f"{framework} Tensor.{method}"


@pytest.mark.parametrize("name", sorted(fw.HOST_MEMORY_FUNCTIONS))
def test_host_memory_functions_give_tensors_in_host_memory(name: str):
    """On this machine's build; the GPU kernels' registration (output on the CPU backend) was read in the source."""
    if not _installed(name):
        pytest.skip(f"{name.split('.', 1)[0]} is not installed")
    result = _resolve(name)(_sample(importlib.import_module(name.split(".", 1)[0])))
    assert isinstance(result, _paddle_tensor()) and result.place.is_cpu_place(), name


def test_host_attributes_are_no_tensors():
    for name in sorted(fw.HOST_ATTRIBUTES - {"training"}):  # `training` is the layer's flag, read on layers
        values = [getattr(t, name) for _, t in _tensors() if hasattr(t, name)]
        assert values, f"no tensor has `{name}`"
        assert not any(isinstance(v, (torch.Tensor, *_paddle_tensor())) for v in values), name


@pytest.mark.parametrize("name", sorted(fw.SEQUENCE_FUNCTIONS))
def test_sequence_functions_return_tensors(name: str):
    found = 0
    for label, tensor in _tensors():
        module = importlib.import_module(label)
        function = getattr(module, name, None)
        if function is None:
            continue
        found += 1
        square = tensor.reshape([1, 1, 1]).expand([2, 2, 2]) if label == "paddle" else tensor.reshape(1, 1, 1).expand(2, 2, 2)
        pair = ([tensor, tensor],) if label == "paddle" else (tensor, tensor)
        args = {"split": (square, 1), "chunk": (square, 2), "tensor_split": (square, 2), "meshgrid": pair,
                "broadcast_tensors": pair, "hsplit": (square, 2), "vsplit": (square, 2),
                "dsplit": (square, 2), "unbind": (square,), "unstack": (square,)}[name]
        result = function(*args)
        assert isinstance(result, (list, tuple)) and all(isinstance(r, type(tensor)) for r in result), f"{label}.{name}"
    assert found, f"{name} is in no framework"


@pytest.mark.parametrize("name", sorted(fw.CAPTURE_QUERIES))
def test_capture_query_answers_false_outside_a_capture(name: str):
    if not _installed(name):
        pytest.skip(f"{name.split('.', 1)[0]} is not installed")
    query = _resolve(name)
    assert callable(query), f"{name} is not a function"
    try:
        answer = query()
    except RuntimeError:  # a CPU build of torch has the query but no CUDA to ask
        assert name.startswith("torch.") and not torch.cuda.is_available(), f"{name}() failed"
        return
    assert answer is False, f"{name}() says a graph is being captured where none is"
