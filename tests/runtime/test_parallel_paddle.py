"""Wrapped layers under paddle.DataParallel and fleet's data-parallel group train exactly as eagerly,
on every rank, step by step: two ranks over gloo on CPU Paddle with the stand-in, one launch."""

from __future__ import annotations

import importlib.util

import pytest

from tests.runtime.parallel_paddle_worker import CASES
from tests.runtime.ranks import assert_wrapped_matches_eager, run_ranks

if importlib.util.find_spec("paddle") is None:
    pytest.skip("paddle is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    return run_ranks("tests.runtime.parallel_paddle_worker", 2, tmp_path_factory.mktemp("paddle-dp"))


@pytest.mark.parametrize("name", list(CASES))
def test_wrapped_data_parallel_matches_eager_on_every_rank(results: list[dict], name: str) -> None:
    assert_wrapped_matches_eager(results, name, CASES[name], atol=1e-6)
