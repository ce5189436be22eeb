"""The served app in a real browser: Debian's Chromium driven by Playwright (no browser download).

Each test starts ``paperchat serve`` as a subprocess on a free loopback port with
``PAPERCHAT_HOME`` in a temporary directory (real bundled models), then types a question like a
person would. Every request to a non-loopback address is blocked and recorded: the page must not
need the network (fonts, analytics, CDNs).

Needs ``/usr/bin/chromium``: ``apt-get install -y chromium chromium-driver``
(``make browser-deps``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "apt-get install -y chromium chromium-driver (or: make browser-deps)"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions", "--metrics-recording-only"]
LOCAL = ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")
#: First use builds the default index and loads both models: slow on 2 busy cores.
START_TIMEOUT = 600
ANSWER_TIMEOUT = 300_000  # ms

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not CHROMIUM.exists(),
                                 reason=f"needs Debian's Chromium at {CHROMIUM}; install it with: "
                                        f"{INSTALL}")]

#: Recorded by the page from the start: was a card on screen while the answer was being written?
PENDING_PROBE = """
window.__pc = {pendingWithCards: false};
new MutationObserver(() => {
  const s = document.querySelector('.pc-status');
  if (s && s.textContent.includes('writing') && document.getElementById('card-1'))
    window.__pc.pendingWithCards = true;
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def paperchat_cmd() -> list[str]:
    script = Path(sys.executable).parent / "paperchat"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rag"]


def run_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PAPERCHAT_LLM_URL", "PAPERCHAT_CHROMA_URL", "PAPERCHAT_INDEX")}
    env["PAPERCHAT_HOME"] = str(home)
    return env


class Server:
    """``paperchat serve ...`` in a subprocess; its output goes to ``log``."""

    def __init__(self, home: Path, *args: str):
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = home / f"serve-{self.port}.log"
        self._out = open(self.log, "wb")
        self.proc = subprocess.Popen(
            paperchat_cmd() + ["serve", "--port", str(self.port), *args], cwd=ROOT,
            env=run_env(home), stdout=self._out, stderr=subprocess.STDOUT,
            start_new_session=True)

    def wait(self) -> "Server":
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"paperchat serve exited {self.proc.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(1)
        pytest.fail(f"paperchat serve did not answer within {START_TIMEOUT} s:\n{self.output()}")

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        self._out.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


class Watched:
    """A page whose dialogs, page errors and non-loopback requests are recorded (and blocked)."""

    def __init__(self, browser, tmp_path: Path):
        self.context = browser.new_context(viewport={"width": 1400, "height": 950},
                                           accept_downloads=True)
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.external: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.context.route("**/*", self._route)
        self.page.add_init_script(PENDING_PROBE)
        self.tmp = tmp_path

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _route(self, route) -> None:
        url = route.request.url
        if url.startswith(LOCAL):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def ask(self, question: str) -> None:
        page = self.page
        page.fill("#pc-question textarea", question)
        page.press("#pc-question textarea", "Enter")
        page.wait_for_selector("#card-1", timeout=ANSWER_TIMEOUT)
        page.wait_for_function(
            "() => { const s = document.querySelector('.pc-status');"
            " return s && !s.textContent.includes('writing'); }", timeout=ANSWER_TIMEOUT)

    def download(self, selector: str, name: str) -> Path:
        with self.page.expect_download(timeout=30_000) as info:
            self.page.click(selector)
        path = self.tmp / name
        info.value.save_as(path)
        return path

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser, tmp_path):
    w = Watched(browser, tmp_path)
    yield w
    w.close()


def test_seed_question_streams_answer_cards_citations_and_bibtex(watched, home, tmp_path):
    import bibtexparser

    server = Server(home).wait()
    try:
        page = watched.page
        page.goto(server.url)
        n_seed = sum(1 for line in (ROOT / "data" / "seed_papers.jsonl").open() if line.strip())
        assert f"{n_seed} papers" in page.inner_text("#pc-header")
        watched.ask("Which paper fine-tunes an LLM with reinforcement learning to generate "
                    "crossover operators for CVRP?")
        cards = page.query_selector_all("#pc-sources article.pc-card")
        assert len(cards) >= 3
        assert page.evaluate("window.__pc.pendingWithCards"), "cards must show before the answer"
        assert "Refining Hybrid Genetic Search" in page.inner_text("#pc-sources")
        assert all(a.get_attribute("target") == "_blank" and
                   a.get_attribute("href").startswith("https://openreview.net/forum?id=")
                   for a in page.query_selector_all("#pc-sources a.pc-title"))

        chat_text = page.inner_text("#pc-chat")
        assert "▍" not in chat_text and len(chat_text) > 80, chat_text
        links = page.query_selector_all("#pc-chat a.pc-cite")
        assert links, f"the answer cites no paper: {chat_text}"
        href = links[0].get_attribute("href")
        links[0].click()
        page.wait_for_function(f"() => location.hash === '{href}'")
        target = page.evaluate("document.querySelector(':target') && "
                               "document.querySelector(':target').id")
        assert f"#{target}" == href
        card = page.locator(href)
        assert card.is_visible()
        mark = card.locator(".pc-support")
        page.wait_for_timeout(500)  # the highlight fades in
        assert mark.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 226, 122)"
        assert len(page.context.pages) == 1  # an in-page link, not a new tab

        page.click("#pc-export button, #pc-export .label-wrap")
        bib_path = watched.download("#pc-dl-cited", "cited.bib")
        lib = bibtexparser.parse_string(bib_path.read_text())
        assert lib.entries and not lib.failed_blocks
        assert all({"title", "year", "url"} <= set(e.fields_dict) for e in lib.entries)
        all_path = watched.download("#pc-dl-all", "all.bib")
        everything = bibtexparser.parse_string(all_path.read_text())
        assert len(everything.entries) == len(cards) and not everything.failed_blocks
        md = watched.download("#pc-dl-md", "conversation.md").read_text()
        assert md.startswith("# paperchat conversation") and "**References**" in md
        assert "@inproceedings" in page.input_value("#pc-bib textarea")

        shot = tmp_path / "paperchat-seed.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"\nscreenshot: {shot}")
        assert watched.external == [], "the page must not reach the network"
        assert watched.dialogs == [] and watched.errors == []
    finally:
        server.stop()


