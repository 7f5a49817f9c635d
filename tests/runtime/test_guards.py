"""Argument guards: a layer capturable only while some of its forward's arguments hold the values the
plan names runs its graphs for calls that pass the tests and eagerly, with the reason, for the rest."""

from __future__ import annotations

import pytest

from autograph_cg.runtime import CUDAGraphedLayer, stats_of
from tests.runtime.harness import assert_all_close, close, randn

D, B = 8, 4
GUARD = {"cache": "is None", "use_cache": "falsy"}


def test_calls_that_pass_the_guard_replay_and_the_others_run_eagerly(fw):
    ref = fw.build("Cached", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1, guard=GUARD)
    for step in range(3):  # no cache: graphs
        x = randn(B, D)
        assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol), step
    caches = {"wrapped": [], "ref": []}
    for step in range(2):  # a cache, by keyword and by position: eager, and the cache fills as eagerly
        x = randn(B, D)
        got = [
            fw.numpy(wrapped(fw.tensor(x), caches["wrapped"], use_cache=True)),
            fw.numpy(ref(fw.tensor(x), caches["ref"], use_cache=True)),
        ]
        assert close(got[0], got[1], fw.atol), step
        assert_all_close([fw.numpy(t) for t in caches["wrapped"]], [fw.numpy(t) for t in caches["ref"]], fw.atol, "cache")
    x = randn(B, D)
    assert close(fw.numpy(wrapped(fw.tensor(x), None, True)), fw.numpy(ref(fw.tensor(x), None, True)), fw.atol)
    stats = stats_of(wrapped)
    assert stats["forward_replays"] == 2 and stats["disabled_reason"] is None
    assert stats["fallbacks"] == {"guard: cache is not None": 2, "guard: use_cache is not false": 1}


def test_a_guard_on_a_name_handed_on_through_kwargs_reads_the_calls_keywords(fw):
    """A layer that hands ``**kwargs`` on to one taking a cache is guarded on the keyword: left out, it passes."""
    ref = fw.build("Handing", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1, guard={"cache": "is None"})
    for _ in range(3):
        x = randn(B, D)
        assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol)
    caches: dict[str, list] = {"wrapped": [], "ref": []}
    x = randn(B, D)
    got = [fw.numpy(m(fw.tensor(x), cache=caches[k], use_cache=True)) for k, m in (("wrapped", wrapped), ("ref", ref))]
    assert close(got[0], got[1], fw.atol) and len(caches["wrapped"]) == len(caches["ref"]) == 1
    stats = stats_of(wrapped)
    assert stats["forward_replays"] == 2 and stats["fallbacks"] == {"guard: cache is not None": 1}


def _agree(fw, wrapped, ref, call, times: int) -> None:
    """`call` of the wrapped layer gives what it gives of the reference, `times` times on fresh inputs."""
    for _ in range(times):
        x = randn(B, D)
        assert close(fw.numpy(call(wrapped, fw.tensor(x))), fw.numpy(call(ref, fw.tensor(x))), fw.atol)


def test_a_flag_a_decorator_may_fill_replays_only_when_passed_false(cpu_fw):
    """"passed false": a value left out or passed as None fails (a decorated forward may fill it), False passes."""
    fw = cpu_fw
    ref = fw.build("Cached", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1, guard={"cache": "is None", "use_cache": "passed false"})
    for call in (lambda m, x: m(x), lambda m, x: m(x, None, None), lambda m, x: m(x, use_cache=None)):
        _agree(fw, wrapped, ref, call, 1)
    for call in (lambda m, x: m(x, use_cache=False), lambda m, x: m(x, None, False), lambda m, x: m(x, use_cache=0)):
        _agree(fw, wrapped, ref, call, 2)
    stats = stats_of(wrapped)
    assert stats["fallbacks"] == {"guard: use_cache is not passed as false": 3}
    assert stats["forward_replays"] > 0 and stats["disabled_reason"] is None


