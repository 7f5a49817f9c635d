"""A model library's own test suite, run on the library and on its rewritten copy: the drop-in promise.

`prepare` fetches a library's source distribution with pip into a folder outside the repository, keeps
its package and its tests, and makes a second copy of the package rewritten by `autograph-cg rewrite`
(the default plan). `run` runs the library's tests twice, the original package first on the path and
then the rewritten one, and compares the outcome of every test: a test that passes on the original and
not on the rewritten copy is a drop-in failure. Nothing of the library is committed.

    python bench/library_tests.py prepare --dist timm==1.0.31 --dest /tmp/libtests/timm
    python bench/library_tests.py run --dir /tmp/libtests/timm --files test_models.py -k "resnet18 or vit_tiny" --json timm.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepare(dist: str, dest: Path) -> dict:
    """dest/original/<package>, dest/rewritten/<package>, dest/tests; returns what the rewrite said."""
    name = dist.split("==")[0]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary=:all:", "-d", tmp, dist],
            check=True,
        )
        (archive,) = Path(tmp).glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        (top,) = [p for p in Path(tmp).iterdir() if p.is_dir()]
        package = top / name.replace("-", "_")
        if dest.exists():
            shutil.rmtree(dest)
        for variant in ("original", "rewritten"):
            shutil.copytree(package, dest / variant / package.name)
        shutil.copytree(top / "tests", dest / "tests")
    proc = subprocess.run(
        [sys.executable, "-m", "autograph_cg", "rewrite", str(dest / "rewritten" / package.name), "--no-cache"],
        capture_output=True, text=True, cwd=ROOT,
    )
    said = {
        "package": package.name,
        "rewrite_exit": proc.returncode,
        "rewrite": (proc.stdout + proc.stderr).strip().splitlines()[-3:],
    }
    (dest / "prepared.json").write_text(json.dumps(said, indent=1))
    return said


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> passed / failed / error / skipped, from pytest's JUnit XML."""
    result = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        result[test] = "failed" if "failure" in kinds else "error" if "error" in kinds else "skipped" if "skipped" in kinds else "passed"
    return result


def run_variant(folder: Path, variant: str, files: list[str], select: str, timeout: int) -> dict[str, str]:
    junit = folder / f"{variant}.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder / variant), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    tests = [str(folder / "tests" / f) for f in files] or [str(folder / "tests")]
    cmd = [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
           "-o", "addopts=", "--continue-on-collection-errors"]
    if select:
        cmd += ["-k", select]
    subprocess.run(cmd, cwd=folder, env=env, timeout=timeout, capture_output=True, text=True)
    return outcomes(junit) if junit.exists() else {}


def run(folder: Path, files: list[str], select: str, timeout: int) -> dict:
    got = {variant: run_variant(folder, variant, files, select, timeout) for variant in ("original", "rewritten")}
    original, rewritten = got["original"], got["rewritten"]
    regressions = sorted(t for t, o in original.items() if o == "passed" and rewritten.get(t) != "passed")
    count = lambda results, kind: sum(o == kind for o in results.values())  # noqa: E731
    return {
        "tests": len(original),
        "passed": {variant: count(results, "passed") for variant, results in got.items()},
        "failed": {variant: count(results, "failed") + count(results, "error") for variant, results in got.items()},
        "regressions": regressions,
        "outcomes": got,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare")
    prep.add_argument("--dist", required=True, help="name==version of the source distribution")
    prep.add_argument("--dest", type=Path, required=True)
    go = sub.add_parser("run")
    go.add_argument("--dir", type=Path, required=True)
    go.add_argument("-k", dest="select", default="")
    go.add_argument("--files", default="", help="comma-separated test files under tests/ (default: all)")
    go.add_argument("--timeout", type=int, default=3000)
    go.add_argument("--json", default="")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        print(json.dumps(prepare(args.dist, args.dest.resolve()), indent=1))
        return 0
    result = run(args.dir.resolve(), [f for f in args.files.split(",") if f], args.select, args.timeout)
    print(f"{result['tests']} tests; passed: original {result['passed']['original']}, rewritten "
          f"{result['passed']['rewritten']}; failed: {result['failed']}; regressions: {len(result['regressions'])}")
    for test in result["regressions"][:20]:
        print(f"  passes on the original, not on the rewritten copy: {test}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 1 if result["regressions"] else 0


if __name__ == "__main__":
    sys.exit(main())
