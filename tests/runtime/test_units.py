"""The framework-neutral pieces on their own: argument trees, pool ledger, stand-in graph."""

from __future__ import annotations

import enum
import weakref

import numpy as np
import pytest

from autograph_cg.runtime import standin, verify
from autograph_cg.runtime.pools import PoolLedger
from autograph_cg.runtime.keys import GraphKey, explain_miss
from autograph_cg.runtime.tree import Tree, UnsupportedArgument, unflatten

TREE = Tree(lambda x: isinstance(x, np.ndarray), lambda x: False)
flatten = TREE.flatten


class Mode(enum.Enum):
    A = 1


def test_flatten_round_trip_keeps_structure_and_constants():
    a, b = np.zeros(2), np.ones(3)
    obj = ((a, [b, 3, "x"], {"k": a, "m": Mode.A}), {"scale": 0.5, "none": None})
    tensors, spec = flatten(obj)
    assert [id(t) for t in tensors] == [id(a), id(b), id(a)]
    rebuilt = unflatten(spec, tensors)
    assert rebuilt[0][1][1:] == [3, "x"] and rebuilt[0][2]["m"] is Mode.A and rebuilt[1] == obj[1]
    assert rebuilt[0][0] is a and isinstance(rebuilt[0][1], list)


def test_constants_key_by_type_and_value():
    def spec(value):
        return flatten((value,))[1]

    assert spec(1) == spec(1)
    assert spec(1) != spec(True) != spec(1.0)
    assert spec("sum") != spec("prod")


@pytest.mark.parametrize("value", [object(), [np.zeros(1), {1, 2}], {(1, 2): np.zeros(1)}])
def test_values_that_cannot_key_a_graph_are_refused(value):
    with pytest.raises(UnsupportedArgument):
        flatten(value)


def test_a_miss_is_explained_by_the_first_difference():
    base = GraphKey(True, True, (), (), (((4, 8), "f32", "cpu", True),))
    other = base._replace(tensors=(((6, 8), "f32", "cpu", True),))
    assert explain_miss(other, [base]) == "shape of tensor argument 0: (6, 8) vs (4, 8)"
    assert explain_miss(base._replace(training=False), [base]).startswith("training=False")


def test_pool_ledger_allows_replay_only_over_older_in_flight_captures():
    ledger = PoolLedger(new_pool=object)
    first, second, third = ledger.next_seq(), ledger.next_seq(), ledger.next_seq()
    ledger.inflight[1] = second
    assert ledger.may_replay(third)
    assert not ledger.may_replay(first)  # ``second`` may sit in memory that ``first`` reuses
    del ledger.inflight[1]
    assert ledger.may_replay(first)


class Graph:
    """What the ledger sees of a graph: an object it can hold weakly."""


def test_pool_ledger_retires_a_pool_with_its_last_graph_and_after_a_failure():
    ledger = PoolLedger(new_pool=object)
    pool = ledger.pool_for_capture()
    first = Graph()
    ledger.adopt(first)
    assert ledger.pool_for_capture() is pool  # shared while a graph of it lives
    second = Graph()
    ledger.adopt(second)
    del first, second
    fresh = ledger.pool_for_capture()
    assert fresh is not pool  # the allocator retired the old pool with its last graph
    third = Graph()
    ledger.adopt(third)
    ref = weakref.ref(third)
    assert ledger.pool_for_capture() is fresh
    del third
    assert ref() is not None  # pinned until the next graph is adopted: a GC can't retire the pool
    ledger.poison()
    assert ledger.pool_for_capture() is not fresh


def test_pool_ledger_after_a_failure_counts_only_graphs_of_the_new_pool():
    ledger = PoolLedger(new_pool=object)
    old_pool = ledger.pool_for_capture()
    other_model = Graph()  # a graph of another model, alive throughout
    ledger.adopt(other_model)
    ledger.poison()  # a capture into old_pool failed
    pool = ledger.pool_for_capture()
    assert pool is not old_pool
    inner = Graph()
    ledger.adopt(inner)
    del inner  # the new pool's last graph is gone: the allocator retires that pool
    assert ledger.pool_for_capture() is not pool  # other_model's graph keeps old_pool, not this one


class Box:
    """A stand-in owner of a host-syncing method."""

    def item(self):
        return 1


def test_stand_in_refuses_host_syncs_only_while_capturing():
    graph = standin.StandInGraph(lambda dst, src: None, [(Box, "item")])
    with pytest.raises(standin.HostSyncDuringCapture, match="Box.item"):
        graph.capture(lambda: [Box().item()])
    assert Box().item() == 1 and not standin.is_capturing()
    seen = []
    graph.capture(lambda: seen.append(standin.is_capturing()) or [])
    assert seen == [True]


class Stream:
    """A stand-in owner of the framework's "is a graph being captured" query."""

    @staticmethod
    def capturing():
        return False


