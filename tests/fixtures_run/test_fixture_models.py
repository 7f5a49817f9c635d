"""The fixture packages are real model code, twins of each other, and their HAZARDS.md matches the code.

The analyzer's expected outputs lean on these packages, so the checks here keep them honest: each model
builds, trains one step and samples on CPU, and every line that HAZARDS.md cites holds the cited text.
"""

from __future__ import annotations

import ast
import importlib
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PACKAGES = ("paddle_lm", "torch_lm")
VERDICT = re.compile(r"^\| `(?P<cls>\w+)` \| (?P<verdict>eligible|ineligible|unknown) \|")
ROW = re.compile(r"^\| `(?P<file>\w+\.py):(?P<line>\d+)` \|(?: (?P<code>AG\d{3}) \|)? `(?P<func>[\w.]+)` \| `(?P<snippet>[^`]+)` \|")


def _rows(package: str) -> list[dict]:
    text = (FIXTURES / package / "HAZARDS.md").read_text()
    return [m.groupdict() for m in map(ROW.match, text.splitlines()) if m]


def _verdicts(package: str) -> dict[str, str]:
    text = (FIXTURES / package / "HAZARDS.md").read_text()
    return {m["cls"]: m["verdict"] for m in map(VERDICT.match, text.splitlines()) if m}


def _enclosing_function(tree: ast.Module, line: int) -> str | None:
    """Qualified name (Class.method or function) of the innermost def around a line."""
    best: tuple[int, str] | None = None

    def visit(node: ast.AST, prefix: str) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{name}.")
                elif child.lineno <= line <= child.end_lineno and (best is None or child.lineno > best[0]):
                    best = (child.lineno, name)

    visit(tree, "")
    return best[1] if best else None


@pytest.mark.parametrize("package", PACKAGES)
def test_hazard_table_points_at_the_cited_code(package: str) -> None:
    rows = _rows(package)
    assert sum(1 for r in rows if r["code"]) >= 8, "hazard table not parsed"
    assert sum(1 for r in rows if not r["code"]) >= 8, "look-alike table not parsed"
    for row in rows:
        source = (FIXTURES / package / row["file"]).read_text()
        line = int(row["line"])
        assert row["snippet"] in source.splitlines()[line - 1], f"{package}/{row['file']}:{line}: {row['snippet']!r}"
        assert _enclosing_function(ast.parse(source), line) == row["func"], f"{package}/{row['file']}:{line}"


def test_twins_plant_the_same_hazards_on_the_same_lines() -> None:
    paddle_rows, torch_rows = ({(r["file"], r["line"], r["code"]) for r in _rows(p) if r["code"]} for p in PACKAGES)
    assert paddle_rows == torch_rows


def _classes(package: str) -> dict[str, list[tuple[str, list[str]]]]:
    """Per module: each class with its method names, in source order."""
    out = {}
    for path in sorted((FIXTURES / package).glob("*.py")):
        tree = ast.parse(path.read_text())
        out[path.name] = [
            (node.name, [f.name for f in node.body if isinstance(f, ast.FunctionDef)])
            for node in tree.body
            if isinstance(node, ast.ClassDef)
        ]
    return out


def test_twins_have_the_same_modules_classes_and_methods() -> None:
    paddle_classes, torch_classes = (_classes(p) for p in PACKAGES)
    assert paddle_classes == torch_classes
    assert len([c for classes in paddle_classes.values() for c in classes]) >= 10


@pytest.mark.parametrize("package", PACKAGES)
def test_verdict_table_names_every_layer_class(package: str) -> None:
    layers = {name for classes in _classes(package).values() for name, _ in classes} - {"LMConfig"}
    verdicts = _verdicts(package)
    assert set(verdicts) == layers
    assert {"eligible", "ineligible"} <= set(verdicts.values())


def _paddle() -> SimpleNamespace:
    paddle = pytest.importorskip("paddle")
    return SimpleNamespace(
        package="paddle_lm",
        tensor=paddle.to_tensor,
        optimizer=lambda model: paddle.optimizer.AdamW(learning_rate=1e-2, parameters=model.parameters()),
        numpy=lambda t: t.detach().numpy(),
    )


def _torch() -> SimpleNamespace:
    torch = pytest.importorskip("torch")
    return SimpleNamespace(
        package="torch_lm",
        tensor=torch.tensor,
        optimizer=lambda model: torch.optim.AdamW(model.parameters(), lr=1e-2),
        numpy=lambda t: t.detach().cpu().numpy(),
    )


