"""The built book renders in a real browser: headless Chromium loads the intro, the first Part I chapter and
the API reference from a local web server (no network), and checks from the live DOM that MathJax typeset
every formula, every image loaded, and the chapter's launch link opens its .ipynb on Colab. On the chapters
with interactive figures (:mod:`sparse_tutorial.interactive`) it checks that plotly.js came from the book
itself, that each figure is drawn, that a click on its slider changes what it shows, and what a hover shows;
and that no notebook cell scrolls sideways, nor a figure whose column narrows while the window stays.

The pages are loaded in a same-origin iframe of a small probe page served next to the book; once MathJax
has finished and every image has settled, the probe writes what it found as JSON into its own DOM, which
``chromium --dump-dom`` prints. Skipped only when no Chromium is installed (``make test`` installs Debian's
``chromium`` when run as root).
"""
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs_version

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from book_tools import REPO_ROOT, toc_notebooks  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM = os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=f"no Chromium found (tried $CHROMIUM and {BROWSERS})")

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
    "--disable-renderer-backgrounding",  # keep drawing frames: a slider step runs at the next animation frame
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
]
VIRTUAL_TIME_MS = 20000
PROBE_PATH = "/__probe__.html"
PROBE_PAGE = """<!DOCTYPE html>
<html><body><pre id="result">pending</pre><script>
const page = new URLSearchParams(location.search).get("page");
const frame = document.createElement("iframe");
frame.width = 1280; frame.height = 1600;
frame.onload = async () => {
  const win = frame.contentWindow, doc = frame.contentDocument, result = {};
  try {
    if (win.MathJax && win.MathJax.startup) { await win.MathJax.startup.promise; }
    result.mathjax = win.MathJax && win.MathJax.version ? win.MathJax.version : null;
  } catch (error) { result.mathjax_error = String(error); }
  await Promise.all([...doc.images].map(img => img.complete ? null :
    new Promise(done => { img.addEventListener("load", done); img.addEventListener("error", done); })));
  result.typeset = doc.querySelectorAll("mjx-container").length;
  result.math_nodes = doc.querySelectorAll(".math").length;
  const text = doc.body.cloneNode(true);
  text.querySelectorAll("pre, code, script, style, textarea, mjx-container").forEach(node => node.remove());
  result.raw_tex = (text.textContent.match(/\\\\\\(|\\\\\\[|\\\\begin\\{/g) || []).length;
  result.images = [...doc.images].map(img => ({src: img.getAttribute("src"), ok: img.naturalWidth > 0}));
  result.colab = [...doc.querySelectorAll("a[href*='colab.research.google.com']")].map(a => a.href);
  result.api_entries = doc.querySelectorAll("dl.py").length;
  result.title = doc.title;
  result.sideways = [...doc.querySelectorAll("div.cell pre")].filter(pre => pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => pre.textContent.slice(0, 60));
  result.plotly = win.Plotly ? win.Plotly.version : null;
  result.foreign_scripts = [...doc.scripts].map(s => s.src).filter(src => src && !src.startsWith(location.origin));
  result.figures = {};
  for (const figure of doc.querySelectorAll(".plotly-graph-div")) {
    try { result.figures[figure.id] = await playWith(win, figure); }
    catch (error) { result.figures[figure.id] = {error: String(error)}; }
  }
  for (const figure of doc.querySelectorAll(".plotly-graph-div")) {  // narrow the column, not the window,
    figure.parentElement.style.maxWidth = (figure.parentElement.clientWidth - 100) + "px";  // as a scrollbar does
  }
  await new Promise(done => setTimeout(done, 500));
  for (const figure of doc.querySelectorAll(".plotly-graph-div")) {
    const column = figure.parentElement;
    result.figures[figure.id].overflow_in_narrower_column = column.scrollWidth - column.clientWidth;
  }
  document.getElementById("result").textContent = JSON.stringify(result);
};
// What a reader does with an interactive figure: look at it, click another step of its slider, hover a point.
async function playWith(win, figure) {
  const shown = () => JSON.stringify(figure.data.map(trace => [trace.x, trace.y, trace.z]));
  const state = {drawn: figure.querySelectorAll(".main-svg .trace, .main-svg .hm").length, traces: figure.data.length,
                 steps: figure.layout.sliders[0].steps.length, active: figure.layout.sliders[0].active,
                 title: figure.layout.title.text};
  figure.scrollIntoView();  // on screen, where the browser draws the frames the step waits for
  const before = shown();
  const target = state.active === 0 ? state.steps - 1 : 0;
  const tick = figure.querySelectorAll("rect.slider-tick-rect")[target].getBoundingClientRect();
  const rail = figure.querySelector("rect.slider-rail-touch-rect").getBoundingClientRect();
  const at = {bubbles: true, view: win, clientX: tick.left + tick.width / 2, clientY: rail.top + rail.height / 2};
  figure.querySelector("rect.slider-rail-touch-rect").dispatchEvent(new win.MouseEvent("mousedown", at));
  figure.dispatchEvent(new win.MouseEvent("mouseup", at));
  for (let waited = 0; waited < 5000 && shown() === before; waited += 100) {  // the step's Plotly.update runs at
    await new Promise(done => setTimeout(done, 100));                           // a later frame
  }
  Object.assign(state, {clicked: target, active_after: figure.layout.sliders[0].active, changed: shown() !== before,
                        title_after: figure.layout.title.text});
  state.frame_drawn = state.changed || await new Promise(done => {  // does the browser draw animation frames?
    win.requestAnimationFrame(() => done(true));
    setTimeout(() => done(false), 1000);
  });
  const trace = figure.data.findIndex(t => t.hoverinfo !== "skip" && (t.z || t.y || []).length > 0);
  win.Plotly.Fx.hover(figure, figure.data[trace].z ? {xval: 0, yval: 0} : [{curveNumber: trace, pointNumber: 0}]);
  state.hover = figure.querySelector(".hoverlayer").textContent;
  return state;
}
frame.src = page;
document.body.appendChild(frame);
</script></body></html>
"""