def test_xss_corpus_shows_payloads_as_text(watched, home, tmp_path):
    data = ROOT / "tests" / "data" / "xss_papers.jsonl"
    subprocess.run(paperchat_cmd() + ["index", str(data), "--name", "xss", "--quiet"], cwd=ROOT,
                   env=run_env(home), check=True, timeout=START_TIMEOUT, capture_output=True)
    server = Server(home, "--index", "xss").wait()
    try:
        page = watched.page
        page.goto(server.url)
        assert "4 papers" in page.inner_text("#pc-header")
        page.click("#pc-area input")  # the primary-area choices come from the index too
        page.get_by_text("optimization <i onmouseover=alert('area')>x</i> (1)").wait_for()
        page.keyboard.press("Escape")
        question = "<img src=x onerror=alert('q')> robust graph sparsifiers and adversarial images"
        watched.ask(question)
        page.hover("#pc-sources")
        for title in page.query_selector_all("#pc-sources a.pc-title"):
            title.hover()
        page.wait_for_timeout(500)

        sources = page.inner_text("#pc-sources")
        assert "<script>window.__xss='title';alert('xss-title')</script>" in sources
        assert "<img src=x onerror=\"window.__xss='img';alert('xss-img')\">" in sources
        assert "<img src=x onerror=alert('q')>" in page.inner_text("#pc-chat")
        injected = page.evaluate("""() => ({
            xss: typeof window.__xss,
            imgs: document.querySelectorAll('img[src="x"], img[src$="/x"]').length,
            handlers: document.querySelectorAll(
                '#pc-sources [onerror], #pc-sources [onload], #pc-sources [onmouseover],'
                + ' #pc-chat [onerror], #pc-chat [onload], #pc-chat [onmouseover]').length,
            svgs: document.querySelectorAll('#pc-sources svg, #pc-chat svg[onload]').length,
            scripts: [...document.scripts].filter(s => s.textContent.includes('__xss')).length,
            links: [...document.querySelectorAll('#pc-sources a, #pc-chat a')]
                     .map(a => a.getAttribute('href'))
                     .filter(h => !/^(https:|#card-)/.test(h || '')),
        })""")
        assert injected == {"xss": "undefined", "imgs": 0, "handlers": 0, "svgs": 0,
                            "scripts": 0, "links": []}

        # the same titles as BibTeX in the chat: a code block shows them as text. Every paper
        # of the list is listed first (the question above shows only the two on its topic,
        # and after it "list all the papers" lists those two)
        from index.sources import load_papers
        from rag.conference.export import bibtex

        page.goto(server.url)  # a new conversation, whose first turn lists the whole index
        watched.ask("list all the papers")
        assert len(page.query_selector_all("#pc-sources button.pc-more-like")) == 4
        listed = {p.id: p for p in load_papers(data).papers}
        cited = [listed[b.get_attribute("data-paper")]
                 for b in page.query_selector_all("#pc-sources button.pc-more-like")]
        page.fill("#pc-question textarea", "BibTeX of all of them")
        page.press("#pc-question textarea", "Enter")
        code = page.locator(f"{LAST_BUBBLE} >> .code_wrap pre code")
        code.wait_for(timeout=ANSWER_TIMEOUT)
        entries = code.inner_text()
        assert entries.strip() == bibtex(cited).strip()
        assert "<script>window.\\_\\_xss='title';alert('xss-title')</script>" in entries
        assert "<svg onload=alert('xss-svg')>" in entries and "$\\ell_1$" in entries
        assert code.locator(".katex").count() == 0  # math in code stays code
        page.wait_for_timeout(500)
        assert page.evaluate("typeof window.__xss") == "undefined"
        shot = tmp_path / "paperchat-xss.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"\nscreenshot: {shot}")
        assert page.evaluate("document.querySelectorAll('[onerror],[onload],[onmouseover]')"
                             ".length") == 0
        assert watched.dialogs == [], f"a payload ran: {watched.dialogs}"
        assert watched.external == [] and watched.errors == []
    finally:
        server.stop()


# --- evidence-first answers ---------------------------------------------------------------------
RFTHGS_TITLE = "Refining Hybrid Genetic Search for CVRP"
VRP_QUESTION = ("Which paper fine-tunes a small language model to write crossover operators for "
                "vehicle routing?")
#: Screenshots a person looks at after a run (kept out of tmp_path on purpose).
ARTIFACTS = ROOT / "tests" / "artifacts"
#: The last chat message's rendered content (the answer bubble once an answer is there).
LAST_BUBBLE = "#pc-chat .message-content >> nth=-1"


