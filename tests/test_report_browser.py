"""The report in a real browser (Debian's `chromium`, headless, driven by Playwright; `make
test-workflow` installs it when missing, and says loudly when it could not): the landing page
opens on the run's description and claims, its configuration collapsed below; every figure of
the run opens as an image the browser has decoded, at the PNG's size and at least half the
window wide, with no PDF viewer needed; no caption renders a docutils error."""

import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import CHROMIUM, ROOT, copy_of_run
from matplotlib.image import imread
from playwright.sync_api import Page, sync_playwright

from transformer_stability.plotting import FIGURE_SPACE, natural_order
from transformer_stability.registry import STUDIES, figure_files, study_figures
from transformer_stability.report import report_command

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)"),
]
WINDOW = {"width": 1400, "height": 1000}
WIDTHS = [1400, 800]  # a desktop window and a narrow one (a laptop's half screen)
# what Chromium needs in a container without a display, GPU or network
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

CLICK_LINK = """text => {
  const link = Array.from(document.querySelectorAll('a')).find(a => a.textContent.trim() === text);
  if (!link) throw new Error('no link ' + text);
  link.click();
}"""

# Clicks the eye button of a result row and waits until the image it shows has been decoded.
SHOW_ROW = """async index => {
  const shown = () => Array.from(document.images).find(i => i.src.startsWith('data:image/png'));
  const before = shown() ? shown().src : null;
  document.querySelectorAll('a[iconname=eye]')[index].click();
  for (let tries = 0; tries < 200; tries++) {
    const image = shown();
    if (image && image.src !== before && image.complete) {
      await image.decode();
      const box = image.getBoundingClientRect();
      return {name: image.src.match(/filename=([^;]+);/)[1], natural: [image.naturalHeight,
              image.naturalWidth], shown: [box.height, box.width]};
    }
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  throw new Error('row ' + index + ' showed no image');
}"""


@pytest.fixture(scope="module")
def report(tiny_run, tmp_path_factory) -> Path:
    workdir = copy_of_run(tiny_run, tmp_path_factory.mktemp("report") / "run")
    made = subprocess.run(report_command(ROOT / "Snakefile", workdir), cwd=ROOT)
    assert made.returncode == 0
    return workdir / "results/report.html"