class _BookHandler(SimpleHTTPRequestHandler):
    """Serves the built book, plus the probe page at :data:`PROBE_PATH`."""

    def do_GET(self):
        if self.path.split("?")[0] == PROBE_PATH:
            body = PROBE_PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()

    def log_message(self, format, *args):
        """Keep the test output quiet."""


@pytest.fixture(scope="module")
def server(built_book):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_BookHandler, directory=str(built_book)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def chromium(*arguments: str) -> str:
    """Run headless Chromium with a throw-away profile and return its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        completed = subprocess.run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *arguments],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert completed.returncode == 0, f"chromium failed ({completed.returncode}):\n{completed.stderr[-2000:]}"
    return completed.stdout


def probe(server: str, page: str) -> dict:
    """Load ``page`` (a path of the built site) in Chromium and return what the probe saw in its DOM."""
    dom = chromium(f"--virtual-time-budget={VIRTUAL_TIME_MS}", "--dump-dom", f"{server}{PROBE_PATH}?page=/{page}")
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"the probe page did not render:\n{dom[:2000]}"
    assert found.group(1) != "pending", f"{page} did not finish loading within {VIRTUAL_TIME_MS} ms of virtual time"
    return json.loads(found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


PART1_CHAPTER = next((path for path in toc_notebooks() if path.parent.name == "part1"), None)
PAGES = {
    "intro": "book/intro.html",
    "part1": PART1_CHAPTER.relative_to(REPO_ROOT).with_suffix(".html").as_posix() if PART1_CHAPTER else None,
    "api": "book/appendix/api.html",
}


@pytest.fixture(scope="module")
def probed(server) -> dict:
    assert PART1_CHAPTER is not None, "_toc.yml lists no Part I chapter (book/part1/...)"
    return {name: probe(server, page) for name, page in PAGES.items()}


def test_no_notebook_cell_scrolls_sideways(probed):
    """Long lines of code and of printed output wrap (book/_ext/code_wrap.py): nothing hides past the column."""
    assert probed["part1"]["sideways"] == []


@pytest.mark.parametrize("name", ["intro", "part1", "api"])
def test_page_loads_with_its_title(probed, name):
    assert "Sparse attention" in probed[name]["title"], probed[name]


@pytest.mark.parametrize("name", ["intro", "part1"])
def test_mathjax_typeset_every_formula(probed, name):
    result = probed[name]
    assert result.get("mathjax", "").startswith("3."), f"MathJax 3 did not start: {result}"
    assert result["math_nodes"] > 0, f"{PAGES[name]} has no math to typeset"
    assert result["typeset"] >= result["math_nodes"], f"only {result['typeset']} of {result['math_nodes']} typeset"
    assert result["raw_tex"] == 0, f"{PAGES[name]} shows {result['raw_tex']} raw TeX delimiters"


@pytest.mark.parametrize("name", ["intro", "part1", "api"])
def test_every_image_loaded(probed, name):
    broken = [image["src"] for image in probed[name]["images"] if not image["ok"]]
    assert not broken, f"{PAGES[name]}: images that did not load: {broken}"


def test_chapter_shows_its_plots(probed):
    plots = [image for image in probed["part1"]["images"] if "_images/" in image["src"]]
    assert plots, f"{PAGES['part1']} shows no figure from its outputs"


def test_chapter_launches_its_notebook_on_colab(probed):
    notebook = PART1_CHAPTER.relative_to(REPO_ROOT).as_posix()
    expected = f"https://colab.research.google.com/github/sparse-attention-book/sparse-attention-book/blob/main/{notebook}"
    assert probed["part1"]["colab"] == [expected]
    assert "/./" not in expected


def test_api_reference_documents_the_library(probed):
    assert probed["api"]["api_entries"] >= 20, probed["api"]


def test_screenshot_of_a_chapter(server, tmp_path):
    shot = tmp_path / "chapter.png"
    chromium(f"--virtual-time-budget={VIRTUAL_TIME_MS}", f"--screenshot={shot}", f"{server}/{PAGES['part1']}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20_000, "the screenshot is nearly empty"


def test_the_scorecard_table_sorts_and_searches_offline_and_lists_every_claim(server):
    """Issue 52: DataTables, served with the book, turns the scorecard into a sortable, searchable table of
    every claim of every results file and design (issue 63); the page names no script from elsewhere."""
    from sparse_tutorial.stats.scorecard import scorecard

    claims = len(scorecard(lambda name: json.loads((REPO_ROOT / "book" / "results" / f"{name}.json").read_text())))
    dom = chromium(f"--virtual-time-budget={VIRTUAL_TIME_MS}", "--dump-dom", f"{server}/book/part4/16_scorecard.html")
    assert "dt-container" in dom and 'type="search"' in dom, "DataTables did not enhance the scorecard"
    assert re.search(rf"of {claims} entries", dom), f"the table's info does not count {claims} claims"
    assert "dt_for_itables" not in dom and "../../_static/itables/dt_bundle.js" in dom   # the served bundle, no CDN


INTERACTIVE_FIGURES = {
    "linf-vs-entropy": ("book/part1/04_min_entropy.html", 3),
    "temperature-slider": ("book/part1/05_temperature_gumbel.html", 3),
    "sparsegen-simplex": ("book/part1/07_sparsegen_entmax.html", 4),
    "alpha-entmax-simplex": ("book/part1/07_sparsegen_entmax.html", 4),
}
"""Element id of each interactive figure → its page and number of traces."""
if len(json.loads((REPO_ROOT / "book" / "results" / "nmt.json").read_text())["heatmaps"]) >= 2:
    INTERACTIVE_FIGURES["stored-heatmaps"] = ("book/part2/10_sparse_nmt.html", 1)  # once two systems are stored


@pytest.fixture(scope="module")
def figure_pages(server) -> dict:
    return {page: probe(server, page) for page in sorted({page for page, _ in INTERACTIVE_FIGURES.values()})}


@pytest.mark.parametrize("page", sorted({page for page, _ in INTERACTIVE_FIGURES.values()}))
def test_plotly_is_served_with_the_book(figure_pages, page):
    result = figure_pages[page]
    assert result["plotly"] == get_plotlyjs_version(), f"not the plotly.js of the plotly package on {page}: {result}"
    assert result["foreign_scripts"] == [], f"{page} loads scripts from elsewhere: {result['foreign_scripts']}"


@pytest.mark.parametrize("div_id", INTERACTIVE_FIGURES)
def test_interactive_figure_is_drawn_and_its_slider_changes_it(figure_pages, div_id):
    page, traces = INTERACTIVE_FIGURES[div_id]
    figure = figure_pages[page]["figures"].get(div_id)
    assert figure and "error" not in figure, f"{page}: figure {div_id!r} missing or broken: {figure}"
    assert figure["traces"] == traces and figure["drawn"] == traces, figure
    assert figure["steps"] >= 2, figure
    moved = figure["active_after"] == figure["clicked"] != figure["active"]
    assert moved, f"the click did not move the slider: {figure}"
    if not figure["changed"] and not figure["frame_drawn"]:   # plotly runs the step in an animation frame
        pytest.skip(f"headless Chromium drew no animation frame, so the step of {div_id} could not run: {figure}")
    assert figure["changed"] and figure["title_after"] != figure["title"], f"the slider step changed nothing: {figure}"


@pytest.mark.parametrize("div_id", INTERACTIVE_FIGURES)
def test_interactive_figure_never_scrolls_sideways_when_its_column_narrows(figure_pages, div_id):
    page, _ = INTERACTIVE_FIGURES[div_id]
    figure = figure_pages[page]["figures"][div_id]
    assert figure["overflow_in_narrower_column"] <= 1, f"{div_id} sticks out of its column: {figure}"


def test_heatmap_hover_names_source_word_target_word_and_weight(figure_pages):
    if "stored-heatmaps" not in INTERACTIVE_FIGURES:
        pytest.skip("chapter 10 shows the stored heatmaps' slider once two systems of its grid are stored")
    page, _ = INTERACTIVE_FIGURES["stored-heatmaps"]
    figure = figure_pages[page]["figures"]["stored-heatmaps"]
    shown = json.loads((REPO_ROOT / "book" / "results" / "nmt.json").read_text(encoding="utf-8"))["heatmaps"]
    system = list(shown)[figure["clicked"]]  # the hover comes after the click: the first cell of that system's map
    sentence = shown[system][0]  # chapter 10 shows each system's first stored test sentence
    first = f"source: {sentence['source'][0]}target: {sentence['output'][0]}"
    assert figure["hover"] == f"{first}weight: {sentence['attention'][0][0]:.3f}", figure


def test_bar_hover_shows_the_weight(figure_pages):
    page, _ = INTERACTIVE_FIGURES["temperature-slider"]
    hover = figure_pages[page]["figures"]["temperature-slider"]["hover"]
    assert re.fullmatch(r"softmax[01]\.\d{4}", hover), hover
