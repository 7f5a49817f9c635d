"""`autograph-cg rewrite`: wrap the plan's sites in `CUDAGraphedLayer` with libcst, safely and reversibly."""

from autograph_cg.rewrite.api import SourceEdit, edit_pool, rewrite_files, rewrite_source, undo_files, undo_source
from autograph_cg.rewrite.results import FileResult, RewriteReport, Status
from autograph_cg.rewrite.source import Unsafe
from autograph_cg.rewrite.shape import WrapSettings

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