def test_a_flag_a_decorator_fills_from_the_config_replays_when_passed_false_or_left_to_a_false_config(cpu_fw):
    """"config false": a false value passed passes whatever the config; left out or None, the wrapped layer's
    ``config.<name>`` decides, and it must be false and set (None: a decorator further in may fill it)."""
    from types import SimpleNamespace

    fw = cpu_fw
    ref = fw.build("Cached", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1, guard={"cache": "is None", "use_cache": "config false"})
    calls = [
        (False, lambda m, x: m(x)),
        (False, lambda m, x: m(x, use_cache=None)),
        (True, lambda m, x: m(x, use_cache=False)),
        (None, lambda m, x: m(x, None, False)),
        (True, lambda m, x: m(x)),
        (None, lambda m, x: m(x)),
        (False, lambda m, x: m(x, use_cache=True)),
    ]
    for use_cache, call in calls:
        wrapped.config = SimpleNamespace(use_cache=use_cache)
        _agree(fw, wrapped, ref, call, 2)
    stats = stats_of(wrapped)
    assert stats["fallbacks"] == {"guard: use_cache is not passed as false and config.use_cache is not false": 6}
    assert stats["forward_replays"] > 0 and stats["disabled_reason"] is None
    del wrapped.config
    wrapped(fw.tensor(randn(B, D)))  # no config at all: left out fails
    assert stats_of(wrapped)["fallbacks"]["guard: use_cache is not passed as false and config.use_cache is not false"] == 7


def test_a_guard_on_a_setting_of_the_layer_reads_it_on_every_call(cpu_fw):
    """``self.settings.decoder``: read from the wrapped layer at each call; a call while it fails runs eagerly, and
    the graphs serve again once it holds (a setting missing fails it)."""
    from types import SimpleNamespace

    fw = cpu_fw
    ref = fw.build("Cached", D)
    wrapped = fw.wrap(fw.twin(ref), num_warmup_steps=1, guard={"cache": "is None", "self.settings.decoder": "falsy"})
    wrapped.settings = SimpleNamespace(decoder=False)
    for decoder in (False, False, True, False, None):
        if decoder is None:
            del wrapped.settings
        else:
            wrapped.settings.decoder = decoder
        x = randn(B, D)
        assert close(fw.numpy(wrapped(fw.tensor(x))), fw.numpy(ref(fw.tensor(x))), fw.atol), decoder
    stats = stats_of(wrapped)
    assert stats["fallbacks"] == {"guard: self.settings.decoder is not false": 2}
    assert stats["forward_replays"] >= 2 and stats["disabled_reason"] is None


def test_a_guard_names_parameters_of_the_forward(fw):
    with pytest.raises(TypeError, match="no parameter of that name"):
        fw.wrap(fw.build("Cached", D), guard={"past": "is None"})
    with pytest.raises(ValueError, match="unknown test"):
        fw.wrap(fw.build("Cached", D), guard={"cache": "is empty"})


def test_a_tensor_where_a_flag_is_guarded_runs_eagerly_without_a_host_sync(cpu_fw):
    fw = cpu_fw
    wrapped = fw.wrap(fw.build("Cached", D), num_warmup_steps=0, guard={"use_cache": "falsy"})
    wrapped(fw.tensor(randn(B, D)), None, fw.tensor(randn(1)))
    assert stats_of(wrapped)["fallbacks"] == {"guard: use_cache is not false": 1}


def test_guards_travel_with_copies(cpu_fw):
    import copy

    fw = cpu_fw
    wrapped = fw.wrap(fw.build("Cached", D), guard=GUARD)
    twin = copy.deepcopy(wrapped)
    assert isinstance(twin, CUDAGraphedLayer)
    twin(fw.tensor(randn(B, D)), [], use_cache=True)
    assert stats_of(twin)["fallbacks"] == {"guard: cache is not None": 1}


def test_a_guard_on_a_setting_of_every_item_of_a_container():
    """``self.h.*.attn.training``: the setting of each layer a container holds (a list's items, a dict's values),
    every one of them; an empty container passes, and anything that is no container fails."""
    from types import SimpleNamespace as NS

    from autograph_cg.runtime.guards import Guard

    guard = Guard(lambda x: x, (("self.h.*.attn.training", "truthy"),))
    failed = "guard: self.h.*.attn.training is not true"
    layer = NS(h=[NS(attn=NS(training=True)), NS(attn=NS(training=True))])
    assert guard.failure((1,), {}, layer) is None
    layer.h[1].attn.training = False
    assert guard.failure((1,), {}, layer) == failed
    del layer.h[1].attn.training
    assert guard.failure((1,), {}, layer) == failed
    for held, expected in (({"a": NS(attn=NS(training=True))}, None), ({"a": NS(attn=NS(training=False))}, failed), ([], None), (3, failed)):
        layer.h = held
        assert guard.failure((1,), {}, layer) == expected, held
    nested = Guard(lambda x: x, (("self.h.*.*.on", "falsy"),))
    assert nested.failure((1,), {}, NS(h=[[NS(on=False)], [NS(on=False), NS(on=False)]])) is None
    assert nested.failure((1,), {}, NS(h=[[NS(on=False)], [NS(on=True)]])) == "guard: self.h.*.*.on is not false"
