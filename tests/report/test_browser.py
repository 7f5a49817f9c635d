"""The HTML report in a real headless Chromium: loads clean, fetches nothing, expands on a click, searches."""

import io
import struct
from pathlib import Path

import pytest

from autograph_cg.report import html

from .chromium import Browser


@pytest.fixture
def browser(chromium, tmp_path):
    b = Browser(tmp_path / "profile", executable=chromium)
    try:
        b.open_page()
        yield b
    finally:
        b.close()


def open_report(browser: Browser, analysis, path: Path) -> None:
    out = io.StringIO()
    html.emit(analysis, out, None, title="fixtures/paddle_lm")
    path.write_text(out.getvalue(), encoding="utf-8")
    browser.navigate(path.as_uri())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_report_loads_clean_and_a_click_expands_a_node(browser, analysis, tmp_path, artifacts):
    page = tmp_path / "report.html"
    open_report(browser, analysis, page)
    assert browser.evaluate("document.title") == "autograph-cg report: fixtures/paddle_lm"

    root = "details.node[data-name='paddle_lm.model.DecoderLM']"
    assert browser.evaluate(f"document.querySelector(\"{root}\").open") is False
    reason_visible = f"document.querySelector(\"{root} > .detail\").checkVisibility()"
    assert browser.evaluate(reason_visible) is False
    browser.click(f"{root} > summary")
    assert browser.evaluate(f"document.querySelector(\"{root}\").open") is True
    assert browser.evaluate(reason_visible) is True
    assert "max_len = lengths.max().item()" in browser.evaluate(f"document.querySelector(\"{root} > .detail\").innerText")

    # the verdict colour is the one the stylesheet gives ineligible layers
    border = browser.evaluate(f"getComputedStyle(document.querySelector(\"{root} > summary\")).borderLeftColor")
    assert border == "rgb(207, 34, 46)"

    shot = browser.screenshot(artifacts / "report-expanded.png")
    width, height = png_size(shot)
    assert (width, height) == (1280, 900) and len(shot) > 10_000

    assert browser.problems() == []
    assert browser.requests() == [page.as_uri()]


def test_expand_all_and_search(browser, analysis, tmp_path):
    open_report(browser, analysis, tmp_path / "report.html")
    total = browser.evaluate("document.querySelectorAll('#tree details.node').length")
    assert total == 5
    browser.click("#expand-all")
    assert browser.evaluate("document.querySelectorAll('#tree details.node[open]').length") == total
    browser.click("#collapse-all")
    assert browser.evaluate("document.querySelectorAll('#tree details.node[open]').length") == 0

    browser.evaluate("(() => { const s = document.getElementById('search'); s.value = 'linear';"
                     " s.dispatchEvent(new Event('input')); })()")
    assert browser.evaluate("document.getElementById('search-count').textContent") == "1 match"
    assert browser.evaluate("[...document.querySelectorAll('.match')].map(e => e.dataset.name)") == ["paddle.nn.Linear"]
    # its ancestors opened so it is on screen
    opened = browser.evaluate("[...document.querySelectorAll('#tree details.node[open]')].map(e => e.dataset.name)")
    assert opened == ["paddle_lm.model.DecoderLM", "paddle_lm.block.DecoderBlock",
                      "paddle_lm.attention.MultiHeadAttention"]
    assert browser.problems() == []


@pytest.mark.parametrize("package", ["paddle_lm", "torch_lm"])
def test_fixture_package_report_in_the_browser(browser, package, tmp_path, artifacts, monkeypatch):
    """The real report of a fixture package, written by the CLI: clean load, a click opens the root layer."""
    from click.testing import CliRunner

    from autograph_cg.cli import main

    from .conftest import REPO

    monkeypatch.chdir(REPO)
    page = tmp_path / f"{package}.html"
    result = CliRunner().invoke(main, ["report", f"fixtures/{package}", "--html", str(page), "--no-cache", "-q"])
    assert result.exit_code == 0, result.output
    browser.navigate(page.as_uri())
    root = "#tree > li > details.node"
    assert browser.evaluate(f"document.querySelector('{root}').dataset.name") == f"{package}.model.DecoderLM"
    browser.click(f"{root} > summary")
    detail = browser.evaluate(f"document.querySelector('{root} > .detail').innerText")
    assert "Why it cannot be graphed" in detail and "lengths.max().item()" in detail
    browser.click("#expand-all")
    tags = "[...document.querySelectorAll('#tree .tag.wrapped')]"
    assert browser.evaluate(f"{tags}.length") > 0
    assert browser.evaluate(f"{tags}.every(t => t.checkVisibility())") is True  # expand-all reveals every site
    browser.screenshot(artifacts / f"{package}-expanded.png")
    assert browser.problems() == []
    assert browser.requests() == [page.as_uri()]
