"""`autograph-cg rewrite`: wrap the plan's sites in `CUDAGraphedLayer` with libcst, safely and reversibly.

The edits (`rewrite_source`, `undo_source`, `SourceEdit`) are loaded when first asked for, and libcst with them: the
file loop, its results and the wrappers' settings need neither.
"""

from typing import Any

from autograph_cg.rewrite.files import edit_pool, rewrite_files, undo_files
from autograph_cg.rewrite.results import FileResult, RewriteReport, Status, Unsafe
from autograph_cg.rewrite.settings import WrapSettings

_EDITS = ("SourceEdit", "rewrite_source", "undo_source")

__all__ = [
    "FileResult",
    "RewriteReport",
    "SourceEdit",
    "Status",
    "Unsafe",
    "WrapSettings",
    "edit_pool",
    "rewrite_files",
    "rewrite_source",
    "undo_files",
    "undo_source",
]


def __getattr__(name: str) -> Any:
    if name in _EDITS:
        from autograph_cg.rewrite import api

        return getattr(api, name)
    raise AttributeError(f"module 'autograph_cg.rewrite' has no attribute {name!r}")