@pytest.fixture(scope="module")
def seed_server(tmp_path_factory):
    """One ``paperchat serve`` over the seed index (real models) for the tests below."""
    home = tmp_path_factory.mktemp("home")
    server = Server(home).wait()
    yield server
    server.stop()


def rfthgs_abstract() -> str:
    import json

    from rag.text import normalise

    for line in (ROOT / "data" / "seed_papers.jsonl").open(encoding="utf-8"):
        if line.strip():
            rec = json.loads(line)
            if rec["title"].startswith(RFTHGS_TITLE):
                return normalise(rec["abstract"])
    raise AssertionError("the seed list has no RFTHGS paper")


def test_answer_quotes_the_abstract_and_links_its_card(watched, seed_server):
    page = watched.page
    page.goto(seed_server.url)
    assert "auto answers: extractive" in page.inner_text("#pc-header")
    watched.ask(VRP_QUESTION)
    bubble = page.locator(LAST_BUBBLE)
    bubble.locator(".pc-mode-line").wait_for(timeout=ANSWER_TIMEOUT)
    assert "extractive · sentences quoted from the abstracts" in bubble.inner_text()

    quotes = bubble.locator("blockquote.pc-quote .pc-quote-text").all_inner_texts()
    assert quotes, bubble.inner_html()
    abstract = rfthgs_abstract()
    sentences = [q.strip().removeprefix("“").removesuffix("”") for q in quotes]
    assert any(len(s) > 40 and s in abstract for s in sentences), (sentences, abstract)
    assert "&lt;" not in bubble.inner_text() and "> “" not in bubble.inner_text()  # no raw MD

    one = bubble.locator("a.pc-cite", has_text="[1]").first
    assert one.get_attribute("href") == "#card-1"
    assert page.inner_text("#card-1 .pc-title").startswith(RFTHGS_TITLE)
    chip = bubble.locator("blockquote.pc-quote a.pc-cite").first
    assert chip.get_attribute("href") == "#card-1"
    chip.click()
    page.wait_for_function("() => location.hash === '#card-1'")
    assert page.evaluate("document.querySelector(':target').id") == "card-1"
    page.wait_for_timeout(400)  # the outline's transition
    shadow = page.evaluate("getComputedStyle(document.getElementById('card-1')).boxShadow")
    assert shadow not in ("", "none"), shadow
    assert len(page.context.pages) == 1

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("location.hash = ''")  # the chat scrolled into view for the picture
    page.screenshot(path=str(ARTIFACTS / "paperchat-evidence.png"), full_page=True)
    print(f"\nscreenshot: {ARTIFACTS / 'paperchat-evidence.png'}")
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


def test_let_the_model_write_it_answers_in_generative_mode(watched, seed_server):
    page = watched.page
    page.goto(seed_server.url)
    watched.ask(VRP_QUESTION)
    page.locator(LAST_BUBBLE).locator(".pc-mode-line").wait_for(timeout=ANSWER_TIMEOUT)
    page.click("#pc-model-writes")
    line = page.locator(LAST_BUBBLE).locator(".pc-mode-line", has_text="generative")
    line.wait_for(timeout=2 * ANSWER_TIMEOUT)  # the model writes up to max_answer_tokens
    said = line.inner_text()
    assert "written by" in said and "checked against the abstracts" in said
    assert page.locator("#pc-chat .message-content").count() == 2  # replaced, not appended
    bubble = page.locator(LAST_BUBBLE)
    details = bubble.locator("details.pc-unsupported-note")
    if details.count():  # what no abstract supports is set apart, collapsed
        assert details.get_attribute("open") is None
        assert details.locator("summary").inner_text().startswith(
            "Not supported by the cited abstracts")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "paperchat-generative.png"), full_page=True)
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


# --- the plan line above an answer ---------------------------------------------------------------
PLAN = f"{LAST_BUBBLE} >> .pc-plan"


def part_button(page, key: str):
    """The × of plan part ``key`` in the last answer's bubble (its key is the button's value)."""
    return page.locator(f'{LAST_BUBBLE} >> button.pc-part-x[value="{key}"]')


def plan_texts(page) -> list[str]:
    return [" ".join(t.split()) for t in
            page.locator(f"{PLAN} >> .pc-part-text").all_inner_texts()]


def wait_for_answer_about_rfthgs(page) -> None:
    """The re-asked answer is on screen: RFTHGS is card 1 and nothing is being written."""
    page.wait_for_function(
        "(title) => { const t = document.querySelector('#card-1 .pc-title');"
        " const s = document.querySelector('.pc-status');"
        " return t && t.textContent.startsWith(title) && s &&"
        " !s.textContent.includes('writing'); }", arg=RFTHGS_TITLE, timeout=ANSWER_TIMEOUT)


