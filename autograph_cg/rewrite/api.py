"""A plan applied to one file's bytes, or undone: pure edits (`rewrite_source`, `undo_source`), with libcst. The file
loop that reads, edits and writes files is `rewrite/files.py`, which needs none of this (nor libcst) where no file is
edited.

Every edit is checked before anything is written: the AST must equal the original's apart from the intended
wrappers and import, and for a rewrite, undoing it must give back exactly what undoing the original gives
(the original itself when it held no wrappers). A file that fails any check is reported and left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from autograph_cg.analysis.plan import WrapSite
from autograph_cg.rewrite.imports import ImportConflict, add_import, has_runtime_import, remove_import
from autograph_cg.rewrite.safety import check_equivalent
from autograph_cg.rewrite.settings import WrapSettings
from autograph_cg.rewrite.shape import WRAPPER
from autograph_cg.rewrite.source import Source, Unsafe, load
from autograph_cg.rewrite.transform import Counts, unwrap_all, wrap_sites

_WRAPPER_BYTES = WRAPPER.encode()


@dataclass(frozen=True, slots=True)
class SourceEdit:
    new: bytes
    changed: int  # wrappers added (or their guards updated) or removed
    kept: int  # sites a pragma (or a comment inside a wrapper) kept as they were
    text: str  # the decoded original, for diffs


def rewrite_source(data: bytes, sites: Sequence[WrapSite], settings: WrapSettings = WrapSettings()) -> SourceEdit:
    """Wrap `sites` in one file's bytes; raises Unsafe when the file must be left alone."""
    source = load(data)
    texts, counts = wrap_sites(source, sites, settings)
    if counts.missing:
        s = counts.missing[0]
        raise Unsafe(
            "stale-plan",
            f"no call at {s.span.line}:{s.span.col} for {s.wrapped_class} (file changed since it was analyzed?)",
        )
    if not counts.changed and not counts.updated:
        return SourceEdit(data, 0, counts.kept, source.text)
    try:
        present = not counts.changed or has_runtime_import(source)  # updates only: as it was
    except ImportConflict as exc:
        raise Unsafe("conflict", str(exc)) from None
    if not present:  # wrapping only adds wrappers: a statement whose text changed uses the wrapper now
        texts = add_import(source, texts, {i for i, t in enumerate(texts) if t != source.statements[i].text})
    new = source.code(texts)
    # Undo from the new bytes, read as a later run would read them, must give back what undo of the original
    # gives: the original itself when it held no wrappers. Equal bytes need no AST check.
    baseline = _unwrapped(source)[0] if _WRAPPER_BYTES in data else data
    result = _reread(new)
    check_equivalent(source, result, counts.changed, 0 if present else 1)
    if _unwrapped(result)[0] != baseline:
        raise Unsafe("unsafe", "undo would not restore this file exactly")
    return SourceEdit(new, counts.changed + counts.updated, counts.kept, source.text)


def _reread(new: bytes) -> Source:
    """The edited bytes read afresh, as a later run reads them."""
    try:
        return load(new)
    except Unsafe as exc:
        raise Unsafe("unsafe", f"the rewritten source does not read back: {exc}") from None


def _unwrapped(source: Source) -> tuple[bytes, Counts, bool]:
    """The source without rewrite's wrappers and import, the counts, and whether the import went."""
    texts, counts = unwrap_all(source)
    texts, removed = remove_import(source, texts)
    return source.code(texts), counts, removed


def undo_source(data: bytes) -> SourceEdit:
    """Take off rewrite's wrappers and its import; raises Unsafe when the file must be left alone."""
    if _WRAPPER_BYTES not in data:
        return SourceEdit(data, 0, 0, "")
    source = load(data)
    new, counts, removed = _unwrapped(source)
    if new != data:
        check_equivalent(source, _reread(new), -counts.changed, -int(removed))
    return SourceEdit(new, counts.changed, counts.kept, source.text)
