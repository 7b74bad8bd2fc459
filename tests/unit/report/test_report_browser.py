"""The report in Debian's headless Chromium: it loads with no console errors and every chart renders."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tfpilot.report import write_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    if CHROMIUM is None:
        # In CI `make test` installs chromium first, so its absence there is a failure, not a skip.
        if os.environ.get("CI"):
            pytest.fail("Debian's chromium is missing although `make test` installs it; check the `browser` target")
        pytest.skip("Debian's chromium is not installed (`make test` installs it)")
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_report_renders_all_charts_without_console_errors(full_run, tmp_path):
    path = write_report(full_run)
    result = _chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", path.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    expected = re.search(r'data-charts-expected="(\d+)"', result.stdout)
    rendered = re.search(r'data-charts-rendered="(\d+)"', result.stdout)
    assert expected and rendered, result.stdout[-2000:]
    assert int(expected.group(1)) >= 8 and rendered.group(1) == expected.group(1)
    assert "data-js-errors" not in result.stdout
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    # Each chart became an SVG with drawn marks (lines, bars or heatmap cells).
    assert result.stdout.count('class="chart-svg"') == int(expected.group(1))
    assert (
        result.stdout.count('class="series"') >= 6
        and 'class="cell"' in result.stdout
        and 'class="bar"' in result.stdout
    )


def test_a_script_error_would_be_seen(tmp_path):
    # Guards the test above: the console check really catches an uncaught exception.
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    result = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert any(":CONSOLE" in line and "Uncaught" in line for line in result.stderr.splitlines())
