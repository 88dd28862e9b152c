"""The ``syntaxformer show`` page in a real browser: headless Chromium (selenium + chromedriver) opens a page made for
an SST-2 dev sentence and checks that the trees, masks and heat maps rendered (SVG elements of non-zero size with
their arcs / nodes / cells) and that hovering a token moves the highlighted attention row and lights its ancestors.

Needs ``chromium`` and ``chromium-driver`` (Debian packages; ``.ci/run`` installs them when missing) and
``selenium`` (the ``dev`` extra). Without a browser the test is skipped locally with the reason, and fails where
``SYNTAXFORMER_REQUIRE_BROWSER=1`` (CI sets it), so it can never be skipped silently there.

Environment: ``SYNTAXFORMER_VIEWER_MODELS`` (run folders or checkpoints separated by ``os.pathsep``; default the
untrained MiniLM SG-Net and Syntax-BERT) and ``SYNTAXFORMER_VIEWER_SCREENSHOT`` (also write the screenshot there;
``docs/images/show_sst2.png`` is made that way, see ``docs/viewer.md``).
"""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA

FALLBACK = "The movie's sharp script makes up for its slow start."


def _browser() -> tuple[str, str]:
    """Paths of a Chromium binary and its chromedriver; skip (or fail where a browser is required) without."""
    problems = []
    try:
        import selenium  # noqa: F401
    except ImportError:
        problems.append("selenium is not installed (pip install -e '.[dev]')")
    binary = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    driver = shutil.which("chromedriver")
    if binary is None:
        problems.append("no chromium / chromium-browser / google-chrome on PATH (apt-get install chromium)")
    if driver is None:
        problems.append("no chromedriver on PATH (apt-get install chromium-driver)")
    if problems:
        message = "browser test: " + "; ".join(problems)
        if os.environ.get("SYNTAXFORMER_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (SYNTAXFORMER_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    return binary, driver


def _sst2_sentence() -> str:
    """A mid-length SST-2 dev sentence (the shared data), else a built-in review sentence."""
    path = DATA / "glue" / "SST-2" / "dev.tsv"
    if not path.is_file():
        return FALLBACK
    rows = [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
    return next(r for r in rows if 9 <= len(r.split()) <= 14)


def _box(driver, element_id: str) -> dict:
    return driver.execute_script(
        "const e = document.getElementById(arguments[0]); if (!e) return null;"
        "const r = e.getBoundingClientRect(); return {w: r.width, h: r.height,"
        " rects: e.querySelectorAll('rect').length, paths: e.querySelectorAll('path').length,"
        " texts: e.querySelectorAll('text').length};",
        element_id,
    )


def _highlight(driver, element_id: str) -> list[tuple[str, str, str]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' .row-hl'))"
        ".map(r => [r.getAttribute('data-row'), r.getAttribute('y'), r.getAttribute('visibility')]);",
        element_id,
    )


@pytest.mark.slow
def test_show_page_renders_and_hover_moves_the_highlighted_row(tmp_path, annotator):
    binary, driver_path = _browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from syntaxformer.analysis.viewer import build_view

    models = [m for m in os.environ.get("SYNTAXFORMER_VIEWER_MODELS", "").split(os.pathsep) if m] or None
    view = build_view(_sst2_sentence(), models=models, parser=annotator)
    page = view.save(tmp_path / "show.html")
    n_tokens, n_words = len(view.data["tokens"]), len(view.data["words"])
    systems = [m["system"] for m in view.data["models"]]

    options = Options()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.get(page.resolve().as_uri())
        assert driver.execute_script("return document.body.getAttribute('data-rendered')") == "1"
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, errors

        # trees: one arc (and label) per word, constituency nodes
        dep = _box(driver, "dep-svg")
        assert dep["w"] > 100 and dep["h"] > 50 and dep["paths"] >= n_words
        con = _box(driver, "con-svg")
        assert con["w"] > 100 and con["h"] > 50 and con["texts"] > n_words
        # masks and heat maps: an L x L grid of cells (plus the row highlight) of non-zero size
        heat_ids = ["sdoi-svg", "groups-dependency"] + [f"attn-{k}" for k in range(len(systems))]
        for element_id in heat_ids:
            box = _box(driver, element_id)
            assert box is not None, element_id
            assert box["w"] > 50 and box["h"] > 50 and box["rects"] >= n_tokens * n_tokens, (element_id, box)
        for k, system in enumerate(systems):
            if system == "syntax_bert":
                box = _box(driver, f"topical-{k}")
                assert box is not None and box["w"] > 50 and box["rects"] > n_tokens, box

        # hover a word token: its row is highlighted in every map, its ancestors in the trees
        tokens = driver.find_elements(By.CSS_SELECTOR, ".tok")
        assert len(tokens) == n_tokens
        word_tokens = [
            i for i, w in enumerate(view.data["token_word"]) if w >= 0 and view.data["words"][w]["head"] >= 0
        ]
        first, second = word_tokens[0], word_tokens[-1]
        ActionChains(driver).move_to_element(tokens[first]).perform()
        before = _highlight(driver, "attn-0")
        assert before and all(r == str(first) and v == "visible" for r, _, v in before), before
        ActionChains(driver).move_to_element(tokens[second]).perform()
        after = _highlight(driver, "attn-0")
        assert all(r == str(second) for r, _, _ in after) and after[0][1] != before[0][1], (before, after)
        assert _highlight(driver, "sdoi-svg")[0][0] == str(second)
        assert "sel" in tokens[second].get_attribute("class")
        assert driver.execute_script("return document.querySelectorAll('#dep-svg .arc.anc').length") >= 1
        assert driver.execute_script("return document.querySelectorAll('#con-svg .cnode.anc').length") >= 1

        # another layer redraws the maps and keeps the selected row
        if "SG" in [x["name"] for m in view.data["models"] for x in m["layers"]]:
            driver.execute_script(
                "const s = document.getElementById('layer'); s.value = 'SG';s.dispatchEvent(new Event('change'));"
            )
            assert all(r == str(second) for r, _, _ in _highlight(driver, "attn-0"))

        driver.execute_script(
            "const s = document.getElementById('layer'); s.value = s.options[s.options.length - 2]"
            ".value; s.dispatchEvent(new Event('change'));"
        )
        size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        png = driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {  # the whole page, not only the window
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            },
        )["data"]
        shot = tmp_path / "show.png"
        shot.write_bytes(base64.b64decode(png))
        assert shot.stat().st_size > 10_000
    finally:
        driver.quit()
    target = os.environ.get("SYNTAXFORMER_VIEWER_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