@pytest.fixture(scope="module")
def browser():
    """The system's Chromium (Playwright's own browser builds are never downloaded)."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Page:
    context = browser.new_context(viewport=WINDOW)
    yield context.new_page()
    context.close()


def open_report(page: Page, report: Path) -> None:
    """Load the report and wait until its scripts have run."""
    page.goto(report.resolve().as_uri(), wait_until="load")


def test_landing_page_opens_on_the_claims_above_the_configuration(report, page, tmp_path):
    open_report(page, report)
    text = page.evaluate("document.body.innerText")
    assert "Replication pipeline for three theory papers" in text
    claims = page.evaluate("document.querySelector('table.claims').innerText")
    for claim in ("A.1", "N.1", "C.1"):
        assert claim in claims
    # the configuration is there, collapsed below the claims
    hidden = page.evaluate("document.querySelector('details.configuration').textContent")
    assert "forward_source_block" in hidden and "forward_source_block" not in text

    shot = tmp_path / "landing.png"
    page.screenshot(path=shot)
    pixels = imread(shot)[..., :3]
    # the band right of the menu at the top of the window: the description's white page,
    # not the dark code block of the configuration's middle (what a vertically centred,
    # overflowing landing page showed)
    top_band = pixels[5:40, 300:780]
    assert top_band.mean() > 0.8, top_band.mean()
    assert np.ptp(pixels) > 0.5  # something was drawn


def test_every_figure_opens_as_a_decoded_image(report, page):
    figures = report.parent / "figures"
    expected = {png.name: imread(png).shape[:2] for png in figures.glob("*.png")}
    seen = {}
    for category in (study.category for study in STUDIES.values()):
        open_report(page, report)
        page.evaluate(CLICK_LINK, category)
        for row in range(page.evaluate("document.querySelectorAll('a[iconname=eye]').length")):
            image = page.evaluate(SHOW_ROW, row)
            # the figure pane has most of the window beside the results table
            assert image["shown"][1] >= WINDOW["width"] / 2, image
            seen[image["name"]] = tuple(image["natural"])
    assert seen == expected


def test_no_caption_or_description_has_a_docutils_message(report, page):
    """A caption that is not valid reStructuredText renders with a "System Message" box."""
    assert "System Message" not in report.read_text(errors="replace")
    open_report(page, report)
    assert "System Message" not in page.evaluate("document.body.textContent")


def page_of_width(browser, width: int) -> Page:
    return browser.new_context(viewport={"width": width, "height": 900}).new_page()


BOXES = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; };
  const menu = document.querySelector('nav');
  return {menu: box(menu), document: box(document.querySelector('table.claims').parentElement),
          table: box(document.querySelector('table.claims'))};
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_the_claims_table_spans_the_content_pane_beside_the_menu(report, browser, width):
    """Before: at 1400 px the workflow graph took a third beside the table; at 800 px the
    centred description started left of the window, under the menu."""
    page = page_of_width(browser, width)
    open_report(page, report)
    page.wait_for_timeout(500)
    boxes = page.evaluate(BOXES)
    menu_right = boxes["menu"][1]
    left, right = boxes["document"]
    assert left >= menu_right, boxes  # nothing under the menu
    assert right - left >= 0.9 * (width - menu_right), boxes  # the pane's width, graph below
    assert boxes["table"][0] >= menu_right, boxes


SHOW_CAPTION = """() => {
  document.querySelectorAll('a[iconname=information-circle]')[0].click();
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_a_caption_opened_before_any_figure_reads_in_lines_not_words(report, browser, width):
    """Before: the caption pane shrank to a few dozen pixels beside the landing page."""
    page = page_of_width(browser, width)
    open_report(page, report)
    page.evaluate(CLICK_LINK, next(iter(STUDIES.values())).category)
    page.evaluate(SHOW_CAPTION)
    page.wait_for_selector("li.prose-invert")
    pane = "document.querySelector('li.prose-invert').getBoundingClientRect().width"
    caption = page.evaluate(pane)
    assert caption >= 0.4 * width, caption


@pytest.mark.parametrize("width", WIDTHS)
def test_a_figure_takes_the_pane_beside_its_results_table(report, browser, width):
    page = page_of_width(browser, width)
    open_report(page, report)
    page.evaluate(CLICK_LINK, next(iter(STUDIES.values())).category)
    image = page.evaluate(SHOW_ROW, 0)
    table_right = page.evaluate("document.querySelector('nav').getBoundingClientRect().right")
    assert image["shown"][1] >= 0.9 * (width - table_right), (image, table_right)


ROW_CODES = """() => Array.from(document.querySelectorAll('nav table tr'))
  .filter(row => row.querySelector('td')).map(row => row.cells[0].innerText.trim())"""


def test_each_study_lists_its_figures_in_natural_order(report, page):
    """Before: the report sorted codes as strings, A1, A1-theory, A10, A2."""
    for study in STUDIES.values():
        open_report(page, report)
        page.evaluate(CLICK_LINK, study.category)
        listed = [code.replace(FIGURE_SPACE, "") for code in page.evaluate(ROW_CODES)]
        codes = [f.code for f in study_figures(study.name)]
        assert listed == sorted(codes, key=natural_order), listed


OPEN_FIRST_FIGURE_LINK = """async () => {
  const link = document.querySelector('table.claims td.figure a');
  const wanted = link.getAttribute('onclick').match(/results\\/figures\\/[^']+\\.png/)[0];
  link.click();
  for (let tries = 0; tries < 200; tries++) {
    const image = Array.from(document.images).find(i => i.src.startsWith('data:image/png'));
    if (image && image.complete) {
      return {code: link.textContent, wanted: wanted,
              shown: image.src.match(/filename=([^;]+);/)[1]};
    }
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  throw new Error('the link showed no image');
}"""


def test_a_figure_code_in_the_claims_table_opens_its_figure(report, page):
    open_report(page, report)
    links = page.evaluate("document.querySelectorAll('table.claims td.figure a').length")
    assert links >= len(STUDIES)
    opened = page.evaluate(OPEN_FIRST_FIGURE_LINK)
    assert opened["wanted"].endswith(opened["shown"]), opened
    assert figure_files()[opened["code"]] == opened["wanted"], opened
