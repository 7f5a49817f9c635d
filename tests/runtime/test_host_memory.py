"""Paddle's `shape` is a tensor in host memory on a GPU (its kernel fills it there): reading it while a graph
captures copies nothing and waits for nothing, and the analyzer judges it so. The stand-in must agree, or every
layer that reshapes by `paddle.shape(x)[0]` (paddlenlp's T5, BART, GPT attention) would fall back on the CPU while
capturing on a GPU; a read of a tensor computed on the device is still refused."""

from __future__ import annotations

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")

from autograph_cg.runtime import CUDAGraphedLayer, stats_of  # noqa: E402
from autograph_cg.runtime.standin import HostSyncDuringCapture, is_capturing  # noqa: E402
from autograph_cg.runtime.paddle_adapter import _HOST, _SYNC_TARGETS  # noqa: E402
from autograph_cg.runtime.standin import StandInGraph  # noqa: E402


class Heads(paddle.nn.Layer):
    """Splits heads by the shape as paddlenlp does: the batch size read from `paddle.shape`, sliced, unpacked,
    passed to `reshape`, used in a sum with a number."""

    def __init__(self):
        super().__init__()
        self.fc = paddle.nn.Linear(8, 8)

    def forward(self, x):
        batch, length = paddle.shape(x)[:2]
        h = self.fc(x).reshape([batch, -1, 2, 4])
        return h.reshape([batch, length + 0, 8]) * 2


def _capture(fn):
    return StandInGraph(lambda dst, src: None, _SYNC_TARGETS, host=_HOST).capture(fn)


def test_reads_of_shape_and_what_is_made_of_it_alone_pass_while_capturing():
    layer = Heads()
    x = paddle.randn([3, 5, 8])
    (out,) = _capture(lambda: [layer(x)])
    np.testing.assert_allclose(out.numpy(), layer(x).numpy(), rtol=1e-6)
    assert not is_capturing()


@pytest.mark.parametrize(
    "read",
    [
        lambda x: x.sum().item(),  # a value computed on the device
        lambda x: int(paddle.shape(x)[0] + x.sum().astype("int32")),  # host memory mixed with the device's
        lambda x: paddle.to_tensor(3).item(),  # a tensor made on the device, not by `shape`
    ],
)
def test_a_read_of_anything_else_is_still_refused(read):
    x = paddle.randn([3, 5, 8])
    with pytest.raises(HostSyncDuringCapture):
        _capture(lambda: [read(x)])


def test_a_wrapped_layer_that_reshapes_by_its_shape_replays_graphs(monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_CG_BACKEND", "standin")
    ref = Heads()
    wrapped = CUDAGraphedLayer(Heads(), num_warmup_steps=1)
    wrapped.set_state_dict(ref.state_dict())
    for _ in range(4):
        x = paddle.randn([3, 5, 8])
        np.testing.assert_allclose(wrapped(x).numpy(), ref(x).numpy(), rtol=1e-6)
    stats = stats_of(wrapped)
    assert stats["disabled_reason"] is None and stats["forward_replays"] >= 2, stats