def test_a_dropdown_filter_is_a_part_of_the_plan_and_its_removal_resets_the_dropdown(
        watched, seed_server):
    """The plan line sits at the top of the answer's bubble; the Primary area dropdown's filter
    is one of its parts; its × asks the last question again with the dropdown back to "any",
    replacing that answer and keeping the turn before it."""
    page = watched.page
    page.goto(seed_server.url)
    watched.ask("Which paper studies post-training quantization robustness?")
    first_answer = page.locator("#pc-chat .message-content >> nth=1").inner_text()
    page.click("#pc-area input")
    page.get_by_role("option", name="learning theory (3)").click()
    watched.ask(VRP_QUESTION)  # RFTHGS is an optimization paper: not among these sources
    assert RFTHGS_TITLE not in page.inner_text("#pc-sources")
    button = part_button(page, "filter:primary_area=learning theory")
    button.wait_for(timeout=ANSWER_TIMEOUT)
    assert "area: learning theory" in plan_texts(page)
    assert page.locator(LAST_BUBBLE).evaluate(  # the line is the bubble's first block
        "b => b.querySelector('.md').firstElementChild.classList.contains('pc-plan')")
    assert button.evaluate("b => b.tagName") == "BUTTON"
    assert button.locator(".pc-x").inner_text() == "×"  # and its accessible name says what
    assert page.get_by_role("button", name="Remove “area: learning theory” and ask again") \
        .count() == 1
    assert button.get_attribute("title") == "Ask again without “area: learning theory”"
    assert page.locator("#pc-chat .pc-part-x").count() == \
        page.locator(f"{LAST_BUBBLE} >> .pc-part-x").count()  # older answers: no ×
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "paperchat-plan-line.png"), full_page=True)

    button.click()
    wait_for_answer_about_rfthgs(page)
    assert page.input_value("#pc-area input") == "Any primary area"
    assert page.locator("#pc-chat .message-content").count() == 4  # replaced, not appended
    assert page.locator("#pc-chat .message-content >> nth=1").inner_text() == first_answer
    page.locator(PLAN).wait_for()
    assert not any(t.startswith("area:") for t in plan_texts(page))
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


def test_a_filter_read_from_the_question_is_a_part_whose_removal_asks_without_it(
        watched, seed_server):
    """'oral papers on ...' is read as status=oral; every seed paper is a poster, so nothing
    matches until the part is removed (here with the keyboard)."""
    page = watched.page
    page.goto(seed_server.url)
    page.fill("#pc-question textarea", "oral papers on crossover operators for vehicle routing")
    page.press("#pc-question textarea", "Enter")
    button = part_button(page, "filter:status=oral")
    button.wait_for(timeout=ANSWER_TIMEOUT)
    assert "orals only" in plan_texts(page)
    assert page.input_value("#pc-status input") == "Any status"  # not a dropdown's filter
    assert "No paper matched these filters" in page.inner_text("#pc-sources")
    button.focus()
    page.keyboard.press("Enter")
    wait_for_answer_about_rfthgs(page)
    assert page.locator("#pc-chat .message-content").count() == 2  # replaced, not appended
    assert part_button(page, "filter:status=oral").count() == 0
    assert "orals only" not in plan_texts(page)
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


# --- "More like this" and BibTeX in the chat -------------------------------------------------
def seed_neighbours(home: Path, paper_id: str, k: int) -> list[str]:
    """The ``k`` papers nearest to ``paper_id`` by the cosine of the index's paper vectors
    (what Retriever.similar ranks by), read from the served index's ``paper_vectors.npz``."""
    import numpy as np

    with np.load(home / "indexes" / "default" / "paper_vectors.npz") as z:
        ids, vectors = list(z["ids"]), z["vectors"].astype(np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cos = vectors @ vectors[ids.index(paper_id)]
    order = [ids[i] for i in np.argsort(-cos, kind="stable") if ids[i] != paper_id]
    return order[:k]


def card_ids(page) -> list[str]:
    return [b.get_attribute("data-paper")
            for b in page.query_selector_all("#pc-sources article.pc-card button.pc-more-like")]


def test_more_like_this_asks_for_the_papers_neighbours_and_the_map_marks_them(watched,
                                                                             seed_server):
    page = watched.page
    page.goto(seed_server.url)
    watched.ask(VRP_QUESTION)
    assert len(card_ids(page)) == page.locator("#pc-sources article.pc-card").count() >= 3
    target = card_ids(page)[0]
    title = " ".join(page.inner_text("#card-1 .pc-title").split())
    button = page.locator("#card-1 button.pc-more-like")
    assert button.inner_text() == "More like this"
    button.click()
    asked = f"Papers similar to “{title}”"
    page.wait_for_function(
        "(q) => { const m = [...document.querySelectorAll('#pc-chat .message-content')];"
        " return m.length === 4 && m[2].innerText.trim() === q &&"
        " m[3].innerText.includes('The papers closest to'); }", arg=asked,
        timeout=ANSWER_TIMEOUT)
    page.wait_for_function("() => !document.querySelector('.pc-status')"
                           ".textContent.includes('writing')", timeout=ANSWER_TIMEOUT)
    shown = card_ids(page)
    assert target not in shown
    assert shown == seed_neighbours(seed_server.home, target, len(shown))
    assert "papers similar to it" in plan_texts(page)
    assert plan_texts(page)[0] == title  # which papers: the card's, not a reading of words

    # the map marks the neighbours, numbered as the cards
    open_map(page)
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g && g.data.some(t => t.meta === 'pc-highlight'); }",
                           timeout=60_000)
    marked = [t for t in map_traces(page) if t[0] == "pc-highlight"][0]
    assert list(marked[1]) == shown and marked[2] == [f"[{n}]" for n in
                                                      range(1, len(shown) + 1)]
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


