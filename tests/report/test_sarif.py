import dataclasses
import io
import json
from pathlib import Path

import jsonschema
import pytest

from autograph_cg.findings import Finding, Span
from autograph_cg.report import sarif
from autograph_cg.rules.registry import rule

from .conftest import HandMade

SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def render(analysis) -> dict:
    out = io.StringIO()
    sarif.emit(analysis, out, None)
    return json.loads(out.getvalue())


def assert_valid(document: dict) -> None:
    validator = jsonschema.Draft4Validator(SCHEMA)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_schema_knows_what_it_validates():
    """The schema file is the real one: a log with a misspelt property or a bad level is rejected."""
    validator = jsonschema.Draft4Validator(SCHEMA)
    assert not validator.is_valid({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "resultz": []}]})
    bad_level = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                               "results": [{"message": {"text": "m"}, "level": "fatal"}]}]}
    assert not validator.is_valid(bad_level)


def test_output_is_valid_sarif_2_1_0(analysis):
    assert_valid(render(analysis))


def test_empty_run_is_valid(analysis):
    document = render(HandMade(findings=[]))
    assert_valid(document)
    assert document["runs"][0]["results"] == []
    assert document["runs"][0]["tool"]["driver"]["rules"] == []


def test_one_rule_per_code_from_the_rule_docs(analysis):
    run = render(analysis)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({f.code for f in analysis.findings})
    for descriptor in rules:
        r = rule(descriptor["id"])
        assert descriptor["name"] == r.name
        assert descriptor["help"]["markdown"] == r.docs()
        assert descriptor["shortDescription"]["text"] and len(descriptor["shortDescription"]["text"]) <= 1024
        assert descriptor["fullDescription"]["text"].startswith(descriptor["shortDescription"]["text"].rstrip("."))
        assert descriptor["defaultConfiguration"]["level"] == sarif.LEVELS[r.severity]
        assert r.family.name in descriptor["properties"]["tags"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_results_carry_levels_regions_and_relative_uris(analysis):
    run = render(analysis)["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == Path.cwd().as_uri() + "/"
    assert run["columnKind"] == "unicodeCodePoints"
    by_line = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"]["region"]["startLine"]): r for r in run["results"]}
    assert len(by_line) == len(analysis.findings)
    for f in analysis.findings:
        result = by_line[(f.path, f.span.line)]
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": f.path, "uriBaseId": "%SRCROOT%"}
        assert physical["region"] == {"startLine": f.span.line, "startColumn": f.span.col,
                                      "endLine": f.span.end_line, "endColumn": f.span.end_col}
        assert result["locations"][0]["logicalLocations"] == [{"fullyQualifiedName": f.function, "kind": "function"}]
        assert result["message"]["text"] == f.message
        assert result["level"] == {"AG901": "warning"}.get(f.code, "error")


def fingerprints(analysis) -> list[str]:
    return [r["partialFingerprints"][sarif.FINGERPRINT_KEY] for r in render(analysis)["runs"][0]["results"]]


def test_fingerprints_survive_line_moves_and_tell_duplicates_apart(analysis):
    before = sorted(fingerprints(analysis))
    shifted = [dataclasses.replace(f, span=Span(f.span.line + 12, f.span.col, f.span.end_line + 12, f.span.end_col))
               for f in analysis.findings]
    assert sorted(fingerprints(HandMade(shifted))) == before
    assert len(set(before)) == len(before)

    twin = dataclasses.replace(analysis.findings[0], span=Span(31, 40, 31, 50))
    both = fingerprints(HandMade([analysis.findings[0], twin]))
    assert len(set(both)) == 2
    edited = dataclasses.replace(analysis.findings[0], source_line="max_len = lengths.amax().item()")
    assert fingerprints(HandMade([edited])) != fingerprints(HandMade([analysis.findings[0]]))


def test_unanalyzable_files_become_notifications(analysis):
    invocation = render(analysis)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True
    [note] = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["message"]["text"] == analysis.errors[0].message
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == analysis.errors[0].path


def test_paths_outside_the_root_are_absolute_file_uris(analysis, tmp_path):
    outside = Finding(str(tmp_path / "my dir" / "x.py"), Span(1, 1, 1, 5), "AG101", "m", "", "x.item()")
    document = render(HandMade([outside]))
    assert_valid(document)
    location = document["runs"][0]["results"][0]["locations"][0]
    assert location["physicalLocation"]["artifactLocation"] == {"uri": (tmp_path / "my dir" / "x.py").as_uri()}
    assert "logicalLocations" not in location  # module level: no function


def test_uris_are_percent_encoded(analysis):
    odd = Finding("fixtures/a b#c.py", Span(1, 1, 1, 2), "AG101", "m", "f", "x")
    uri = render(HandMade([odd]))["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "fixtures/a%20b%23c.py"


@pytest.mark.parametrize("count", [0, 1, 3])
def test_streamed_text_is_one_json_document(analysis, count):
    out = io.StringIO()
    sarif.emit(HandMade(analysis.findings[:count]), out, None)
    text = out.getvalue()
    assert text.endswith("}\n") and text.count('"results"') == 1
    assert len(json.loads(text)["runs"][0]["results"]) == count
