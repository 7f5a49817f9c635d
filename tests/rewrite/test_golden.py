"""The fixture packages rewrite to the reviewed golden sources, byte-for-byte, in LF, CRLF and BOM variants.

End to end through the command: the real analyzer plans, the rewriter writes. Then a second run and
`--check` change nothing, and `--undo` gives back the original bytes. To update a golden file after a
reviewed change: run `autograph-cg rewrite --no-cache` on a copy of the package and copy the changed files
into `fixtures/expected/rewrite/<package>/`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from autograph_cg.cli.rewrite import rewrite

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "fixtures" / "expected" / "rewrite"

VARIANTS: dict[str, Callable[[bytes], bytes]] = {
    "lf": lambda data: data,
    "crlf": lambda data: data.replace(b"\n", b"\r\n"),
    "bom": lambda data: b"\xef\xbb\xbf" + data,
}


def _run(*args: str) -> tuple[int, str, str]:
    """Every capturable site, small ones too: these goldens are about the edits, the plan's cost model is tested apart."""
    result = CliRunner().invoke(rewrite, [*args, "--no-cache", "--min-kernels", "0"], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("package", ["paddle_lm", "torch_lm"])
def test_fixture_package_rewrites_to_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, variant: str) -> None:
    convert = VARIANTS[variant]
    originals = {f.name: convert(f.read_bytes()) for f in sorted((REPO / "fixtures" / package).glob("*.py"))}
    goldens = {f.name: convert(f.read_bytes()) for f in sorted((GOLDEN / package).glob("*.py"))}
    assert goldens and set(goldens) <= set(originals)
    (tmp_path / package).mkdir()
    for name, data in originals.items():
        (tmp_path / package / name).write_bytes(data)
    monkeypatch.chdir(tmp_path)

    code, out, err = _run(package, "--check")
    assert code == 1 and out == ""
    assert {n: (tmp_path / package / n).read_bytes() for n in originals} == originals

    code, out, err = _run(package)
    assert code == 0, err
    after = {n: (tmp_path / package / n).read_bytes() for n in originals}
    assert after == {**originals, **goldens}
    sites = sum(g.count(b"CUDAGraphedLayer(") for g in goldens.values())
    assert f"{sites} sites wrapped, {len(goldens)} files changed, 0 skipped" in err

    assert _run(package)[0] == 0
    assert {n: (tmp_path / package / n).read_bytes() for n in originals} == after
    code, out, err = _run(package, "--check")
    assert code == 0 and "0 sites would be wrapped" in err

    code, out, err = _run(package, "--undo")
    assert code == 0, err
    assert {n: (tmp_path / package / n).read_bytes() for n in originals} == originals