def test_stand_in_says_a_graph_is_captured_only_while_capturing():
    """Library code that skips a host check while capturing (`if is_tracing(x): return`) must take that path on
    the stand-in, as it does on a GPU, instead of syncing and falling back."""
    graph = standin.StandInGraph(lambda dst, src: None, [(Box, "item")], [(Stream, "capturing")])

    def step():
        return [] if Stream.capturing() else [Box().item()]

    assert graph.capture(step) == []
    assert Stream.capturing() is False and Box().item() == 1


def test_stand_in_replays_into_the_captured_outputs():
    static_in = np.array([1.0, 2.0])

    def copy(dst, src):
        dst[...] = src

    graph = standin.StandInGraph(copy, [])
    (out,) = graph.capture(lambda: [static_in * 2])
    static_in[:] = [5.0, 7.0]
    graph.replay()
    assert out.tolist() == [10.0, 14.0]  # same buffer, new values: what a held output would see
    assert graph.live_outputs[0] is not out


def test_gaps_between_a_graph_and_eager(cpu_fw):
    """How the first-replay check measures a difference: a NaN on either side is a difference (eager's
    NaN is eager's to give: the layer then runs eagerly), integers differ or not, shapes must match."""
    import math

    fw = cpu_fw
    ops = fw.ops()
    nan = float("nan")
    pairs = [
        (fw.tensor(np.array([1.0, 2.0, 3.0], "float32")), fw.tensor(np.array([1.5, 2.0, -4.0], "float32"))),
        (fw.tensor(np.array([1.0, nan], "float32")), fw.tensor(np.array([1.0, 2.0], "float32"))),
        (fw.ints(np.array([1, 2])), fw.ints(np.array([1, 3]))),
        (fw.ints(np.array([1, 2])), fw.ints(np.array([1, 2]))),
        (fw.tensor(np.zeros(2, "float32")), fw.tensor(np.zeros(3, "float32"))),
    ]
    rows = ops.to_host([ops.gap(a, b) for a, b in pairs])
    assert rows[0] == pytest.approx((7.0, 4.0))
    assert math.isnan(rows[1][0]) and math.isinf(verify._relative(rows[:2])[1])
    assert rows[2][0] > 0 and rows[3][0] == 0
    assert math.isinf(rows[4][0])


class _Sizes:
    """What `_judge` asks of the framework: each tensor's size in bytes (float32 here)."""

    @staticmethod
    def itemsize(_t) -> int:
        return 4


@pytest.mark.parametrize(
    "gap, samples, judged, caught",
    [
        (8e-5, [1.8e-5, 3e-5], 2, False),  # one low sample of eager's noise, the next covers the gap
        (8e-5, [1e-6, 1e-6, 1e-6, 1e-6], 3, True),  # a steady gap past every sample: caught after three
        (0.5, [1e-3, 0.2], 1, True),  # past what any noise may excuse: caught at once
        (1e-6, [], 0, False),  # within the tight bound: eager is not run again
    ],
)
def test_the_check_samples_eager_noise_again_before_it_calls_a_graph_wrong(gap, samples, judged, caught):
    """A kernel that adds in another order on each run differs from itself by a different amount each
    time; one low sample must not make an exact graph eager (a whole SqueezeNet's weight gradients did
    on the H200), nor may more samples excuse a gap no noise explains."""
    taken = []

    def noise():
        taken.append(samples[len(taken)])
        return [(taken[-1], 1.0)]

    def judge():
        verify._judge(_Sizes, [(gap, 1.0)], [None], noise, lambda i: f"output {i}")

    if caught:
        with pytest.raises(verify.Mismatch, match="output 0 differs from eager"):
            judge()
    else:
        judge()
    assert len(taken) == judged


def test_a_gradients_layout_is_its_strides_where_a_buffer_can_take_them() -> None:
    """What the backward compares with its buffer's layout at every replay: the strides of a dense tensor
    (contiguous, transposed, with size-1 dimensions), none for one a copy cannot write (expanded)."""
    torch = pytest.importorskip("torch")
    from autograph_cg.runtime.torch_adapter import TorchOps

    t = torch.zeros(2, 3, 4)
    assert TorchOps.layout(t) == (12, 4, 1)
    assert TorchOps.layout(t.transpose(1, 2)) == (12, 1, 4)
    assert TorchOps.layout(torch.zeros(2, 1, 4)[:, :, :]) == (4, 4, 1)
    assert TorchOps.layout(torch.zeros(4).expand(3, 4)) is None
    assert TorchOps.layout(t[:, :, ::2]) is None  # gapped
    channels_first = torch.zeros(2, 4, 3).transpose(1, 2)  # t's shape, laid out otherwise
    buffer = TorchOps.zeros_in_layout(t, TorchOps.layout(channels_first))
    assert buffer.stride() == (12, 1, 3) and buffer.shape == t.shape and not buffer.any()