def test_a_cite_answer_shows_bibtex_with_a_copy_button_that_copies_the_entries(watched,
                                                                              seed_server):
    import bibtexparser

    from index.sources import load_papers
    from rag.conference.export import bibtex

    watched.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = watched.page
    page.goto(seed_server.url)
    watched.ask(VRP_QUESTION)
    ids = card_ids(page)[:2]
    page.fill("#pc-question textarea", "Give me the BibTeX of [1] and [2]")
    page.press("#pc-question textarea", "Enter")
    code = page.locator(f"{LAST_BUBBLE} >> .code_wrap pre code")
    code.wait_for(timeout=ANSWER_TIMEOUT)
    # the code block shows while the answer streams; the plan line comes with its end
    page.wait_for_function(
        "() => { const s = document.querySelector('.pc-status');"
        " return s && !s.textContent.includes('writing'); }", timeout=ANSWER_TIMEOUT)
    assert "as BibTeX" in plan_texts(page)
    seed = {p.id: p for p in load_papers(ROOT / "data" / "seed_papers.jsonl").papers}
    want = bibtex([seed[i] for i in ids]).strip()
    assert code.inner_text().strip() == want  # shown as it is: not escaped, not folded

    page.locator(f"{LAST_BUBBLE} >> .copy_code_button").click()
    page.wait_for_function("() => navigator.clipboard.readText().then(t => t.length > 0)",
                           timeout=10_000)
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == want
    lib = bibtexparser.parse_string(copied)
    assert len(lib.entries) == 2 and not lib.failed_blocks and not lib.comments
    assert [e["url"] for e in lib.entries] == [f"https://openreview.net/forum?id={i}"
                                               for i in ids]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "paperchat-bibtex.png"), full_page=True)
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


# --- the Map tab ---------------------------------------------------------------------------------
MAP_GD = "#pc-map .js-plotly-plot"
HIST_GD = "#pc-hist .js-plotly-plot"
#: The map's traces in the page, as (role, ids, texts): role is the trace's meta
#: (rag.conference.mapfigure: pc-<color>-<rank>, pc-dimmed, pc-highlight).
MAP_TRACES = """(sel) => { const g = document.querySelector(sel);
  return g && g.data ?
    g.data.map(t => [t.meta || '', t.customdata || [], t.text || []]) : null; }"""


def seed_titles() -> dict[str, str]:
    import json

    return {r["id"]: r["title"] for r in (json.loads(line) for line in
            (ROOT / "data" / "seed_papers.jsonl").open(encoding="utf-8") if line.strip())}


def open_map(page) -> None:
    page.get_by_role("tab", name="Map").click()
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g && g.data && g.data.length && g._fullLayout; }",
                           timeout=ANSWER_TIMEOUT)


def map_traces(page) -> list:
    return page.evaluate(MAP_TRACES, MAP_GD)


def test_map_tab_draws_every_paper_marks_the_answer_hovers_and_asks_on_click(watched,
                                                                             seed_server):
    page = watched.page
    page.goto(seed_server.url)
    titles = seed_titles()

    # the map: every seed paper once, coloured by primary area; nothing from the network
    open_map(page)
    traces = map_traces(page)
    ids = [pid for role, cd, _ in traces if role.startswith("pc-primary_area") for pid in cd]
    assert sorted(ids) == sorted(titles)
    assert f"{len(titles)} papers" in page.inner_text("#pc-map-status")
    assert page.evaluate("typeof window.Plotly === 'object' && Plotly.version")  # Gradio's own
    hist_title = page.evaluate(f"document.querySelector('{HIST_GD}').layout.title.text")
    assert hist_title == "No paper in this list has reviewer ratings"  # the seed list has none
    assert "Every paper in this list is accepted" in page.inner_text("#pc-areas")

    # hover: a point's label shows its title. Plotly.Fx.hover with {curveNumber, pointNumber}
    # draws nothing for WebGL (scattergl) traces; with the point's data coordinates it does
    first_id = traces[0][1][0]
    page.evaluate("(sel) => { const g = document.querySelector(sel); const t = g._fullData[0];"
                  " Plotly.Fx.hover(g, {xval: t.x[0], yval: t.y[0]}); }", MAP_GD)
    page.wait_for_selector(f"{MAP_GD} .hoverlayer .hovertext", state="attached",
                           timeout=10_000)
    hover = page.evaluate("(sel) => [...document.querySelectorAll(sel + ' .hoverlayer text')]"
                          ".map(t => t.textContent).join(' ')", MAP_GD)
    squeeze = lambda text: "".join(text.split())  # noqa: E731 - the label's lines are tspans
    assert squeeze(titles[first_id])[:40] in squeeze(hover) and "poster, unrated" in hover

    # an answer: its cited papers are marked on the map with their [n]
    page.get_by_role("tab", name="Sources").click()
    watched.ask(VRP_QUESTION)
    cited = {page.inner_text(f"#{card.get_attribute('id')} .pc-n"):
             page.inner_text(f"#{card.get_attribute('id')} .pc-title")
             for card in page.query_selector_all("#pc-sources article.pc-cited")}
    assert cited, page.inner_text("#pc-sources")
    by_title = {" ".join(t.split()): pid for pid, t in titles.items()}
    want = sorted((n, by_title[" ".join(t.split())]) for n, t in cited.items())
    open_map(page)
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g && g.data.some(t => t.meta === 'pc-highlight'); }",
                           timeout=60_000)
    marked = [t for t in map_traces(page) if t[0] == "pc-highlight"][0]
    assert sorted(zip(marked[2], marked[1])) == want
    assert f"{len(titles)} papers" in page.inner_text("#pc-map-status")  # not blanked
    assert "Every paper in this list is accepted" in page.inner_text("#pc-areas")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "paperchat-map.png"), full_page=True)

    # a click on a point asks about its paper (a real mouse click at the point's pixel)
    role, cd, _ = next(t for t in map_traces(page) if t[0].startswith("pc-primary_area"))
    target = next(pid for pid in cd if pid not in dict(want).values()) if len(cd) > 1 else cd[0]
    curve = [t[0] for t in map_traces(page)].index(role)
    point = cd.index(target)
    x, y = page.evaluate("""([sel, c, p]) => { const g = document.querySelector(sel);
        const xa = g._fullLayout.xaxis, ya = g._fullLayout.yaxis, r = g.getBoundingClientRect();
        const t = g._fullData[c];
        return [r.left + xa._offset + xa.l2p(t.x[p]), r.top + ya._offset + ya.l2p(t.y[p])]; }""",
                         [MAP_GD, curve, point])
    page.mouse.move(x, y)
    page.wait_for_timeout(300)
    page.mouse.click(x, y)
    asked = f"Tell me about \u201c{' '.join(titles[target].split())}\u201d"
    page.wait_for_function("(q) => document.querySelector('#pc-chat').innerText.includes(q)",
                           arg=asked, timeout=60_000)
    page.wait_for_function(
        "(id) => { const g = document.querySelector('#pc-map .js-plotly-plot');"
        " return g && g.data.some(t => t.meta === 'pc-highlight' && t.customdata.includes(id)); }",
        arg=target, timeout=ANSWER_TIMEOUT)
    assert page.locator("#pc-chat .message-content").count() == 4  # two questions, two answers

    # an answer's [n] clicked while the Map tab is open brings back the Sources and its card
    link = page.locator(LAST_BUBBLE).locator("a.pc-cite").first
    href = link.get_attribute("href")
    link.click()
    page.wait_for_function("() => document.querySelector('#pc-tab-sources-button')"
                           ".getAttribute('aria-selected') === 'true'", timeout=10_000)
    page.locator(href).wait_for(state="visible", timeout=10_000)
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


