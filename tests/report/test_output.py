import io
import os
import stat

import pytest

from autograph_cg.report.output import OutputError, open_output


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_stdout_for_none_and_dash():
    out = io.StringIO()
    for path in (None, "-"):
        with open_output(path, out) as stream:
            stream.write("x")
    assert out.getvalue() == "xx"


def test_file_appears_only_when_the_block_succeeds(tmp_path):
    target = tmp_path / "report.sarif"
    with open_output(target) as stream:
        stream.write("first part, ")
        assert not target.exists()
        stream.write("second part\n")
    assert target.read_text() == "first part, second part\n"
    assert leftovers(tmp_path) == []


def test_failure_midway_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "report.xml"
    target.write_text("previous report\n")
    with pytest.raises(RuntimeError):
        with open_output(target) as stream:
            stream.write("half of a new rep")
            raise RuntimeError("emitter crashed")
    assert target.read_text() == "previous report\n"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("make", ["missing parent", "parent is a file", "target is a directory"])
def test_unwritable_target_is_one_clear_error_and_nothing_written(tmp_path, make):
    if make == "missing parent":
        target = tmp_path / "no" / "such" / "dir" / "out.json"
    elif make == "parent is a file":
        (tmp_path / "file").write_text("")
        target = tmp_path / "file" / "out.json"
    else:
        target = tmp_path / "adir"
        target.mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(OutputError) as error:
        with open_output(target) as stream:
            stream.write("never")
    message = str(error.value)
    assert message.startswith(f"cannot write {target}: ") and "\n" not in message
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_existing_mode_is_kept_and_new_files_follow_the_umask(tmp_path):
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    kept.chmod(0o640)
    with open_output(kept) as stream:
        stream.write("new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640

    old = os.umask(0o027)
    try:
        fresh = tmp_path / "fresh.txt"
        with open_output(fresh) as stream:
            stream.write("new")
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640


def test_an_error_reading_another_file_is_not_blamed_on_the_output(tmp_path):
    target = tmp_path / "out.html"
    with pytest.raises(FileNotFoundError):
        with open_output(target) as stream:
            stream.write("x")
            open(tmp_path / "missing-source.py").close()
    assert not target.exists() and leftovers(tmp_path) == []
