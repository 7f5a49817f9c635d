"""Model libraries' containers in arguments and outputs: rebuilt with their own type, through graphs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from autograph_cg.runtime.tree import Tree, UnsupportedArgument
from autograph_cg.runtime import stats_of
from tests.runtime.harness import assert_all_close, randn
from tests.runtime.models import Output, Pair, State

D, B = 8, 4


def parts(y):
    """The tensors of a Heads output: main output, then the aux tensors."""
    if isinstance(y, Output):
        return y.logits, y["aux"]
    if isinstance(y, Pair):
        return y.first, y.second
    return y.h, ()


@pytest.mark.parametrize("out", ["output", "pair", "state"])
def test_containers_train_and_infer_like_eager(fw, out):
    ref = fw.build("Heads", D, out)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(6):
        h, first, target = randn(B, D), randn(B, D), randn(B, D)
        with_target = out == "output" and step >= 3  # sets the output's loss field: a new key
        results, kinds = [], []
        for model in (wrapped, ref):
            state = State(fw.tensor(h, True), 0.5)
            extra = Pair(fw.tensor(first, True), fw.ints(np.arange(B, dtype="int64")))
            y = model(state, extra, fw.tensor(target) if with_target else None)
            kinds.append((type(y), list(y.keys()) if isinstance(y, Output) else None))
            main, aux = parts(y)
            loss = fw.loss(main) + (fw.loss(aux[0]) if aux else 0)
            if with_target:
                loss = loss + y.loss
            fw.backward(loss)
            results.append(
                [fw.numpy(main)] + [fw.numpy(t) for t in aux] + [fw.grad(state.h), fw.grad(extra.first)]
                + fw.param_grads(model)
            )
            if isinstance(y, State):
                assert y.scale == 0.5
        assert kinds[0] == kinds[1], f"step {step}: {kinds}"
        assert_all_close(results[0], results[1], fw.atol, f"step {step}")
        fw.clear_grads(wrapped, True)
        fw.clear_grads(ref, True)
    stats = stats_of(wrapped)
    assert not stats["fallbacks"] and stats["eager_calls"] == 0
    assert stats["captures"] == (2 if out == "output" else 1)
    assert stats["backward_replays"] == (4 if out == "output" else 5)
    wrapped.eval()
    ref.eval()
    held = []
    with fw.no_grad():
        for _ in range(3):
            h, first = randn(B, D), randn(B, D)
            ys = [
                model(State(fw.tensor(h), 2.0), Pair(fw.tensor(first), fw.ints(np.arange(B, dtype="int64"))))
                for model in (wrapped, ref)
            ]
            assert type(ys[0]) is type(ys[1])
            held.append(ys)
    for got, want in held:  # held outputs are not overwritten by later replays
        assert_all_close([fw.numpy(t) for t in parts(got)[:1]], [fw.numpy(t) for t in parts(want)[:1]], fw.atol, "infer")
    assert stats_of(wrapped)["forward_replays"] == stats["forward_replays"] + 2


class Boxed:
    """A container that only the pytree registry knows how to take apart."""

    def __init__(self, value, tag: str) -> None:
        self.value, self.tag = value, tag


def test_containers_registered_with_torch_pytree_capture(torch_fw):
    import torch
    from torch.utils import _pytree

    if Boxed not in _pytree.SUPPORTED_NODES:
        _pytree.register_pytree_node(Boxed, lambda b: ([b.value], b.tag), lambda values, tag: Boxed(values[0], tag))

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(D, D)

        def forward(self, box: Boxed) -> Boxed:
            return Boxed(self.fc(box.value), box.tag + "!")

    fw = torch_fw
    ref = fw.place(Layer())
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1)
    for step in range(3):
        x = randn(B, D)
        got = []
        for model in (wrapped, ref):
            xt = fw.tensor(x, True)
            y = model(Boxed(xt, "t"))
            assert isinstance(y, Boxed) and y.tag == "t!"
            fw.backward(fw.loss(y.value))
            got.append([fw.numpy(y.value), fw.grad(xt)] + fw.param_grads(model))
        assert_all_close(got[0], got[1], fw.atol, f"step {step}")
        fw.clear_grads(wrapped, True)
        fw.clear_grads(ref, True)
    assert stats_of(wrapped)["captures"] == 1 and stats_of(wrapped)["backward_replays"] == 2


IS_ARRAY = Tree(lambda x: isinstance(x, np.ndarray), lambda x: False)


def test_the_fields_that_are_set_key_the_graph():
    a = np.zeros(2)
    assert IS_ARRAY.flatten(Output(logits=a))[1] != IS_ARRAY.flatten(Output(loss=a, logits=a))[1]
    tensors, spec = IS_ARRAY.flatten(State(a, 0.5))
    assert tensors == [a] and spec != IS_ARRAY.flatten(State(a, 1.0))[1]


def test_a_dataclass_field_outside_init_is_refused():
    @dataclasses.dataclass
    class Derived:
        h: object
        norm: object = dataclasses.field(init=False, default=None)

    with pytest.raises(UnsupportedArgument, match="outside __init__"):
        IS_ARRAY.flatten(Derived(np.zeros(1)))
