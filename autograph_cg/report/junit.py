"""`--format junit`: JUnit XML for CI systems that show test reports (GitLab, Jenkins, Azure, ...).

One `<testsuite>` per analyzed file, named by its path. A file with findings holds one failing
`<testcase>` per finding (name `AG101 host-sync-item (line:col)`, `file` and `line` attributes, the
message and source line in the failure text); a clean file holds one passing testcase, so clean files show
as passes rather than vanishing; a file that could not be analyzed holds one testcase with `<error>`.
Suites are streamed one at a time.
"""

from __future__ import annotations

import os
import re
from itertools import groupby
from typing import Any, Iterable, TextIO
from xml.sax.saxutils import escape, quoteattr

from autograph_cg.findings import Finding, SourceError
from autograph_cg.report.identity import relative_path
from autograph_cg.rules.registry import rule

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: str) -> str:
    return escape(_INVALID_XML.sub("\ufffd", value))


def _attr(value: object) -> str:
    return quoteattr(_INVALID_XML.sub("\ufffd", str(value)), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def emit(analysis: Any, stream: TextIO, options: Any = None) -> None:
    root = os.getcwd()
    findings = sorted(analysis.findings, key=Finding.sort_key)
    errors: list[SourceError] = list(analysis.errors)
    by_path = {path: list(group) for path, group in groupby(findings, key=lambda f: f.path)}
    broken = {e.path: e for e in errors}
    paths = list(dict.fromkeys([*analysis.files, *by_path, *broken]))
    cases = sum(max(len(by_path.get(p, ())), 1) for p in paths)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(
        f"<testsuites name=\"autograph-cg\" tests=\"{cases}\" failures=\"{len(findings)}\" errors=\"{len(broken)}\">\n"
    )
    for path in paths:
        name = relative_path(path, root)
        if path in broken:
            _suite(stream, name, 1, 0, 1, [_error_case(name, broken[path])])
        else:
            found = by_path.get(path, [])
            cases_xml = [_failure_case(name, f) for f in found] or [_passing_case(name)]
            _suite(stream, name, len(cases_xml), len(found), 0, cases_xml)
    stream.write("</testsuites>\n")


def _suite(stream: TextIO, name: str, tests: int, failures: int, errors: int, cases: Iterable[str]) -> None:
    stream.write(f"  <testsuite name={_attr(name)} tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">\n")
    for case in cases:
        stream.write(case)
    stream.write("  </testsuite>\n")


def _classname(path: str) -> str:
    stem = path[:-3] if path.endswith(".py") else path
    return stem.strip("/").replace("/", ".")


def _failure_case(path: str, f: Finding) -> str:
    r = rule(f.code)
    name = f"{f.code} {r.name} ({f.span.line}:{f.span.col})"
    detail = f"{path}:{f.span.line}:{f.span.col}: {f.code} {f.message}"
    if f.function:
        detail += f"\nin {f.function}"
    if f.source_line:
        detail += f"\n    {f.source_line}"
    return (
        f"    <testcase name={_attr(name)} classname={_attr(_classname(path))} file={_attr(path)} line=\"{f.span.line}\">\n"
        f"      <failure message={_attr(f.message)} type={_attr(f.code)}>{_text(detail)}</failure>\n"
        "    </testcase>\n"
    )


def _passing_case(path: str) -> str:
    return f"    <testcase name=\"no CUDA-graph hazards\" classname={_attr(_classname(path))} file={_attr(path)}/>\n"


def _error_case(path: str, error: SourceError) -> str:
    return (
        f"    <testcase name=\"analysis\" classname={_attr(_classname(path))} file={_attr(path)}>\n"
        f"      <error message={_attr(error.message)}>{_text(str(error))}</error>\n"
        "    </testcase>\n"
    )
