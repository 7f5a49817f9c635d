import io

import pytest

from autograph_cg.report.progress import Progress
from autograph_cg.report.style import Style, use_color


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    "stream, no_color, env, expected",
    [
        (Terminal(), False, {}, True),
        (io.StringIO(), False, {}, False),
        (Terminal(), True, {}, False),
        (Terminal(), False, {"NO_COLOR": "1"}, False),
        (Terminal(), False, {"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value counts
        (Terminal(), False, {"TERM": "dumb"}, False),
    ],
)
def test_colour_only_on_a_terminal_and_never_when_asked_not_to(stream, no_color, env, expected):
    assert use_color(stream, no_color, env) is expected


def test_no_color_from_the_process_environment(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "yes")
    assert Style.for_stream(Terminal()).enabled is False
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.delenv("TERM", raising=False)
    assert Style.for_stream(Terminal()).enabled is True


def test_style_wraps_in_sgr_codes_only_when_enabled():
    assert Style(True)("AG101", "code") == "\x1b[1;35mAG101\x1b[0m"
    assert Style(False)("AG101", "code") == "AG101"
    assert Style(True)("", "error") == ""
    with pytest.raises(KeyError):
        Style(True)("x", "no-such-role")


def run(progress: Progress, clock: Clock, steps: int, step_time: float) -> None:
    progress.start(steps)
    for _ in range(steps):
        clock.now += step_time
        progress.advance()
    progress.finish()


def test_silent_when_not_a_terminal_or_quiet():
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        clock = Clock()
        run(Progress(stream, quiet=quiet, clock=clock), clock, 50, 0.1)
        assert stream.getvalue() == ""


def test_silent_for_a_run_shorter_than_the_delay():
    stream, clock = Terminal(), Clock()
    run(Progress(stream, clock=clock), clock, 50, 0.01)  # 0.5 s in all
    assert stream.getvalue() == ""


def test_long_run_draws_a_throttled_bar_and_erases_it_at_the_end():
    stream, clock = Terminal(), Clock()
    run(Progress(stream, clock=clock, delay=1.0, interval=0.1), clock, 1000, 0.005)  # 5 s, 1000 files
    text = stream.getvalue()
    frames = text.split("\r")[1:]
    assert text.endswith("\r\x1b[K")
    # drawn from 1 s to 5 s at most every 0.1 s, plus the final 100% frame: about 41, never one per file
    assert 30 <= len(frames) - 1 <= 45
    assert "1000/1000 files 100%" in frames[-2]
    assert "[" + "#" in frames[-2] and "." not in frames[-2].split("[")[1].split("]")[0]


@pytest.mark.parametrize("columns", [20, 40, 80, 200])
def test_bar_fits_the_terminal_width(columns):
    progress = Progress(Terminal(), label="analyzing")
    progress.start(2645)
    progress.advance(1200)
    line = progress.render(columns)
    assert len(line) <= columns - 1
    assert line.startswith("analyzing")
    if columns >= 80:
        assert "1200/2645 files  45%" in line


def test_unknown_total_counts_without_a_bar():
    progress = Progress(Terminal())
    progress.start(0)
    progress.advance(7)
    assert progress.render(80) == "analyzing 7 files"
