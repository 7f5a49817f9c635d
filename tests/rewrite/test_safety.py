"""Safe mode: statements we cannot reproduce exactly are never edited, and no edit beyond the intended one is written."""

from __future__ import annotations

import libcst as cst
import pytest

from autograph_cg.rewrite import Unsafe, api, rewrite_source, transform, undo_source
from autograph_cg.rewrite.safety import check_equivalent
from autograph_cg.rewrite.source import load

from .sites import sites_for

GOOD = b"import paddle\n\nm = MLP(1)\n"


@pytest.mark.parametrize(
    ("data", "kind", "at"),
    [
        (b"m = MLP(1\n", "syntax-error", GOOD),
        (b"m = MLP('\xe9')\n", "undecodable", GOOD),  # latin-1 byte without a coding cookie
        (b"# -*- coding: klingon -*-\nm = MLP(1)\n", "undecodable", GOOD),
        (b"try:\n    m = MLP(1)\nexcept (A, B) :\n    pass\n", "not-reproducible", None),  # libcst drops the space
        (b"m = MLP(1)\rn = 2\r", "not-reproducible", None),  # old Mac line endings
    ],
)
def test_files_that_cannot_be_rewritten_exactly_are_refused(data: bytes, kind: str, at: bytes | None) -> None:
    """`at`: where the sites are, for a file the analyzer could not read either."""
    with pytest.raises(Unsafe) as err:
        rewrite_source(data, sites_for(at or data, {"MLP"}))
    assert err.value.kind == kind
    assert "\n" not in str(err.value)


def test_a_statement_libcst_cannot_reproduce_is_left_alone_and_the_others_are_edited() -> None:
    odd = b"try:\n    pass\nexcept (A, B) :\n    pass\n"
    edit = rewrite_source(odd + GOOD, sites_for(odd + GOOD, {"MLP"}))
    assert edit.new.startswith(odd) and edit.new.endswith(b"m = CUDAGraphedLayer(MLP(1))\n")


def _pair(old: str, new: bytes) -> tuple[object, object]:
    return load(old.encode()), load(new)


def test_check_equivalent_accepts_exactly_the_intended_change() -> None:
    check_equivalent(*_pair("m = f(1)\n", b"from autograph_cg.runtime import CUDAGraphedLayer\nm = CUDAGraphedLayer(f(1))\n"), 1, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("new", "wrappers", "imports"),
    [
        (b"m = CUDAGraphedLayer(f(2))\n", 1, 0),  # the call itself changed
        (b"m = CUDAGraphedLayer(f(1))\n", 2, 0),  # fewer wrappers than intended
        (b"m = CUDAGraphedLayer(f(1))\n", 1, 1),  # the import is missing
        (b"m = CUDAGraphedLayer(f(1), warmup=3)\n", 1, 0),  # not the wrapper's shape
        (b"m = CUDAGraphedLayer(f(1))\nm = f(1)\n", 1, 0),  # a statement more
        (b"m = CUDAGraphedLayer(1.0)\n", 1, 0),  # 1 and 1.0 are equal values, not equal code
    ],
)
def test_check_equivalent_refuses_anything_else(new: bytes, wrappers: int, imports: int) -> None:
    with pytest.raises(Unsafe):
        check_equivalent(*_pair("m = f(1)\n" if b"1.0" not in new else "m = CUDAGraphedLayer(1)\n", new), wrappers, imports)  # type: ignore[arg-type]


def test_an_edit_that_does_not_parse_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "add_import", lambda source, texts, users: [*texts, "def f(:\n"])
    with pytest.raises(Unsafe, match="does not read back"):
        rewrite_source(GOOD, sites_for(GOOD, {"MLP"}))


def test_a_faulty_transform_is_caught_before_anything_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    def drop_args(call: cst.Call, settings: object, guard: object = (), wrapped_class: str = "") -> cst.Call:
        return call.with_changes(args=())

    monkeypatch.setattr(transform, "build_wrapper", drop_args)
    with pytest.raises(Unsafe, match="differs from the original"):
        rewrite_source(GOOD, sites_for(GOOD, {"MLP"}))


def test_an_edit_undo_could_not_reverse_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "remove_import", lambda source, texts: (list(texts), False))
    with pytest.raises(Unsafe, match="undo would not restore"):
        rewrite_source(GOOD, sites_for(GOOD, {"MLP"}))


def test_undo_without_the_wrapper_name_does_not_parse_the_file() -> None:
    broken = b"def f(:\n"
    assert undo_source(broken).new == broken
