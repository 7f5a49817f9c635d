"""The corpus safety check in CI: its AST comparison catches every kind of wrong edit, and it holds on the
fixture packages and on fixed samples of the real corpus (when the corpus cache is on this machine): 40 files
of the base set and one file of each distribution of the wide set, each through `lint`, `plan` and `rewrite`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from autograph_cg.rewrite import WrapSettings, rewrite_source
from tests.reliability.bench import REPO, safety
from tests.rewrite.sites import sites_for

SAMPLE_SIZES = {"base": 40, "wide": 24}
SOURCE = b"""import paddle.nn as nn


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.a = MLP(1)
        self.b = nn.Sequential(MLP(2), nn.ReLU())
        self.c = nn.Linear(4, 4)
"""
IMPORT = b"from autograph_cg.runtime import CUDAGraphedLayer  # autograph-cg: added\n"


def _root(name: str, path: Path) -> safety.CorpusRoot:
    return safety.CorpusRoot(name, "test", path, "", 0, 0, ())


def _rewritten(source: bytes = SOURCE, settings: WrapSettings = WrapSettings()) -> tuple[bytes, list]:
    sites = sites_for(source, {"MLP"})
    return rewrite_source(source, sites, settings).new, sites


def test_the_rewriters_own_edit_is_exact() -> None:
    new, sites = _rewritten()
    assert safety.ast_mismatch(SOURCE, new, sites) == (2, None)
    steps = WrapSettings(num_warmup_steps=3)
    new, sites = _rewritten(settings=steps)
    assert safety.ast_mismatch(SOURCE, new, sites, steps) == (2, None)
    assert safety.ast_mismatch(SOURCE, new, sites)[1] is not None  # the settings must be the ones asked for


def test_a_planned_call_left_alone_is_allowed_and_not_counted() -> None:
    new, sites = _rewritten()
    kept = new.replace(b"CUDAGraphedLayer(MLP(1))", b"MLP(1)")
    assert safety.ast_mismatch(SOURCE, kept, sites) == (1, None)


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (b"nn.Linear(4, 4)", b"CUDAGraphedLayer(nn.Linear(4, 4))", "Attribute became Name"),  # a call that was not planned
        (b"CUDAGraphedLayer(MLP(1))", b"CUDAGraphedLayer(MLP(7))", "1 became 7"),  # the planned call changed
        (b"nn.ReLU()", b"nn.GELU()", "'ReLU' became 'GELU'"),  # something else changed
        (b"CUDAGraphedLayer(MLP(1))", b"CUDAGraphedLayer(MLP(1), num_warmup_steps=2)", "'MLP' became 'CUDAGraphedLayer'"),  # not the shape asked for
        (b"CUDAGraphedLayer(MLP(1))", b"CUDAGraphedLayer(CUDAGraphedLayer(MLP(1)))", "'MLP' became 'CUDAGraphedLayer'"),  # wrapped twice
        (IMPORT, b"", "+0 runtime imports at the top level, expected +1"),  # the import is missing
        (IMPORT, IMPORT + IMPORT, "+2 runtime imports at the top level, expected +1"),  # the import is there twice
        (b"        self.c", b"        x = 1\n        self.c", "items"),  # a statement added
        (b"super().__init__()", b"super().__init__(", "does not parse"),
    ],
    ids=["unplanned-call", "planned-call-changed", "elsewhere", "wrong-settings", "wrapped-twice", "no-import", "two-imports", "statement-added", "no-parse"],
)
def test_every_other_difference_is_caught(old: bytes, new: bytes, why: str) -> None:
    rewritten, sites = _rewritten()
    assert old in rewritten
    wrapped, problem = safety.ast_mismatch(SOURCE, rewritten.replace(old, new, 1), sites)
    assert problem is not None and why in problem, problem


def test_an_import_without_any_wrapper_is_caught() -> None:
    unwrapped = IMPORT + SOURCE
    assert safety.ast_mismatch(SOURCE, unwrapped, sites_for(SOURCE, {"MLP"}))[1] == "+1 runtime imports at the top level, expected +0"


def test_a_site_that_spans_no_call_is_caught() -> None:
    new, sites = _rewritten()
    wrong = [replace(sites[0], span=replace(sites[0].span, col=sites[0].span.col + 1))]
    assert "spans no call" in safety.ast_mismatch(SOURCE, new, wrong)[1]


def test_sites_are_matched_in_characters_on_lines_python_counts() -> None:
    """Columns are characters, and only \\n, \\r\\n and \\r end a line (a form feed or U+2028 in a comment does not)."""
    source = SOURCE.replace(b"import paddle.nn as nn\n", "import paddle.nn as nn\n# a\x0cb \u2028 c\n".encode()).replace(
        b"self.a = MLP(1)", "s = 'éé'; self.a = MLP(1)".encode()
    )
    new, sites = _rewritten(source)
    assert safety.ast_mismatch(source, new, sites) == (2, None)


@pytest.mark.parametrize("name", ["paddle_lm", "torch_lm"])
def test_fixture_packages(name: str, tmp_path: Path) -> None:
    result = safety.check_root(_root(name, REPO / "fixtures" / name), tmp_path, jobs=1)
    assert result.failures() == 0, "\n".join((result.row(name), *result.problems))
    assert result.ast_checked == result.tally.changed > 0 and not result.tally.skipped


@pytest.fixture(scope="module", params=sorted(SAMPLE_SIZES))
def corpus_sample(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, safety.Safety]:
    """How many files were sampled, and what the checks found on them."""
    from corpus import MARKER, SETS, cache_dir, fetch_one  # bench/ is on the path once the bench module is loaded

    base = cache_dir()
    distributions = SETS[request.param]
    missing = [f"{n}-{v}" for n, v in distributions if not (base / f"{n}-{v}" / MARKER).is_file()]
    if missing:
        pytest.skip(f"corpus cache absent at {base} ({', '.join(missing)}); `python bench/corpus.py --set {request.param}` fetches it")
    roots = [fetch_one(n, v, base) for n, v in distributions]
    files = safety.sample_files(roots, SAMPLE_SIZES[request.param])
    tmp = tmp_path_factory.mktemp(f"corpus-sample-{request.param}")
    root = safety.sample_root(files, tmp / "src" / "sample")
    return root.files, safety.check_tree(root, tmp / "work", jobs=2)


def test_corpus_sample_never_makes_the_analyzer_fail(corpus_sample: tuple[int, safety.Safety]) -> None:
    _, result = corpus_sample
    assert result.internal_errors == result.tally.internal_errors == 0, "\n".join((result.row("sample"), *result.problems))


def test_corpus_sample_rewrites_safely(corpus_sample: tuple[int, safety.Safety]) -> None:
    sampled, result = corpus_sample
    t = result.tally
    detail = "\n".join((result.row("sample"), *result.problems))
    assert t.files == sampled and t.changed > 0, detail
    assert not t.skipped and t.reparsed == t.undo_exact == t.changed, detail
    assert result.ast_exact == result.ast_checked == t.changed, detail
    assert result.wrapped == t.wrapped == t.seen_existing, detail
    assert result.left_changed == 0, detail


def test_corpus_sample_rewrite_is_idempotent(corpus_sample: tuple[int, safety.Safety]) -> None:
    _, result = corpus_sample
    t = result.tally
    assert t.stable == t.changed and t.replan_changes == 0, result.row("sample")


SEQUENTIAL = """import paddle.nn as nn


