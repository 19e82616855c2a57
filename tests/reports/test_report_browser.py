"""The report in a real browser (headless Chromium): it renders with no console errors, every
figure loads, names with markup stay text (no alert, no injected element). With
UPDATE_DOCS_SCREENSHOT=1 it also refreshes docs/report-screenshot.png for the README (a test
run leaves the tree as it found it otherwise)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from advisor.api import recommend
from reports.report import ReportOptions, build_report, write_report
from test_report import EVIL_PROC, EVIL_TABLE, evil_workload

pytestmark = [pytest.mark.browser, pytest.mark.integration]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
DOCS_SHOT = Path(__file__).resolve().parents[2] / "docs" / "report-screenshot.png"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None or not Path(CHROMEDRIVER).exists():
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1600",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(arg)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def figures_loaded(driver) -> list[dict]:
    return driver.execute_script(
        "return Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete, "
        "w: i.naturalWidth, h: i.naturalHeight}));")


def severe(logs: list[dict]) -> list[dict]:
    return [e for e in logs if e.get("level") in ("SEVERE", "ERROR")]


def test_report_renders_with_every_figure_loaded(browser, tmp_path, tpcdi_report):
    path = write_report(tmp_path / "report.html", tpcdi_report[1])
    browser.get(path.as_uri())
    assert severe(browser.get_log("browser")) == []
    images = figures_loaded(browser)
    assert len(images) >= 6
    assert all(i["complete"] and i["w"] > 0 and i["h"] > 0 for i in images), images
    assert browser.execute_script("return document.title").startswith("Design report")
    sections = browser.execute_script("return Array.from(document.querySelectorAll('section')).map(s => s.id)")
    assert {"summary", "graph", "costs", "sensitivity", "suggestions", "assignment"} <= set(sections)
    shot = tmp_path / "report.png"
    browser.set_window_size(1280, 1600)
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(shot, DOCS_SHOT)


def test_markup_in_names_stays_text_in_the_browser(browser, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException

    w = evil_workload()
    rec = recommend(w)
    path = write_report(tmp_path / "evil.html",
                        build_report(rec, options=ReportOptions(sensitivity=False, scaling=False)))
    browser.get(path.as_uri())
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text
    assert browser.execute_script("return document.scripts.length") == 0
    assert browser.execute_script("return document.querySelectorAll('i').length") == 0
    srcs = browser.execute_script("return Array.from(document.images).map(i => i.getAttribute('src'))")
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    text = browser.execute_script("return document.body.innerText")
    assert EVIL_TABLE in text and EVIL_PROC in text and "Post & <i>Book</i>" in text
    assert severe(browser.get_log("browser")) == []
    assert all(i["w"] > 0 for i in figures_loaded(browser))
