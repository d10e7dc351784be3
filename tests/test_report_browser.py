"""The report in a real browser (headless Chromium, Debian's `chromium`; `.ci/run` installs it
when missing): the landing page renders, starts with the run's description, not the middle of
its configuration, and the configuration text is in the page."""

import shutil
import subprocess

import numpy as np
import pytest
from conftest import ROOT
from matplotlib.image import imread

from transformer_stability.report import report_command

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
    "--virtual-time-budget=8000",
]


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    profile = ["--user-data-dir=" + str(tmp_path / "chromium-profile")]
    return subprocess.run(
        [CHROMIUM, *FLAGS, *profile, *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)")
def test_report_landing_page_in_headless_chromium(tiny_run, tmp_path):
    assert tiny_run.result.returncode == 0, tiny_run.result.stderr[-3000:]
    report = subprocess.run(report_command(ROOT / "Snakefile", tiny_run.workdir), cwd=ROOT)
    assert report.returncode == 0
    page = (tiny_run.workdir / "results/report.html").resolve().as_uri()

    dom = _chromium(tmp_path, "--dump-dom", page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for text in ("Replication pipeline for three theory papers", "forward_source_block"):
        assert text in dom.stdout  # the description and the configuration were rendered

    shot = tmp_path / "landing.png"
    assert _chromium(tmp_path, f"--screenshot={shot}", page).returncode == 0
    pixels = imread(shot)[..., :3]
    # the band right of the menu at the top of the window: the description's white page,
    # not the dark code block of the configuration's middle (what a vertically centred,
    # overflowing landing page showed)
    top_band = pixels[5:40, 300:780]
    assert top_band.mean() > 0.8, top_band.mean()
    assert np.ptp(pixels) > 0.5  # something was drawn
