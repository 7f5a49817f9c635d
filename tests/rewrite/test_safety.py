"""Safe mode: files we cannot reproduce exactly are refused, and so is any edit beyond the intended one."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from autograph_cg.rewrite import Unsafe, api, rewrite_source, transform, undo_source
from autograph_cg.rewrite.safety import check_equivalent, load

from .sites import sites_for

GOOD = b"import paddle\n\nm = MLP(1)\n"


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"m = MLP(1\n", "syntax-error"),
        (b"m = MLP('\xe9')\n", "undecodable"),  # latin-1 byte without a coding cookie
        (b"# -*- coding: klingon -*-\nm = MLP(1)\n", "undecodable"),
        (b"try:\n    m = MLP(1)\nexcept (A, B) :\n    pass\n", "not-reproducible"),  # libcst drops the space
        (b"m = MLP(1)\rn = 2\r", "not-reproducible"),  # old Mac line endings
    ],
)
def test_files_that_cannot_be_rewritten_exactly_are_refused(data: bytes, kind: str) -> None:
    with pytest.raises(Unsafe) as err:
        load(data)
    assert err.value.kind == kind
    assert "\n" not in str(err.value)


def test_check_equivalent_accepts_exactly_the_intended_change() -> None:
    check_equivalent(ast.parse("m = f(1)\n"), b"from autograph_cg.runtime import CUDAGraphedLayer\nm = CUDAGraphedLayer(f(1))\n", 1, 1)


@pytest.mark.parametrize(
    ("new", "wrappers", "imports"),
    [
        (b"m = CUDAGraphedLayer(f(2))\n", 1, 0),  # the call itself changed
        (b"m = CUDAGraphedLayer(f(1))\n", 2, 0),  # fewer wrappers than intended
        (b"m = CUDAGraphedLayer(f(1))\n", 1, 1),  # the import is missing
        (b"m = CUDAGraphedLayer(f(1), warmup=3)\n", 1, 0),  # not the wrapper's shape
        (b"m = CUDAGraphedLayer(f(1)\n", 1, 0),  # does not parse
    ],
)
def test_check_equivalent_refuses_anything_else(new: bytes, wrappers: int, imports: int) -> None:
    with pytest.raises(Unsafe):
        check_equivalent(ast.parse("m = f(1)\n"), new, wrappers, imports)


def test_a_faulty_transform_is_caught_before_anything_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    def drop_args(call: cst.Call, settings: object, guard: object = (), wrapped_class: str = "") -> cst.Call:
        return call.with_changes(args=())

    monkeypatch.setattr(transform, "build_wrapper", drop_args)
    with pytest.raises(Unsafe, match="differs from the original"):
        rewrite_source(GOOD, sites_for(GOOD, {"MLP"}))


def test_an_edit_undo_could_not_reverse_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "remove_import", lambda module: (module, False))
    with pytest.raises(Unsafe, match="undo would not restore"):
        rewrite_source(GOOD, sites_for(GOOD, {"MLP"}))


def test_undo_without_the_wrapper_name_does_not_parse_the_file() -> None:
    broken = b"def f(:\n"
    assert undo_source(broken).new == broken