def test_map_colours_by_decision_and_follows_the_status_filter(watched, seed_server):
    page = watched.page
    page.goto(seed_server.url)
    open_map(page)
    page.get_by_label("decision").check()
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g && g.data.some("
                           "t => (t.meta || '').startsWith('pc-decision')); }", timeout=60_000)
    roles = [t[0] for t in map_traces(page)]
    assert roles == ["pc-decision-2"]  # every seed paper is a poster (rank 2: oral, spotlight)
    page.click("#pc-status input")
    page.get_by_role("option", name="Oral").click()
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g && g.data.some(t => t.meta === 'pc-dimmed'); }",
                           timeout=60_000)
    dimmed = page.evaluate(f"document.querySelector('{MAP_GD}')._fullData"
                           ".filter(t => t.meta === 'pc-dimmed').map(t => t.x.length)")
    assert dimmed == [len(seed_titles())]  # no seed paper is an oral: all dimmed, none hidden
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


def test_the_map_tab_takes_the_windows_width_and_the_sources_tab_gives_it_back(watched,
                                                                              seed_server):
    page = watched.page
    page.goto(seed_server.url)
    page.wait_for_selector("#pc-sources-col #pc-sources")
    width = lambda sel: page.evaluate(  # noqa: E731
        "(s) => document.querySelector(s).getBoundingClientRect().width", sel)
    window = page.evaluate("innerWidth")
    assert width("#pc-sources-col") < 0.5 * window  # beside the chat
    open_map(page)
    assert width("#pc-sources-col") >= window - 40
    page.wait_for_selector(HIST_GD, timeout=60_000)
    assert width(MAP_GD) >= window - 40 and width(HIST_GD) >= window - 40
    tops = page.evaluate("""() => ['#pc-sources-col', '#pc-chat-col'].map(
        (s) => document.querySelector(s).getBoundingClientRect())""")
    assert tops[1]["top"] >= tops[0]["bottom"] - 1  # the chat goes under the map
    page.get_by_role("tab", name="Sources").click()
    page.wait_for_function("() => document.querySelector('#pc-sources-col')"
                           ".getBoundingClientRect().width < innerWidth / 2", timeout=10_000)

    # an answer redraws the map while it is hidden; opened again, it fills its width
    watched.ask(VRP_QUESTION)
    page.get_by_role("tab", name="Map").click()
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g && g.data.some(t => t.meta === 'pc-highlight'); }",
                           timeout=60_000)
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return Math.abs(g._fullLayout.width - g.getBoundingClientRect()"
                           ".width) < 3 && g._fullLayout.width > innerWidth - 40; }",
                           timeout=10_000)
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


#: The boxes of the map's visible annotations (region labels and [n] marks), on screen.
VISIBLE_LABELS = """(sel) => { const g = document.querySelector(sel);
  const names = (g._fullLayout.annotations || []).map((a) => String(a.name || ''));
  return [...g.querySelectorAll('g.annotation')].filter((n) => n.style.display !== 'none')
    .map((n) => { const r = (n.querySelector('.annotation-text-g') || n).getBoundingClientRect();
                  return {name: names[Number(n.getAttribute('data-index'))], left: r.left,
                          right: r.right, top: r.top, bottom: r.bottom,
                          placed: n.getAttribute('data-pc-placed')}; })
    .filter((b) => b.right > b.left); }"""