class Conv(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Block(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = Conv()

    def forward(self, x):
        return self.conv(x)


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(2)])
        self.count = 0

    def forward(self, x):
        self.count += 1
        return self.blocks(x)
"""


def test_a_sequential_wrapped_whole_keeps_its_items_inside_the_graph(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "model.py").write_text(SEQUENTIAL)
    result = safety.check_root(_root("sequential", pkg), tmp_path / "work", jobs=1)
    assert result.tally.changed == 1
    assert result.failures() == 0, result.row("sequential")


@pytest.mark.parametrize(
    ("returncode", "stdout", "stderr", "why"),
    [
        (1, "{}", "autograph-cg: error: m.py: internal error in A.forward: KeyError: 'pad' (rules/host_sync.py:103)\n"
         "autograph-cg: error: 1 internal error(s); the rest was analyzed\n", "internal error in A.forward"),
        (1, "{}", "Traceback (most recent call last):\n  File ...\nKeyError: 'pad'\n", "traceback: KeyError: 'pad'"),
        (2, "{}", "autograph-cg: error: nothing could be analyzed\n", "exit status 2: autograph-cg: error: nothing could be analyzed"),
        (0, "{", "", "the output is not JSON"),
    ],
    ids=["internal-error-line", "traceback", "exit-2", "not-json"],
)
def test_a_failing_command_is_counted_once(returncode: int, stdout: str, stderr: str, why: str) -> None:
    failures = safety.cli_failures(returncode, stdout, stderr)
    assert len(failures) == 1 and why in failures[0], failures


def test_a_command_that_reports_findings_has_not_failed() -> None:
    stderr = "m.py:3: SyntaxWarning: invalid escape sequence '\\d'\nautograph-cg: error: bad.py: cannot parse\n"
    assert safety.cli_failures(1, '{"findings": []}', stderr) == []
