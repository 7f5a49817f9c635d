import dataclasses
import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograph_cg.findings import Finding, Span
from autograph_cg.report import baseline
from autograph_cg.report.baseline import BaselineError
from autograph_cg.report.identity import identity
from autograph_cg.report.output import OutputError


def make(path="pkg/a.py", line=10, code="AG101", function="A.forward", source="x = t.item()", col=5):
    return Finding(path, Span(line, col, line, col + 8), code, "msg", function, source)


def moved(f: Finding, lines: int, indent: str = "") -> Finding:
    span = Span(f.span.line + lines, f.span.col, f.span.end_line + lines, f.span.end_col)
    return dataclasses.replace(f, span=span, source_line=indent + f.source_line)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_round_trip_hides_every_recorded_finding(project):
    findings = [make(), make(line=20, code="AG201", source="i = paddle.nonzero(m)"), make(path="pkg/b.py")]
    assert baseline.write("baseline.json", findings) == 3
    assert baseline.load("baseline.json").filter(findings) == []


def test_line_moves_and_reindentation_still_match(project):
    old = [make(line=10), make(line=30, code="AG301", source="if  (x > 0).any() :")]
    baseline.write("baseline.json", old)
    now = [moved(old[0], 7), dataclasses.replace(moved(old[1], -4), source_line="if (x > 0).any():")]
    assert baseline.load("baseline.json").filter(now) == []


@pytest.mark.parametrize(
    "change",
    [
        {"source_line": "y = t.item()"},
        {"code": "AG105"},
        {"function": "B.forward"},
        {"path": "pkg/other.py"},
    ],
)
def test_anything_but_position_makes_a_new_finding(project, change):
    old = make()
    baseline.write("baseline.json", [old])
    new = dataclasses.replace(old, **change)
    assert baseline.load("baseline.json").filter([old, new]) == [new]


def test_duplicates_are_counted(project):
    twice = [make(line=10), make(line=10, col=20)]
    baseline.write("baseline.json", twice)
    data = json.loads((project / "baseline.json").read_text())
    assert data["findings"] == [
        {"path": "pkg/a.py", "code": "AG101", "function": "A.forward", "source": "x = t.item()", "count": 2}
    ]
    third = make(line=10, col=30)
    assert baseline.load("baseline.json").filter([*twice, third]) == [third]
    assert baseline.load("baseline.json").filter(twice[:1]) == []


def test_paths_are_relative_to_the_baseline_not_the_working_directory(project, monkeypatch):
    (project / "sub").mkdir()
    findings = [make(path=str(project / "pkg" / "a.py"))]
    baseline.write(project / "baseline.json", findings)
    assert json.loads((project / "baseline.json").read_text())["findings"][0]["path"] == "pkg/a.py"
    monkeypatch.chdir(project / "sub")
    relative = [make(path="../pkg/a.py")]
    assert baseline.load("../baseline.json").filter(relative) == []


def test_empty_baseline(project):
    assert baseline.write("baseline.json", []) == 0
    assert json.loads((project / "baseline.json").read_text()) == {"autograph-cg-baseline": 1, "findings": []}
    assert baseline.load("baseline.json").filter([make()]) == [make()]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("{not json", "corrupt baseline base.json: line 1:"),
        ("", "corrupt baseline base.json: line 1:"),
        ("[]", "base.json is not an autograph-cg baseline"),
        ('{"autograph-cg-baseline": 2, "findings": []}', "base.json is not an autograph-cg baseline"),
        ('{"autograph-cg-baseline": 1}', 'corrupt baseline base.json: "findings" must be a list'),
        ('{"autograph-cg-baseline": 1, "findings": [{"path": "a.py"}]}', "corrupt baseline base.json: entry 1 needs"),
        (
            '{"autograph-cg-baseline": 1, "findings": [{"path": "a", "code": "AG101", "function": "", '
            '"source": "", "count": true}]}',
            "corrupt baseline base.json: entry 1 needs",
        ),
        (
            '{"autograph-cg-baseline": 1, "findings": [{"path": "a", "code": "AG101", "function": "", '
            '"source": "", "count": 0}]}',
            "corrupt baseline base.json: entry 1 needs",
        ),
    ],
)
def test_corrupt_baseline_is_one_clear_error(project, text, expected):
    (project / "base.json").write_text(text)
    with pytest.raises(BaselineError) as error:
        baseline.load("base.json")
    assert str(error.value).startswith(expected) and "\n" not in str(error.value)


def test_missing_or_undecodable_baseline(project):
    with pytest.raises(BaselineError, match=r"^cannot read baseline nope.json: No such file or directory$"):
        baseline.load("nope.json")
    (project / "latin1.json").write_bytes(b'{"x": "\xe9"}')
    with pytest.raises(BaselineError, match="^cannot read baseline latin1.json: "):
        baseline.load("latin1.json")


def test_write_to_an_unwritable_place_leaves_nothing(project):
    (project / "file").write_text("")
    with pytest.raises(OutputError):
        baseline.write(project / "file" / "baseline.json", [make()])
    assert sorted(p.name for p in project.iterdir()) == ["file"]


identifiers = st.text("abcxyz_.", min_size=1, max_size=6)
findings_strategy = st.lists(
    st.builds(
        make,
        path=st.sampled_from(["pkg/a.py", "pkg/b.py", "c.py"]),
        line=st.integers(1, 500),
        code=st.sampled_from(["AG101", "AG201", "AG401"]),
        function=identifiers,
        source=st.sampled_from(["x.item()", "  x.item()", "if x.any():", "y = paddle.nonzero(m)"]),
        col=st.integers(1, 80),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(old=findings_strategy, new=findings_strategy, shift=st.integers(-5, 50))
def test_property_filter_reports_exactly_the_surplus(tmp_path_factory, old, new, shift):
    directory = tmp_path_factory.mktemp("prop")
    path = directory / "baseline.json"
    old_abs = [dataclasses.replace(f, path=str(directory / f.path)) for f in old]
    new_abs = [dataclasses.replace(f, path=str(directory / f.path)) for f in new]
    baseline.write(path, old_abs)
    loaded = baseline.load(path)
    # moving every old finding keeps them all known
    assert loaded.filter([moved(f, shift) for f in old_abs]) == []
    # what survives is, per identity, the count beyond the baseline's: the new findings' identities
    survivors = loaded.filter(old_abs + new_abs)
    assert Counter(identity(f, directory) for f in survivors) == Counter(identity(f, directory) for f in new_abs)