def overlaps(boxes: list[dict]) -> list[tuple[str, str]]:
    return [(a["name"], b["name"]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"]
            and b["top"] < a["bottom"]]


@pytest.fixture(scope="module")
def crowded_server(tmp_path_factory):
    """The seed list indexed as ``crowded``, its map redrawn so that all but three papers sit
    in one small cluster (the answers' [n] marks pile up there, as a similar answer's
    neighbours do on a real map) and given 40 region labels around its papers (far more than
    fit) and one for the largest region away from them, then served."""
    import numpy as np

    from index.layout import load_layout, save_layout
    from index.layout_labels import Label

    home = tmp_path_factory.mktemp("crowded")
    subprocess.run(paperchat_cmd() + ["index", str(ROOT / "data" / "seed_papers.jsonl"),
                                      "--name", "crowded", "--quiet"], cwd=ROOT,
                   env=run_env(home), check=True, timeout=START_TIMEOUT, capture_output=True)
    index_dir = home / "indexes" / "crowded"
    layout = load_layout(index_dir)
    rng = np.random.default_rng(0)
    xy = rng.normal(0, 0.25, (len(layout.ids), 2)).astype(np.float32)
    xy[:3] = [[-10, -10], [10, 10], [10, -10]]  # the map's extent
    layout.xy = xy
    words = ["diffusion", "graph neural networks", "reinforcement learning", "safety",
             "jailbreak", "LLM", "vehicle routing", "quantization", "benchmark", "agents"]
    labels = []
    for i in range(40):
        x, y = layout.xy[i % len(layout.ids)] + rng.normal(0, 0.5, 2)
        text = " · ".join(words[(i + j) % len(words)] for j in range(1 + i % 3))
        labels.append(Label(text, float(x), float(y), int(rng.integers(5, 400))))
    # the largest region, away from the cluster's marks: its label must stay on screen
    labels.insert(0, Label("the largest region", 5.0, 5.0, 1000))
    layout.labels = labels
    save_layout(index_dir, layout)
    server = Server(home, "--index", "crowded").wait()
    yield server
    server.stop()


def test_region_labels_never_overlap_each_other_nor_the_answers_marks(watched, crowded_server):
    page = watched.page
    page.goto(crowded_server.url)
    watched.ask(VRP_QUESTION)
    page.locator("#card-1 button.pc-more-like").click()  # neighbours: marks in the cluster
    page.wait_for_function(
        "() => { const m = [...document.querySelectorAll('#pc-chat .message-content')];"
        " return m.length === 4 && m[3].innerText.includes('The papers closest to'); }",
        timeout=ANSWER_TIMEOUT)
    page.wait_for_function("() => !document.querySelector('.pc-status')"
                           ".textContent.includes('writing')", timeout=ANSWER_TIMEOUT)
    n_marked = len(card_ids(page))
    open_map(page)
    page.wait_for_function(f"() => {{ const g = document.querySelector('{MAP_GD}');"
                           " return g.data.some(t => t.meta === 'pc-highlight') &&"
                           " g.__pcLabels; }", timeout=60_000)
    page.wait_for_timeout(300)
    boxes = page.evaluate(VISIBLE_LABELS, MAP_GD)
    regions = [b for b in boxes if b["name"].startswith("pc-region:")]
    marks = [b for b in boxes if b["name"] == "pc-highlight"]
    assert len(marks) == n_marked >= 5 and len(regions) >= 8, boxes  # no mark is hidden
    assert overlaps(boxes) == []
    stats = page.evaluate(f"document.querySelector('{MAP_GD}').__pcLabels")
    assert stats["hidden"] > 0 and stats["shown"] == len(regions)  # crowded: some give way
    assert stats["marks"] == n_marked and stats["marks_moved"] > 0  # the pile was spread
    # a moved mark's arrow still ends at its paper's point
    ends = page.evaluate("""(sel) => { const g = document.querySelector(sel), fl = g._fullLayout;
        return [...g.querySelectorAll('g.annotation')].filter((n) =>
            fl.annotations[+n.getAttribute('data-index')].name === 'pc-highlight')
          .map((n) => { const a = fl.annotations[+n.getAttribute('data-index')];
            const d = n.querySelector('.annotation-arrow-g path').getAttribute('d');
            const end = d.split('L').pop().split(',').map(Number);
            return [end[0] - (fl.xaxis._offset + fl.xaxis.l2p(a.x)),
                    end[1] - (fl.yaxis._offset + fl.yaxis.l2p(a.y))]; }); }""", MAP_GD)
    assert ends and all(abs(dx) < 1.5 and abs(dy) < 1.5 for dx, dy in ends), ends
    biggest = max(range(41), key=lambda i: (int(page.evaluate(
        f"document.querySelector('{MAP_GD}')._fullLayout.annotations[{i}].name")
        .split(":")[1]), -i))
    placed = page.evaluate(f"document.querySelector('{MAP_GD}')"
                           f".querySelector('g.annotation[data-index=\"{biggest}\"]')"
                           ".getAttribute('data-pc-placed')")
    assert placed in ("kept", "moved")  # the largest region's label is never the one dropped
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "paperchat-map-labels.png"), full_page=True)

    # zoomed in (fewer labels on screen, more room) and in a narrower window: placed again
    page.evaluate("""(sel) => { const g = document.querySelector(sel);
        const xa = g._fullLayout.xaxis.range, ya = g._fullLayout.yaxis.range;
        const cx = (xa[0] + xa[1]) / 2, cy = (ya[0] + ya[1]) / 2;
        const dx = (xa[1] - xa[0]) / 3, dy = (ya[1] - ya[0]) / 3;
        return Plotly.relayout(g, {'xaxis.range': [cx - dx, cx + dx],
                                   'yaxis.range': [cy - dy, cy + dy]}); }""", MAP_GD)
    page.wait_for_timeout(400)
    assert overlaps(page.evaluate(VISIBLE_LABELS, MAP_GD)) == []
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_timeout(800)
    narrow = page.evaluate(VISIBLE_LABELS, MAP_GD)
    assert narrow and overlaps(narrow) == []
    assert watched.external == [] and watched.dialogs == [] and watched.errors == []


