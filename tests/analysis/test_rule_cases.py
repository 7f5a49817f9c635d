"""Every rule's own cases: invalid ones must fire its code, valid look-alikes must not."""

from __future__ import annotations

import re

import pytest

from autograph_cg.rules.base import FAMILIES
from autograph_cg.rules.registry import ALL_RULES, RULES
from tests.analysis.helpers import case_source, lint_text, split_case

CASES = [
    pytest.param(rule, framework, body, expect, id=f"{rule.code}-{'invalid' if expect else 'valid'}{index}-{framework}")
    for rule in ALL_RULES
    for expect, cases in ((True, rule.invalid), (False, rule.valid))
    for index, case in enumerate(cases)
    for framework, body in [(fw, split_case(case)[1]) for fw in split_case(case)[0] if fw in rule.frameworks]
]


@pytest.mark.parametrize(("rule", "framework", "body", "expect"), CASES)
def test_rule_case(rule, framework, body, expect):
    source = case_source(body, framework)
    codes = [f.code for f in lint_text(source) if not f.refresh]  # a refresh is listed, and is no hazard
    if expect:
        assert rule.code in codes, f"{rule.code} did not fire on:\n{source}"
    else:
        assert rule.code not in codes, f"{rule.code} fired on a valid look-alike:\n{source}"


def test_every_rule_has_cases_and_docs():
    for rule in ALL_RULES:
        assert rule.invalid and rule.valid, rule.code
        docs = rule.docs()
        for section in ("## What it does", "## Why it breaks a CUDA graph", "## Example", "## Use instead"):
            assert section in docs, (rule.code, section)


def test_codes_and_names_are_unique_and_well_formed():
    assert len(RULES) == len(ALL_RULES)
    assert len({r.name for r in ALL_RULES}) == len(ALL_RULES)
    prefixes = {f.prefix: f for f in FAMILIES}
    for rule in ALL_RULES:
        assert re.fullmatch(r"AG[1-9]\d\d", rule.code), rule.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert prefixes[rule.code[:3]] is rule.family, rule.code


def test_docs_rules_md_is_generated_from_the_rules():
    from pathlib import Path

    from click.testing import CliRunner

    from autograph_cg.cli import main

    generated = CliRunner().invoke(main, ["rules", "--markdown"]).output
    assert (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text() == generated
