"""Generated model modules through the whole tool: the findings are exactly the injected hazard's, and the rewrite is safe.

Each example is written as a package, analyzed, and then run through the corpus safety check
(`bench/corpus_safety.py`): rewrite on a scratch copy, every rewritten file re-parses, undo restores it byte
for byte, a fresh analysis and rewrite change nothing, and the AST differs from the original only by
wrappers around exactly the planned calls and the runtime import.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograph_cg.analysis.verdicts import Status
from autograph_cg.api import analyze
from autograph_cg.rules.registry import RULES
from tests.reliability.bench import safety
from tests.reliability.generate import EVERY_RULE, EXAMPLES, FRAMEWORKS, Generated, example_settings, modules

# 40 keeps the four tests near 40 s on two cores; AUTOGRAPH_CG_PROPERTY_EXAMPLES asks for a longer search.
PROPERTY = example_settings(40)


def _run(gen: Generated, name: str) -> None:
    with tempfile.TemporaryDirectory(prefix="autograph-cg-prop-") as tmp:
        root = Path(tmp) / "src" / "pkg"
        root.mkdir(parents=True)
        (root / "__init__.py").write_bytes(b"")
        (root / "model.py").write_bytes(gen.data)
        analysis = analyze([str(root)], EVERY_RULE)
        assert analysis.errors == []
        assert {(f.code, f.line) for f in analysis.findings} == gen.expected
        verdicts = {q.rsplit(".", 1)[-1]: v.status for q, v in analysis.plan.verdicts.items()}
        if not gen.hazard:
            assert set(verdicts.values()) == {Status.ELIGIBLE}, verdicts
        elif gen.target and RULES[gen.hazard].blocks:
            assert verdicts[gen.target] is Status.INELIGIBLE, (gen.hazard, gen.target, verdicts)
        result = safety.check_root(safety.CorpusRoot("generated", gen.framework, root, "", 1, 0, ()), Path(tmp) / "work", jobs=1)
        assert result.failures() == 0, "\n".join((result.row("generated"), *result.problems))
        assert not result.tally.skipped
    EXAMPLES[name] += 1
    if result.tally.sites:
        EXAMPLES[f"{name}, with sites to wrap"] += 1


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@PROPERTY
@given(data=st.data())
def test_clean_modules_have_no_findings_and_rewrite_safely(framework: str, data: st.DataObject) -> None:
    _run(data.draw(modules(framework, hazardous=False)), f"clean {framework}")


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@PROPERTY
@given(data=st.data())
def test_each_injected_hazard_is_found_at_its_line_and_rewrite_stays_safe(framework: str, data: st.DataObject) -> None:
    _run(data.draw(modules(framework, hazardous=True)), f"hazard {framework}")