# --- the Trends tab: a topic's share per year over an index of two lists -----------------------
TREND_GD = "#pc-trend .js-plotly-plot"
TREND_META = """(sel) => { const g = document.querySelector(sel);
  return g && g.data && g.data.length && g.layout && g.layout.meta ? g.layout.meta : null; }"""


@pytest.fixture(scope="module")
def years_server(tmp_path_factory):
    """The seed list with seven papers made ICLR 2018 ones (tests/test_trends.py), indexed as
    ``years`` with the real embedder and served; returns ``(server, index dir)``."""
    import json

    from tests.test_trends import two_year_records

    home = tmp_path_factory.mktemp("years")
    path = home / "two_years.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in two_year_records()), encoding="utf-8")
    subprocess.run(paperchat_cmd() + ["index", str(path), "--name", "years", "--quiet"],
                   cwd=ROOT, env=run_env(home), check=True, timeout=START_TIMEOUT,
                   capture_output=True)
    server = Server(home, "--index", "years").wait()
    yield server, home / "indexes" / "years"
    server.stop()


def test_trends_tab_charts_a_count_per_year_and_a_topic_against_the_catalog(watched,
                                                                           years_server):
    from index.catalog import Catalog
    from rag.conference.facets import phrase_pattern
    from rag.text import normalise
    from rag.types import status_tier

    server, index_dir = years_server
    catalog = Catalog(index_dir / "papers.sqlite")
    totals = catalog.year_totals()
    papers = [p for p, _ in catalog.papers()]
    orals = {y: sum(1 for p in papers if p.year == y and status_tier(p.status) == "oral")
             for y in totals}
    assert len(totals) == 2 and all(orals.values())

    page = watched.page
    page.goto(server.url)
    header = page.inner_text("#pc-header")
    assert all(f"{y}: {n:,}" in header for y, n in totals.items()), header

    # an answer per year opens the Trends tab on its own numbers (which hides the Sources
    # tab's cards: waited for as written, not as seen)
    page.fill("#pc-question textarea", "how many orals in 2018 vs 2026?")
    page.press("#pc-question textarea", "Enter")
    page.wait_for_selector("#card-1", state="attached", timeout=ANSWER_TIMEOUT)
    page.wait_for_function(
        "() => { const s = document.querySelector('.pc-status');"
        " return s && !s.textContent.includes('writing'); }", timeout=ANSWER_TIMEOUT)
    page.wait_for_function(f"() => ({TREND_META})('{TREND_GD}')", timeout=ANSWER_TIMEOUT)
    meta = page.evaluate(TREND_META, TREND_GD)
    assert meta["years"] == sorted(totals)
    assert meta["total"] == [totals[y] for y in sorted(totals)]
    assert meta["n"] == [orals[y] for y in sorted(totals)]
    page.wait_for_function("() => { const t = [...document.querySelectorAll('[role=tab]')]"
                           ".find(b => b.textContent.trim() === 'Trends');"
                           " return t && t.getAttribute('aria-selected') === 'true'; }",
                           timeout=30_000)  # the tab opens with the chart's update
    table = page.inner_text("#pc-trend-numbers")
    assert all(str(totals[y]) in table for y in totals), table
    # the answer's own per-year table is a table in the chat, not "| year | ..." as text
    rows = page.evaluate("() => [...document.querySelectorAll('#pc-chat table tr')]"
                         ".map(r => [...r.querySelectorAll('th, td')].map(c => c.textContent"
                         ".trim()))")
    by_year = {r[0]: r for r in rows if r and r[0].isdigit()}
    assert sorted(by_year) == [str(y) for y in sorted(totals)], rows
    assert all(by_year[str(y)][1] == str(orals[y]) and by_year[str(y)][2] == f"{totals[y]:,}"
               for y in totals), rows
    assert "| year |" not in page.inner_text("#pc-chat")

    # a topic typed in: its share per year, out of the same per-year totals
    page.fill("#pc-trend-topic textarea, #pc-trend-topic input", "reinforcement learning")
    page.click("#pc-trend-show")
    page.wait_for_function(f"() => {{ const m = ({TREND_META})('{TREND_GD}');"
                           " return m && m.topic === 'reinforcement learning'; }",
                           timeout=ANSWER_TIMEOUT)
    meta = page.evaluate(TREND_META, TREND_GD)
    assert meta["total"] == [totals[y] for y in sorted(totals)]
    pattern = phrase_pattern("reinforcement learning")
    for y, n, total in zip(meta["years"], meta["n"], meta["total"]):
        # at least the papers whose title or keywords say it (the rule counts those), at most all
        said = sum(1 for p in papers if p.year == y and pattern.search(
            normalise(p.title) + " " + " ".join(p.keywords)))
        assert said <= n <= total, (y, said, n, total)
    bars = page.evaluate(f"() => document.querySelector('{TREND_GD}').data[0].text")
    assert bars == [f"{n} of {t}" for n, t in zip(meta["n"], meta["total"])]
    assert not watched.errors and not watched.external
