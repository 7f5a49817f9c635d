"""Wrapping planned calls: where the wrapper goes, what stays byte-for-byte, and that undo and a second run change nothing."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from autograph_cg.rewrite import Unsafe, WrapSettings, rewrite_source, undo_source

from .sites import sites_for

IMPORT = "from autograph_cg.runtime import CUDAGraphedLayer  # autograph-cg: added\n"


def rewrite(src: str | bytes, names: set[str], settings: WrapSettings = WrapSettings()) -> bytes:
    """Rewrite, then check undo gives the input back and a second run (on the new positions) changes nothing."""
    data = src.encode() if isinstance(src, str) else src
    new = rewrite_source(data, sites_for(data, names), settings).new
    assert undo_source(new).new == data
    assert rewrite_source(new, sites_for(new, names), settings).new == new
    return new


def d(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


HEAD = "import paddle.nn as nn\n\nfrom .mlp import MLP\n\n\n"
HEAD_NEW = "import paddle.nn as nn\n" + IMPORT + "\nfrom .mlp import MLP\n\n\n"

CASES = {
    "attribute": (
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.mlp = MLP(cfg)  # note\n",
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.mlp = CUDAGraphedLayer(MLP(cfg))  # note\n",
    ),
    "parenthesized": (
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.mlp = (\n            MLP(cfg)\n        )\n",
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.mlp = (\n            CUDAGraphedLayer(MLP(cfg))\n        )\n",
    ),
    "multi-line call with comments": (
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.mlp = MLP(\n            cfg,  # width\n            'x',\n        )\n",
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.mlp = CUDAGraphedLayer(MLP(\n            cfg,  # width\n            'x',\n        ))\n",
    ),
    "comprehension in a container": (
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.blocks = nn.LayerList([MLP(cfg) for _ in range(3)])\n",
        "class Net(nn.Layer):\n    def __init__(self, cfg):\n        self.blocks = nn.LayerList([CUDAGraphedLayer(MLP(cfg)) for _ in range(3)])\n",
    ),
    "ternary branch and sequential items": (
        "class Net(nn.Layer):\n    def __init__(self, c):\n        self.b = [MLP(c) if c.x else nn.ReLU() for _ in range(2)]\n        self.s = nn.Sequential(MLP(c), nn.ReLU())\n",
        "class Net(nn.Layer):\n    def __init__(self, c):\n        self.b = [CUDAGraphedLayer(MLP(c)) if c.x else nn.ReLU() for _ in range(2)]\n        self.s = nn.Sequential(CUDAGraphedLayer(MLP(c)), nn.ReLU())\n",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrap_cases(name: str) -> None:
    body, expected = CASES[name]
    assert rewrite(HEAD + body, {"MLP"}).decode() == HEAD_NEW + expected


def test_only_the_planned_call_of_a_chain_is_wrapped() -> None:
    src = HEAD + "x = MLP(1)(2)\ny = make(MLP(3))\n"
    data = src.encode()
    inner = [s for s in sites_for(data, {"MLP"}) if s.span.end_col - s.span.col == len("MLP(1)")]
    new = rewrite_source(data, inner).new.decode()
    assert "x = CUDAGraphedLayer(MLP(1))(2)\ny = make(CUDAGraphedLayer(MLP(3)))\n" in new


def test_settings_are_written_and_undo_recognises_them() -> None:
    src = HEAD + "m = MLP(1)\n"
    new = rewrite(src, {"MLP"}, WrapSettings(num_warmup_steps=3)).decode()
    assert "m = CUDAGraphedLayer(MLP(1), num_warmup_steps=3)\n" in new


GUARD = (("past_key_values", "is None"), ("use_cache", "falsy"))


def guarded(data: bytes, update: bool = False) -> list:
    return [replace(site, guard=GUARD, update=update) for site in sites_for(data, {"MLP"})]


def test_a_guard_is_written_as_the_runtimes_dict_argument_and_undo_takes_it_off() -> None:
    data = (HEAD + "m = MLP(1)\n").encode()
    new = rewrite_source(data, guarded(data), WrapSettings(num_warmup_steps=3)).new
    assert b'm = CUDAGraphedLayer(MLP(1), num_warmup_steps=3, guard={"past_key_values": "is None", "use_cache": "falsy"})\n' in new
    assert undo_source(new).new == data
    assert rewrite_source(new, guarded(new)).new == new  # wrapped with this guard: existing


def test_a_stale_guard_is_updated_other_settings_kept_and_undo_still_restores() -> None:
    original = (HEAD + "m = MLP(1)\n").encode()
    stale = (HEAD_NEW + 'm = CUDAGraphedLayer(MLP(1), num_warmup_steps=2, guard={"x": "truthy"})\n').encode()
    edit = rewrite_source(stale, guarded(stale, update=True))
    assert edit.changed == 1
    assert b'm = CUDAGraphedLayer(MLP(1), num_warmup_steps=2, guard={"past_key_values": "is None", "use_cache": "falsy"})\n' in edit.new
    assert undo_source(edit.new).new == undo_source(stale).new == original
    dropped = rewrite_source(stale, [replace(s, update=True) for s in sites_for(stale, {"MLP"})]).new  # no guard now
    assert b"m = CUDAGraphedLayer(MLP(1), num_warmup_steps=2)\n" in dropped


def test_a_guard_that_is_no_literal_of_tests_is_not_ours_and_undo_keeps_it() -> None:
    src = HEAD_NEW + 'm = CUDAGraphedLayer(MLP(1), guard={"x": "is empty"})\nn = CUDAGraphedLayer(MLP(2), guard=GUARD)\n'
    assert undo_source(src.encode()).new == src.encode()


def test_a_wrapper_with_unknown_keywords_is_not_ours_and_undo_keeps_it() -> None:
    src = HEAD_NEW + "m = CUDAGraphedLayer(MLP(1), max_graphs=4)\nn = CUDAGraphedLayer(MLP(2), num_warmup_steps=True)\n"
    assert undo_source(src.encode()).new == src.encode()


def test_unicode_tabs_crlf_bom_and_latin1_cookie_are_kept() -> None:
    body = 'class Net(nn.Layer):\n\tdef __init__(self):\n\t\tself.mlp = MLP("é", 1)  # café\n'
    src = HEAD + body
    for data in (
        src.encode(),
        src.replace("\n", "\r\n").encode(),
        b"\xef\xbb\xbf" + src.encode(),
        ("# -*- coding: latin-1 -*-\n" + src).encode("latin-1"),
    ):
        new = rewrite(data, {"MLP"})
        assert new.count(b"CUDAGraphedLayer(MLP(") == 1
        assert new.startswith(data[:20])
        newline = b"\r\n" if b"\r\n" in data else b"\n"
        assert IMPORT.encode().replace(b"\n", newline) in new
        assert new.replace(b"CUDAGraphedLayer(", b"", 1).replace(b"))", b")", 1) == data.replace(
            b"import paddle.nn as nn" + newline,
            b"import paddle.nn as nn" + newline + IMPORT.encode().replace(b"\n", newline),
        )


def test_already_wrapped_site_is_left_alone() -> None:
    src = HEAD_NEW + "m = CUDAGraphedLayer(MLP(1))\n"
    data = src.encode()
    edit = rewrite_source(data, sites_for(data, {"MLP"}))
    assert (edit.new, edit.changed) == (data, 0)


def test_a_span_that_matches_no_call_refuses_the_file() -> None:
    data = (HEAD + "m = MLP(1)\n").encode()
    stale = sites_for(HEAD + "\nm = MLP(1)\n", {"MLP"})
    with pytest.raises(Unsafe) as err:
        rewrite_source(data, stale)
    assert err.value.kind == "stale-plan"


PRAGMAS = {
    "on the assignment": "class Net(nn.Layer):\n    def __init__(self):\n        self.a = MLP(1)  # autograph-cg: skip\n        self.b = MLP(2)\n",
    "on the line above": "class Net(nn.Layer):\n    def __init__(self):\n        # autograph-cg: skip\n        self.a = MLP(1)\n        self.b = MLP(2)\n",
    "inside a multi-line statement": "class Net(nn.Layer):\n    def __init__(self):\n        self.a = nn.LayerList(\n            [MLP(1)]  # autograph-cg: skip\n        )\n        self.b = MLP(2)\n",
}


@pytest.mark.parametrize("where", sorted(PRAGMAS))
def test_skip_pragma_keeps_the_statement(where: str) -> None:
    new = rewrite(HEAD + PRAGMAS[where], {"MLP"}).decode()
    assert "CUDAGraphedLayer(MLP(2))" in new and "CUDAGraphedLayer(MLP(1))" not in new


@pytest.mark.parametrize(
    "cls",
    [
        "class Net(nn.Layer):  # autograph-cg: skip\n",
        "# autograph-cg: skip\nclass Net(nn.Layer):\n",
        "@dataclass  # autograph-cg: skip\nclass Net(nn.Layer):\n",
    ],
)
def test_skip_pragma_on_the_owner_class(cls: str) -> None:
    src = HEAD + cls + "    def __init__(self):\n        self.a = MLP(1)\n\n\nclass Other(nn.Layer):\n    def __init__(self):\n        self.b = MLP(2)\n"
    new = rewrite(src, {"MLP"}).decode()
    assert "CUDAGraphedLayer(MLP(2))" in new and "CUDAGraphedLayer(MLP(1))" not in new


def test_skip_pragma_on_the_constructed_class() -> None:
    src = HEAD + "class MLP(nn.Layer):  # autograph-cg: skip\n    pass\n\n\nclass Other(nn.Layer):\n    def __init__(self):\n        self.b = MLP(2)\n        self.c = Head(3)\n"
    new = rewrite(src, {"MLP", "Head"}).decode()
    assert "self.b = MLP(2)" in new and "CUDAGraphedLayer(Head(3))" in new


def test_undo_keeps_pragma_protected_and_commented_wrappers() -> None:
    src = HEAD_NEW + (
        "a = CUDAGraphedLayer(MLP(1))  # autograph-cg: skip\n"
        "b = CUDAGraphedLayer(  # hand-written, explained\n    MLP(2)\n)\n"
        "c = CUDAGraphedLayer(MLP(3))\n"
    )
    edit = undo_source(src.encode())
    assert edit.changed == 1 and edit.kept == 2
    assert edit.new.decode() == src.replace("c = CUDAGraphedLayer(MLP(3))", "c = MLP(3)")


def test_undo_tells_the_wrappers_comments_from_its_calls_and_reaches_nested_wrappers() -> None:
    src = HEAD_NEW + (
        "a = CUDAGraphedLayer(MLP(  # the call's own comment\n    1))\n"
        "b = Seq(CUDAGraphedLayer(Block(CUDAGraphedLayer(MLP(2)))), x=[CUDAGraphedLayer(MLP(3))])\n"
        "c = CUDAGraphedLayer(MLP(4)  # the wrapper's\n)\n"
    )
    edit = undo_source(src.encode())
    assert (edit.changed, edit.kept) == (4, 1)
    assert edit.new.decode() == src.replace("CUDAGraphedLayer(MLP(  #", "MLP(  #").replace("    1))\n", "    1)\n").replace(
        "Seq(CUDAGraphedLayer(Block(CUDAGraphedLayer(MLP(2)))), x=[CUDAGraphedLayer(MLP(3))])", "Seq(Block(MLP(2)), x=[MLP(3)])"
    )
