"""`bench/corpus_safety.py` as a module: the tests run the same checks as the corpus benchmark."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _load():
    # bench/ holds scripts, not a package; a dataclass module must be registered while it loads.
    spec = importlib.util.spec_from_file_location("corpus_safety", REPO / "bench" / "corpus_safety.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


safety = sys.modules.get("corpus_safety") or _load()