@pytest.fixture(params=[_paddle, _torch], ids=["paddle", "torch"])
def framework(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    fw = request.param()
    monkeypatch.syspath_prepend(str(FIXTURES))
    fw.lm = importlib.import_module(fw.package)
    return fw


def test_model_trains_one_step(framework: SimpleNamespace) -> None:
    lm, np_ = framework.lm, framework.numpy
    model, (input_ids,) = lm.make_model()
    model.train()
    optimizer = framework.optimizer(model)
    params = dict(model.named_parameters())
    before = {name: np_(p).copy() for name, p in params.items()}

    logits = model(input_ids)
    assert tuple(logits.shape) == (*input_ids.shape, model.config.vocab_size)
    loss = lm.loss_fn(model, logits, input_ids)
    loss.backward()
    optimizer.step()

    value = float(np_(loss))
    assert math.isfinite(value) and value > 0
    grads = {name: None if p.grad is None else np_(p.grad) for name, p in params.items()}
    # A routed expert that got no token is skipped, so it alone may lack a gradient.
    dense = [name for name in grads if ".experts." not in name]
    assert [n for n in dense if grads[n] is None or not np.isfinite(grads[n]).all()] == []
    assert any(grads[n] is not None for n in grads if ".experts." in n)
    unchanged = [n for n, g in grads.items() if g is not None and np.array_equal(before[n], np_(params[n]))]
    assert unchanged == []


def test_padding_path_and_call_counter(framework: SimpleNamespace) -> None:
    lm, np_ = framework.lm, framework.numpy
    model, (input_ids,) = lm.make_model(batch=2, seq_len=16)
    model.eval()
    plain = np_(model(input_ids))
    full = np_(model(input_ids, lengths=framework.tensor([16, 16])))
    trimmed = model(input_ids, lengths=framework.tensor([12, 9]))

    np.testing.assert_allclose(full, plain, rtol=1e-5, atol=1e-5)
    assert tuple(trimmed.shape) == (2, 12, model.config.vocab_size)
    assert np.isfinite(np_(trimmed)).all()
    assert model.stats.num_calls == 3


def test_sampler_and_generate_return_token_ids(framework: SimpleNamespace) -> None:
    model, (input_ids,) = framework.lm.make_model()
    model.eval()
    vocab = model.config.vocab_size
    token = model.sampler(model(input_ids[:1])[:, -1])
    assert isinstance(token, int) and 0 <= token < vocab
    tokens = model.generate(input_ids[:1, :5], max_new_tokens=3)
    assert len(tokens) == 3 and all(isinstance(t, int) and 0 <= t < vocab for t in tokens)
    with pytest.raises(ValueError):
        model.sampler(model(input_ids)[:, -1])


def test_twins_have_the_same_parameters() -> None:
    pytest.importorskip("paddle")
    pytest.importorskip("torch")
    sizes = []
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(FIXTURES))
        for package in PACKAGES:
            model, _ = importlib.import_module(package).make_model()
            sizes.append({name: int(np.prod(p.shape)) for name, p in model.named_parameters()})
    assert sizes[0] == sizes[1]
    assert any(".experts." in name for name in sizes[0])


def _first_calls(torch, model, input_ids) -> dict[str, tuple]:
    """The positional arguments of the first call of each layer class during one forward."""
    calls: dict[str, tuple] = {}

    def record(module, args):
        calls.setdefault(type(module).__name__, args)

    handles = [m.register_forward_pre_hook(record) for m in model.modules()]
    with torch.no_grad():
        logits = model(input_ids)
    for handle in handles:
        handle.remove()
    calls["TopPSampler"] = (logits[:1, -1],)
    return calls


def _like(torch, arg):
    """A new input of the same kind: token ids stay in the vocabulary, activations are normal."""
    if not torch.is_tensor(arg):
        return arg
    return torch.randn_like(arg) if arg.is_floating_point() else torch.randint_like(arg, 0, 50)


def _capture_matches_eager(torch, module, args) -> bool:
    """Capture module(*args) in a CUDA graph, replay it on new inputs, compare with an eager run."""
    static = [a.clone() if torch.is_tensor(a) else a for a in args]
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                module(*static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = module(*static)
        fresh = [_like(torch, a) for a in args]
        for dst, src in zip(static, fresh):
            if torch.is_tensor(dst):
                dst.copy_(src)
        graph.replay()
        return bool(torch.allclose(out, module(*fresh), rtol=1e-4, atol=1e-5))


@pytest.mark.gpu
def test_torch_verdicts_hold_on_a_cuda_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eligible classes run without a host sync and replay from a CUDA graph; ineligible ones sync."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.syspath_prepend(str(FIXTURES))
    lm = importlib.import_module("torch_lm")
    model, (input_ids,) = lm.make_model(device="cuda")
    model.train()
    model(input_ids)  # first-call initialisation (cuBLAS handles, caches) stays out of the checks
    calls = _first_calls(torch, model, input_ids)
    instances = {type(m).__name__: m for m in reversed(list(model.modules()))}  # first instance wins

    syncs = {}
    for name in _verdicts("torch_lm"):
        torch.cuda.set_sync_debug_mode("error")
        try:
            instances[name](*calls[name])
            syncs[name] = False
        except RuntimeError:
            syncs[name] = True
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert syncs == {name: verdict == "ineligible" for name, verdict in _verdicts("torch_lm").items()}

    model.eval()
    replayed = {name: _capture_matches_eager(torch, instances[name], calls[name])
                for name, verdict in _verdicts("torch_lm").items() if verdict == "eligible"}
    assert replayed == dict.fromkeys(replayed, True)
