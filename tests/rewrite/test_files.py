"""The file loop: only planned files are opened, bad files are reported one per line and left untouched."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from autograph_cg.findings import SourceError
from autograph_cg.rewrite import Status, WrapSettings, api, rewrite_files, undo_files

from .sites import sites_for

SRC = "import paddle\n\n\nclass Net:\n    def __init__(self):\n        self.m = MLP(1)\n"


def _write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(data)
    return path


def test_modes_write_check_and_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    f = _write(Path("."), "a.py", SRC.encode())
    sites = sites_for(SRC, {"MLP"}, str(f))

    check = rewrite_files(sites, 3, write=False)
    assert f.read_bytes() == SRC.encode()
    assert [r.status for r in check.files] == [Status.WOULD_CHANGE]
    assert check.exit_code(check=True) == 1

    diff = rewrite_files(sites, 3, write=False, diff=True)
    text = diff.files[0].diff
    assert text.startswith("--- a/a.py\n+++ b/a.py\n")
    assert "+        self.m = CUDAGraphedLayer(MLP(1))\n" in text and "-        self.m = MLP(1)\n" in text
    assert f.read_bytes() == SRC.encode()

    done = rewrite_files(sites, 3, settings=WrapSettings(num_warmup_steps=2))
    assert [(r.status, r.sites) for r in done.files] == [(Status.CHANGED, 1)]
    assert b"CUDAGraphedLayer(MLP(1), num_warmup_steps=2)" in f.read_bytes()
    assert done.exit_code(check=False) == 0
    assert done.summary() == "rewrite: 3 files scanned, 1 site wrapped, 1 file changed, 0 skipped"

    undone = undo_files([str(f), str(_write(Path("."), "b.py", b"x = 1\n"))])
    assert f.read_bytes() == SRC.encode()
    assert undone.files_scanned == 2 and [r.path for r in undone.changed] == [str(f)]


def test_bad_files_are_skipped_one_line_each_and_the_rest_is_written(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.py", SRC.encode())
    ro = _write(tmp_path, "ro.py", SRC.encode())
    ro.chmod(0o444)
    lossy_src = SRC.replace("        self.m = MLP(1)\n", "        try:\n            self.m = MLP(1)\n        except (A, B) :\n            pass\n")  # the site's statement
    lossy = _write(tmp_path, "lossy.py", lossy_src.encode())
    sites = [*sites_for(SRC, {"MLP"}, str(good)), *sites_for(SRC, {"MLP"}, str(ro)), *sites_for(lossy_src, {"MLP"}, str(lossy))]
    sites += sites_for(SRC, {"MLP"}, str(tmp_path / "gone.py"))
    errors = [SourceError(str(tmp_path / "broken.py"), "syntax error: line 1: invalid syntax")]

    report = rewrite_files(sites, 5, errors=errors)
    by_path = {Path(r.path).name: r for r in report.files}
    assert by_path["good.py"].status is Status.CHANGED
    assert {n: r.kind for n, r in by_path.items() if r.status is Status.SKIPPED} == {
        "ro.py": "read-only",
        "lossy.py": "not-reproducible",
        "gone.py": "unreadable",
        "broken.py": "analysis",
    }
    assert ro.read_bytes() == SRC.encode() and b"CUDAGraphedLayer" not in lossy.read_bytes()
    assert report.exit_code(check=True) == 2 and report.exit_code(check=False) == 2
    assert report.summary().endswith("4 skipped (1 analysis, 1 not-reproducible, 1 read-only, 1 unreadable)")
    payload = json.loads(json.dumps(report.to_json()))
    assert payload["files_changed"] == 1 and payload["files_skipped"] == 4
    assert {f["kind"] for f in payload["files"] if f["status"] == "skipped"} == {"analysis", "not-reproducible", "read-only", "unreadable"}


def test_existing_sites_are_not_opened(tmp_path: Path) -> None:
    f = _write(tmp_path, "a.py", b"def f(:\n")  # would be reported if it were read
    site = sites_for(SRC, {"MLP"}, str(f))[0]
    report = rewrite_files([replace(site, existing=True)], 1)
    assert report.files == [] and report.exit_code(check=True) == 0


def test_a_file_saved_by_someone_else_during_the_run_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = _write(tmp_path, "a.py", SRC.encode())
    real_edit = api.rewrite_source

    def edit_then_user_saves(data: bytes, sites: list, settings: WrapSettings) -> api.SourceEdit:
        result = real_edit(data, sites, settings)
        f.write_bytes(b"# saved meanwhile\n" + data)
        return result

    monkeypatch.setattr(api, "rewrite_source", edit_then_user_saves)
    report = rewrite_files(sites_for(SRC, {"MLP"}, str(f)), 1)
    assert [(r.status, r.kind) for r in report.files] == [(Status.SKIPPED, "changed")]
    assert f.read_bytes() == b"# saved meanwhile\n" + SRC.encode()
    assert report.exit_code(check=False) == 2
