import io
import xml.etree.ElementTree as ET

from autograph_cg.findings import Finding, SourceError, Span
from autograph_cg.report import github, junit

from .conftest import HandMade


def render(module, analysis) -> str:
    out = io.StringIO()
    module.emit(analysis, out, None)
    return out.getvalue()


def test_github_annotation_lines(analysis):
    lines = render(github, analysis).splitlines()
    assert lines[0] == (
        "::warning file=fixtures/paddle_lm/attention.py,line=29,col=13,endLine=29,endColumn=38,"
        "title=AG901 unresolved-call::call to `apply_rotary` could not be resolved"
    )
    assert lines[1] == (
        "::error file=fixtures/paddle_lm/heads.py,line=29,col=19,endLine=29,endColumn=60,"
        "title=AG201 dynamic-shape-nonzero::`nonzero`: output shape depends on the data"
    )
    assert len(lines) == len(analysis.findings) + len(analysis.errors)
    assert lines[-1] == (
        "::error file=fixtures/paddle_lm/broken.py,title=autograph-cg%3A not analyzed::"
        "syntax error at line 3: invalid syntax"
    )


def test_github_escaping():
    f = Finding("dir,with:odd/x.py", Span(3, 1, 4, 2), "AG101", "100% sure\nsecond line\r", "", "")
    [line] = render(github, HandMade([f])).splitlines()
    assert line == (
        "::error file=dir%2Cwith%3Aodd/x.py,line=3,col=1,endLine=4,endColumn=2,title=AG101 host-sync-item::"
        "100%25 sure%0Asecond line%0D"
    )


def parse(text: str) -> ET.Element:
    return ET.fromstring(text.encode("utf-8"))


def test_junit_one_suite_per_file_one_case_per_finding(analysis):
    root = parse(render(junit, analysis))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {*analysis.files, "fixtures/paddle_lm/broken.py"}
    heads = suites["fixtures/paddle_lm/heads.py"]
    cases = heads.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "AG201 dynamic-shape-nonzero (29:19)", "AG101 host-sync-item (30:18)", "AG101 host-sync-item (34:20)"
    ]
    assert (heads.get("tests"), heads.get("failures"), heads.get("errors")) == ("3", "3", "0")
    failure = cases[1].find("failure")
    assert failure.get("type") == "AG101" and failure.get("message") == "`.item()` copies a device value to the host"
    assert "heads.py:30:18" in failure.text and "reached[0, 0].item()" in failure.text
    assert cases[1].get("file") == "fixtures/paddle_lm/heads.py" and cases[1].get("line") == "30"
    assert cases[1].get("classname") == "fixtures.paddle_lm.heads"


def test_junit_clean_files_pass_and_broken_files_error(analysis):
    root = parse(render(junit, analysis))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    [clean] = suites["fixtures/paddle_lm/norm.py"].findall("testcase")
    assert list(clean) == []  # no failure, no error: a pass
    [broken] = suites["fixtures/paddle_lm/broken.py"].findall("testcase")
    assert broken.find("error").get("message") == "syntax error at line 3: invalid syntax"
    total_cases = len(root.findall("testsuite/testcase"))
    assert root.get("tests") == str(total_cases)
    assert root.get("failures") == str(len(analysis.findings)) == str(len(root.findall("testsuite/testcase/failure")))
    assert root.get("errors") == "1"


def test_junit_is_well_formed_with_hostile_text():
    f = Finding("a<b>&.py", Span(1, 1, 1, 2), "AG101", 'quote " <tag> & \x00\x1b bell\x07', "f", "x = '<&>'")
    root = parse(render(junit, HandMade([f], [SourceError("c&d.py", "bad <byte>")], files=["a<b>&.py"])))
    failure = root.find("testsuite/testcase/failure")
    assert failure.get("message") == 'quote " <tag> & \ufffd\ufffd bell\ufffd'
    assert "x = '<&>'" in failure.text
    assert root.find("testsuite[@name='c&d.py']/testcase/error").get("message") == "bad <byte>"
