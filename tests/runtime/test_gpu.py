"""Real CUDA graphs only: a host sync aborts the capture cleanly and training goes on."""

from __future__ import annotations

import pytest

from autograph_cg.runtime import stats_of
from tests.runtime.harness import TorchHarness, assert_all_close, randn, runner_of

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]

D, B = 16, 8


def test_host_sync_layer_falls_back_and_still_trains():
    fw = TorchHarness("cuda")
    fw.seed(0)
    model = torch.nn.Sequential(fw.build("MLP", D), fw.wrap(fw.build("Sync", D), num_warmup_steps=2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, target = torch.randn(B, D, device="cuda"), torch.randn(B, D, device="cuda")
    losses = []
    for _ in range(30):
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    stats = stats_of(model[1])
    assert stats["disabled_reason"].startswith("capture failed") and stats["eager_calls"] == 28
    assert not torch.cuda.is_current_stream_capturing()
    assert losses[-1] < 0.5 * losses[0]
    # The device is healthy after the aborted capture: another layer captures, replays and draws
    # fresh random numbers.
    ref = fw.build("MLP", D, 0.0)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for _ in range(3):
        x_np = randn(B, D)
        got, want = [], []
        for m, sink in ((wrapped, got), (ref, want)):
            xt = fw.tensor(x_np, True)
            y = m(xt)
            fw.backward(fw.loss(y))
            sink += [fw.numpy(y), fw.grad(xt)] + fw.param_grads(m)
        assert_all_close(got, want, fw.atol, "after the failed capture")
    assert stats_of(wrapped)["backward_replays"] == 2
    a, b = torch.rand(4, device="cuda"), torch.rand(4, device="cuda")
    assert not torch.equal(a, b)


def test_graphs_of_a_model_share_one_pool_per_depth():
    from autograph_cg.runtime import pools

    fw = TorchHarness("cuda")
    blocks = [fw.wrap(fw.build("MLP", D), num_warmup_steps=0) for _ in range(4)]
    y = torch.randn(B, D, device="cuda", requires_grad=True)
    for block in blocks:
        y = block(y)
    y.sum().backward()
    ledgers = {slot.ledger for b in blocks for e in runner_of(b).entries.values() for slot in e.slots}
    assert len(ledgers) == 1  # one pool for all four layers' forward and backward graphs
    (ledger,) = ledgers
    assert ledger.inflight == {} and ledger in pools._ledgers.values()


def test_no_graph_reads_a_cache_table_that_an_eager_refresh_freed():
    """A real graph reads device memory. The warmup of 32 makes the rotary tables again and frees the old ones,
    whose blocks the allocator hands out again, here filled with NaN: the graph of 16 that read them must be
    gone by the next call of 16, which captures again on the new tables and gives eager's numbers."""
    fw = TorchHarness("cuda")
    fw.seed(0)
    ref = fw.build("RotaryBlock", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    junk = []
    with torch.no_grad():
        for i, n in enumerate([16, 16, 16, 32, 32, 16, 16]):
            x = torch.randn(B, n, D, device="cuda")
            got = wrapped(x)
            if i == 3:  # the old tables are free: take their blocks
                junk += [torch.full((16, D), float("nan"), device="cuda") for _ in range(256)]
            assert_all_close([fw.numpy(got)], [fw.numpy(ref(x))], fw.atol, f"call {i}")
    stats = stats_of(wrapped)
    assert stats["captures"] == 3 and stats["recaptures"] == 1
