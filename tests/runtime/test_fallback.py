"""When a graph can't or mustn't be used, the step runs eagerly with the same result and the reason is kept."""

from __future__ import annotations

import logging

import pytest

from autograph_cg.runtime import report, stats_of
from tests.runtime.harness import assert_all_close, close, randn

D, B = 8, 4


def train_steps(fw, model, xs: list) -> list:
    """Outputs, input grads, param grads and buffers of a few steps, then a fresh random draw."""
    out = []
    for x_np in xs:
        x = fw.tensor(x_np, True)
        y = model(x)
        fw.backward(fw.loss(y))
        out += [fw.numpy(y), fw.grad(x)] + fw.param_grads(model) + fw.buffers(model)
        fw.clear_grads(model, True)
    return out + [fw.rand(8)]


def test_host_sync_in_capture_falls_back_with_the_same_numbers(fw):
    """Capture fails at ``float(tensor)``; RNG, buffers and grads are restored, the step runs eagerly."""
    model = fw.build("Sync", D)
    ref = fw.twin(model)
    wrapped = fw.wrap(model, num_warmup_steps=1)
    xs = [randn(B, D) for _ in range(4)]
    fw.seed(7)
    got = train_steps(fw, wrapped, xs)
    fw.seed(7)
    want = train_steps(fw, ref, xs)
    assert_all_close(got, want, fw.atol, "steps")
    stats = stats_of(wrapped)
    assert stats["state"] == "eager" and stats["disabled_reason"].startswith("capture failed")
    assert stats["captures"] == 0 and stats["eager_calls"] == 3


def test_any_capture_error_falls_back(cpu_fw):
    fw = cpu_fw
    ref = fw.build("FailsOnlyInCapture", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    for _ in range(2):
        x = randn(B, D)
        assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    assert "unsupported during capture" in stats_of(wrapped)["disabled_reason"]


def test_graph_cache_bound_says_why_once(fw, caplog):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0, max_graphs=1)
    with caplog.at_level(logging.WARNING, logger="autograph_cg.runtime"):
        for batch in (4, 6, 4, 6, 6):
            x = randn(batch, D)
            y1 = wrapped(fw.tensor(x, True))
            fw.backward(fw.loss(y1))
            assert close(fw.numpy(y1), fw.numpy(ref(fw.tensor(x, True))), fw.atol)
    stats = stats_of(wrapped)
    assert stats["captures"] == 1 and stats["eager_calls"] == 3
    (reason,) = stats["fallbacks"]
    assert reason.startswith("graph cache full") and stats["fallbacks"][reason] == 3
    logged = [r.getMessage() for r in caplog.records if "graph cache full" in r.getMessage()]
    assert len(logged) == 1 and "shape of tensor argument 0: (6, 8) vs (4, 8)" in logged[0]


def test_environment_switch_forces_eager(fw, monkeypatch):
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    monkeypatch.setenv("AUTOGRAPH_CG_DISABLE", "1")
    for _ in range(2):
        x = randn(B, D)
        assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    assert stats_of(wrapped)["captures"] == 0 and stats_of(wrapped)["eager_calls"] == 2
    monkeypatch.delenv("AUTOGRAPH_CG_DISABLE")
    wrapped(fw.tensor(randn(B, D)))
    assert stats_of(wrapped)["captures"] == 1


def test_writing_into_an_argument_keeps_the_layer_eager(fw):
    ref = fw.build("Inplace", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for _ in range(3):
        x_np = randn(B, D)
        a, b = fw.tensor(x_np), fw.tensor(x_np)
        assert close(fw.numpy(wrapped(a)), fw.numpy(ref(b)), fw.atol)
        assert close(fw.numpy(a), fw.numpy(b), fw.atol)  # the caller sees the write, as eagerly
    assert "in place" in stats_of(wrapped)["disabled_reason"] and stats_of(wrapped)["captures"] == 0


def test_hooks_keep_the_layer_eager(fw):
    model = fw.build("MLP", D)
    calls = []
    hook = lambda *args: calls.append(1)  # noqa: E731
    if fw.name == "torch":
        model.fc1.register_forward_hook(hook)
    else:
        model.fc1.register_forward_post_hook(hook)
    wrapped = fw.wrap(model, num_warmup_steps=1)
    for _ in range(3):
        wrapped(fw.tensor(randn(B, D)))
    assert len(calls) == 3  # the hook ran on every call
    assert "hooks" in stats_of(wrapped)["disabled_reason"]


def test_unsupported_argument_runs_eagerly(fw):
    ref = fw.build("Multi", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    marker = object()
    cfg = {"bias": fw.tensor(randn(D)), "ids": fw.ints(randn(B).astype("int64")), "extra": marker}
    out = wrapped([fw.tensor(randn(B, D)), fw.tensor(randn(B, D))], cfg)
    assert out["mode"] == "sum"
    assert list(stats_of(wrapped)["fallbacks"]) == ["unsupported argument"]


def test_cpu_tensors_run_eagerly_under_the_auto_backend(cpu_fw):
    fw = cpu_fw
    wrapped = fw.wrap(fw.build("MLP", D), num_warmup_steps=0, backend="auto")
    wrapped(fw.tensor(randn(B, D)))
    (reason,) = stats_of(wrapped)["fallbacks"]
    assert reason.startswith("not on a CUDA device")


def test_a_gradient_the_user_still_holds_is_not_overwritten(torch_fw):
    """After zero_grad(set_to_none=True) the runtime re-adopts its own gradient buffer, unless the
    user kept a reference to the old gradient: then that step's backward runs eagerly."""
    fw = torch_fw
    ref = fw.build("MLP", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=0)
    kept = {}
    for step in range(3):
        x = randn(B, D)
        for name, model in (("wrapped", wrapped), ("ref", ref)):
            fw.backward(fw.loss(model(fw.tensor(x, True))))
            if step == 0:
                kept[name] = next(iter(model.parameters())).grad
                kept[name + "_value"] = fw.numpy(kept[name]).copy()
            fw.clear_grads(model, True)
    assert close(fw.numpy(kept["wrapped"]), kept["wrapped_value"], 0)
    assert close(fw.numpy(kept["wrapped"]), fw.numpy(kept["ref"]), fw.atol)
    assert stats_of(wrapped)["eager_backwards"] == 2


def test_report_names_layers_and_reasons(fw, capsys):
    wrapped = fw.wrap(fw.build("Sync", D), num_warmup_steps=0, name="sync-block")
    wrapped(fw.tensor(randn(B, D), True))
    text = report()
    assert capsys.readouterr().out == text
    line = next(l for l in text.splitlines() if l.startswith("sync-block"))
    assert line.split()[1] == "eager"
    assert "sync-block: eager because capture failed" in text


@pytest.mark.parametrize("value", ["0", ""])
def test_environment_switch_off_values(fw, monkeypatch, value):
    monkeypatch.setenv("AUTOGRAPH_CG_DISABLE", value)
    wrapped = fw.wrap(fw.build("MLP", D), num_warmup_steps=0)
    wrapped(fw.tensor(randn(B, D)))
    assert stats_of(wrapped)["captures"] == 1
