"""HTML and Markdown for the chat UI: paper cards, answers with linked ``[n]`` markers.

Everything that comes from a paper list or a model (titles, statuses, areas, evidence, answer
text, URLs) goes through :func:`html.escape` here, before any markup is added: a title holding
``<script>`` or ``<img src=x onerror=...>`` shows as text. Gradio's own sanitiser (Chatbot
``sanitize_html=True``) is a second line, not the only one; ``gr.HTML`` does not sanitise at all.

Cards get ``id="card-n"``; a marker ``[n]`` in the answer is a link to ``#card-n``, and the CSS
``:target`` rule (:data:`CSS`) outlines that card and highlights its supporting evidence sentence.
Each card has a "More like this" button (``data-paper``: the paper id; :mod:`ui.app` asks the
similar operation for it).

Above each answer, the turn's plan in one line (:func:`plan_line_html`): its parts as chips, the
last answer's removable ones with a ``<button class="pc-part-x" value="<part key>">``. Gradio's
Chatbot sanitiser drops ``data-*`` and ``aria-*`` attributes from messages but keeps ``value``,
``class``, ``title`` and ``role``, so the key rides in ``value`` and the accessible name is
visually hidden text (``.pc-sr``). A cite answer's BibTeX is a fenced code block
(:func:`bibtex_block`): Gradio's Markdown escapes a code block's text itself and gives it a copy
button that copies the block's text, trimmed, which is exactly the entries.
"""

from __future__ import annotations

import html
import re
from typing import Sequence
from urllib.parse import quote, urlsplit

from rag.compose import citations as cit
from rag.understand.plan import Plan
from rag.compose.rendering import answer_layout, flat, to_markdown, unsupported_sentences
from rag.types import Answer, AnswerSentence, Citation, Hit, Paper

#: Math the chatbot renders with KaTeX: ``$$...$$`` (display) and ``$...$`` (inline).
LATEX_DELIMITERS = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "$", "right": "$", "display": False},
]


def esc(text) -> str:
    """HTML-escaped text, quotes included (safe in element content and attribute values)."""
    return html.escape(str(text if text is not None else ""), quote=True)


def safe_url(paper: Paper) -> str:
    """The paper's URL if it is http(s), else its OpenReview forum URL; escaped for an attribute."""
    url = (paper.url or "").strip()
    try:
        ok = urlsplit(url).scheme in ("http", "https") and urlsplit(url).netloc
    except ValueError:
        ok = False
    if not ok:
        url = f"https://openreview.net/forum?id={quote(paper.id, safe='')}"
    return esc(url)


def status_class(status: str) -> str:
    low = status.lower()
    for tier in ("oral", "spotlight", "poster", "reject", "withdraw"):
        if tier in low:
            return f"pc-status-{tier}"
    return "pc-status-other"


# --- sources panel --------------------------------------------------------------------------------
def card_html(n: int, hit: Hit, citation: Citation | None = None, *, more: bool = True) -> str:
    """One paper card: ``[n]`` title (link, new tab), status, primary area, reviewer rating
    (``rating 6.0 · 4 reviews, 4–8``; nothing when unrated), score, evidence, and (``more``) a
    "More like this" button whose ``data-paper`` is the paper id (escaped).

    The supporting sentence (the citation's evidence unless that is the paper's title, else the
    best evidence sentence) carries class ``pc-support``, highlighted when the card is the
    URL's ``:target``.
    """
    from rag.text import normalise

    paper = hit.paper
    cited = citation.evidence if citation and citation.evidence else ""
    if cited and cited.strip() == normalise(paper.title).strip():
        cited = ""  # grounding may match the title itself: the card shows that already
    support = cited or (hit.evidence[0] if hit.evidence else "")
    others = [e for e in hit.evidence[:2] if e and e != support][:1]
    evidence = ""
    if support:
        evidence = f'<p class="pc-evidence"><mark class="pc-support">{esc(support)}</mark>'
        if others:
            evidence += f' <span class="pc-more">{esc(others[0])}</span>'
        evidence += "</p>"
    meta = []
    if paper.status:
        badge = status_class(paper.status)
        meta.append(f'<span class="pc-badge {badge}">{esc(paper.status)}</span>')
    if paper.primary_area:
        meta.append(f'<span class="pc-area">{esc(paper.primary_area)}</span>')
    rating = paper.rating_text()
    if rating:
        tip = "mean reviewer rating (ICLR: 0-10), number of reviews, lowest–highest"
        if paper.mean_confidence is not None:
            tip += f"; mean reviewer confidence {paper.mean_confidence}"
        meta.append(f'<span class="pc-rating" title="{esc(tip)}">{esc(rating)}</span>')
    meta.append(f'<span class="pc-score" title="fused retrieval score (higher is better); '
                f'cosine similarity of the best chunk {hit.dense:.2f}">'
                f'score {hit.score:.3f}</span>')
    cited = ""
    classes = "pc-card"
    if citation is not None:
        classes += " pc-cited" if citation.supported else " pc-cited pc-weak"
        label = "cited" if citation.supported else "cited, weak support"
        cited = (f'<span class="pc-cited-tag" title="support {citation.support:.2f}">'
                 f'{label}</span>')
    authors = ""
    if paper.authors:
        names = ", ".join(paper.authors[:3]) + (" et al." if len(paper.authors) > 3 else "")
        authors = f'<div class="pc-authors">{esc(names)}</div>'
    button = ""
    if more:
        button = (f'<button type="button" class="pc-more-like" data-paper="{esc(paper.id)}" '
                  f'aria-label="More like this: papers similar to {esc(flat(paper.title))}" '
                  f'title="Ask for the papers most similar to this one (a new turn)">'
                  f'More like this</button>')
    return (f'<article class="{classes}" id="card-{n}">'
            f'<div class="pc-head"><span class="pc-n">[{n}]</span> '
            f'<a class="pc-title" href="{safe_url(paper)}" target="_blank" '
            f'rel="noopener noreferrer">{esc(paper.title)}</a> {cited}</div>'
            f'{authors}<div class="pc-meta">{" · ".join(meta)}{button}</div>{evidence}'
            f'</article>')


def sources_html(hits: Sequence[Hit], *, answer: Answer | None = None, refused: bool = False,
                 question: str = "", standalone: str = "", pending: bool = False) -> str:
    """The sources panel: a status line and one card per hit (``[1]`` first)."""
    if not hits:
        note = ("No paper matched these filters." if question else
                "The papers found for your question will appear here, each numbered as the "
                "answer cites it.")
        return (f'<div class="pc-sources"><div class="pc-sources-title">Sources</div>'
                f'<p class="pc-note">{esc(note)}</p></div>')
    by_n = {c.n: c for c in answer.citations} if answer else {}
    head = ['<div class="pc-sources-title">Sources</div>']
    if refused:
        head.append('<p class="pc-refused">None of these papers appears to answer the question; '
                    'the nearest ones are listed.</p>')
    if standalone and standalone != question:
        head.append(f'<p class="pc-searching">Searching for: {esc(standalone)}</p>')
    status = f"{len(hits)} papers found"
    if pending:
        status += " · writing the answer…"
    elif answer is not None and answer.timings_ms:
        t = answer.timings_ms
        status += (f" · retrieval {t.get('retrieve', 0) / 1000:.1f} s"
                   f" · answer {t.get('total', 0) / 1000:.1f} s")
    head.append(f'<p class="pc-status">{esc(status)}</p>')
    cards = "".join(card_html(n, h, by_n.get(n)) for n, h in enumerate(hits, start=1))
    return f'<div class="pc-sources">{"".join(head)}<div class="pc-cards">{cards}</div></div>'


# --- answers ------------------------------------------------------------------------------------
def link_markers(escaped: str, hits: Sequence[Hit]) -> str:
    """Turn ``[n]`` markers (1 <= n <= len(hits)) of already-escaped text into card links."""
    def repl(m: re.Match) -> str:
        n = int(m.group(1))
        if not 1 <= n <= len(hits):
            return m.group(0)
        return (f'<a class="pc-cite" href="#card-{n}" title="{esc(hits[n - 1].paper.title)}">'
                f'[{n}]</a>')
    return cit.MARKER.sub(repl, escaped)


_CITE_LINK = re.compile(r'<a class="pc-cite" href="#card-\d+"( title="[^"]*")?>(\[\d+\])</a>')


def unlink_markers(html_text: str) -> str:
    """``[n]`` card links of rendered answer HTML turned into plain chips (title kept on hover):
    for answers whose papers are no longer the ones in the Sources panel."""
    return _CITE_LINK.sub(lambda m: f'<span class="pc-cite pc-stale"{m.group(1) or ""}>'
                                    f'{m.group(2)}</span>', html_text)


_NO_LINKS = [("://", "&#58;//"), ("www.", "www&#46;"), ("](", "]&#40;")]


def _text(text: str) -> str:
    """Model or user text for the chatbot's Markdown: HTML escaped, Markdown and ``$math$`` kept,
    but no links or images: URLs are not auto-linked and ``[x](url)`` / ``![x](url)`` stay text
    (the only links in an answer are its ``[n]`` markers; a model must not make the browser
    fetch or the user click an address it invented)."""
    text = html.escape(text, quote=False)
    for a, b in _NO_LINKS:
        text = text.replace(a, b)
    return text


def streaming_markdown(text: str, hits: Sequence[Hit], standalone: str = "",
                       question: str = "") -> str:
    """The answer while it streams (not yet checked): Markdown (the first piece is the direct
    line and a comparison's table; ``> `` lines are quotes), markers linked, a cursor at the end
    (on its own line after a table row, where it would be dropped as an extra cell)."""
    if not text:
        return (_searching(standalone, question) +
                f"_Found {len(hits)} papers; writing the answer…_")
    text, entries = _split_bibtex(text)
    body = link_markers(_text(cit.normalise_markers(text)), hits)
    body = _QUOTE_LINE.sub("> ", body)  # escaping made the quotes' ">" text; they are Markdown
    if entries is not None:
        body = body.rstrip() + "\n\n" + bibtex_block(entries) + "\n\n"
    elif body.rstrip().endswith("|"):
        body = body.rstrip() + "\n\n"
    return _searching(standalone, question) + body + CURSOR


#: The fenced BibTeX block :func:`rag.compose.extractive.render` writes (a fence of 3+ backticks, the
#: entries, the same fence); the streamed text holds at most one, at its end.
_BIBTEX_FENCE = re.compile(r"(?ms)^(`{3,})bibtex\n(.*)\n\1[ \t]*$")


def _split_bibtex(text: str) -> tuple[str, str | None]:
    """``text`` without its fenced BibTeX block, and that block's entries (None when there is
    none): the entries are not Markdown and must not be escaped (:func:`bibtex_block`)."""
    m = _BIBTEX_FENCE.search(text)
    if not m:
        return text, None
    return text[:m.start()] + text[m.end():], m.group(2)


def bibtex_block(entries: str) -> str:
    """BibTeX entries as a fenced Markdown code block (language ``bibtex``) for the chatbot.

    The entries go in as they are, unescaped: Gradio's Markdown renderer escapes a code block's
    text itself, and renders it inside ``<pre><code>`` with a copy button that copies the
    block's text trimmed, so the user gets exactly ``entries.strip()``. The fence is one backtick
    longer than the longest run of backticks in the entries (at least 3), so no entry (a title
    holding three backticks) can close it early; ``$math$`` inside code is not rendered."""
    entries = entries.strip("\n")
    longest = max((len(run) for run in re.findall(r"`+", entries)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}bibtex\n{entries}\n{fence}"


_QUOTE_LINE = re.compile(r"(?m)^&gt; ")


#: Ends an answer that is still streaming.
CURSOR = " ▍"


def stopped_markdown(streaming: str) -> str:
    """A streamed answer the user stopped: cursor removed, marked unchecked."""
    return (streaming.removesuffix(CURSOR).rstrip() +
            ' <span class="pc-stopped">(stopped; not checked, not remembered)</span>')


#: The line under an answer naming how it was made, per :attr:`Answer.mode` (``{model}`` is
#: the model's name, escaped).
MODE_LINES = {
    "extractive": "extractive · sentences quoted from the abstracts",
    "constrained": "constrained · the model picked the quotes",
    "generative": ("generative · written by {model}, checked against the abstracts (an "
                   "automatic check of shared words and meaning: it can pass a wrong sentence)"),
}
#: Title of the collapsed list of sentences a model wrote that no cited abstract supports.
UNSUPPORTED_SUMMARY = "Not supported by the cited abstracts ({n})"


def _chips(numbers: Sequence[int], hits: Sequence[Hit]) -> str:
    """``[n]`` link chips for hit numbers (numbers that point at no hit stay plain text)."""
    return " ".join(link_markers(f"[{n}]", hits) for n in numbers)


def _quote_html(s: AnswerSentence, hits: Sequence[Hit]) -> str:
    """A quoted abstract sentence: an HTML ``blockquote`` (Markdown is not applied inside it, so
    the sentence shows exactly as the abstract has it), escaped, then its marker chips."""
    if not s.quote:  # a quote sentence without its quote: show its text as is
        return (f'<blockquote class="pc-quote">{link_markers(_text(flat(s.text)), hits)}'
                f'</blockquote>')
    return (f'<blockquote class="pc-quote"><span class="pc-quote-text">“{esc(flat(s.quote))}”'
            f'</span> {_chips(s.citations, hits)}</blockquote>')


def _item_html(s: AnswerSentence, hits: Sequence[Hit]) -> str:
    """A list line: the paper's title and chip, then its quoted sentence (when it has one)."""
    text = flat(s.text)
    quoted = f": “{flat(s.quote)}”"
    if s.quote and text.endswith(quoted):
        head = text[:-len(quoted)]
        return (f'<li><span class="pc-item-title">{link_markers(_text(head), hits)}</span>: '
                f'<q class="pc-item-quote">{esc(flat(s.quote))}</q></li>')
    return f'<li><span class="pc-item-title">{link_markers(_text(text), hits)}</span></li>'


def _unsupported_html(sentences: Sequence[AnswerSentence], hits: Sequence[Hit],
                      threshold: float) -> str:
    items = []
    for s in sentences:
        tip = (f"support {s.support:.2f} < {threshold:.2f}: no sentence of the "
               + ("cited abstract" if len(s.citations) == 1 else "cited abstracts" if s.citations
                  else "retrieved abstracts") + " backs this")
        text = link_markers(_text(flat(s.text)), hits)
        items.append(f'<li><span class="pc-unsupported-text">{text}</span> '
                     f'<span class="pc-support-score" title="{esc(tip)}">'
                     f'support {s.support:.2f}</span></li>')
    return (f'<details class="pc-unsupported-note"><summary>'
            f'{esc(UNSUPPORTED_SUMMARY.format(n=len(sentences)))}</summary>'
            f'<ul>{"".join(items)}</ul></details>')


def mode_line(answer: Answer) -> str:
    """The subdued line under an answer that names its mode (``""`` for an unknown mode)."""
    template = MODE_LINES.get(answer.mode)
    if not template:
        return ""
    text = esc(template).replace("{model}", f"<b>{esc(answer.model or 'the model')}</b>")
    return f'<div class="pc-mode-line">{text}</div>'


def answer_blocks(answer: Answer) -> list[str]:
    """The answer body's blocks, from its sentences by kind: the direct line (a paragraph), the
    comparison table (from :attr:`Answer.comparison`, right after the direct line), quotes as
    ``blockquote.pc-quote``, items as one list, headings and notes as paragraphs, the model's
    supported sentences as one paragraph, BibTeX entries as a code block (:func:`bibtex_block`).
    Unsupported sentences are not among them. The order and grouping are
    :func:`rag.compose.rendering.answer_layout`'s."""
    hits = answer.hits

    def html_of(s: AnswerSentence) -> str:
        if s.kind == "quote":
            return _quote_html(s, hits)
        if s.kind == "item":
            return _item_html(s, hits)
        if s.kind == "heading":
            return f'<p class="pc-heading">{link_markers(_text(flat(s.text)), hits)}</p>'
        if s.kind == "note":
            return f'<p class="pc-note-line">{link_markers(_text(flat(s.text)), hits)}</p>'
        # claim, direct, metadata: a paragraph of Markdown text, as the stream showed it
        return link_markers(_text(flat(s.text)), hits)

    blocks: list[str] = []
    for kind, group in answer_layout(answer):
        if kind == "bibtex":
            blocks.extend(bibtex_block(s.text) for s in group)
        elif kind == "table":
            blocks.append(link_markers(_text(to_markdown(answer.comparison)), hits))
        elif kind == "item":
            blocks.append(f'<ul class="pc-items">{"".join(html_of(s) for s in group)}</ul>')
        else:
            blocks.append(" ".join(html_of(s) for s in group))
    return blocks


def answer_markdown(answer: Answer, threshold: float = 0.5) -> str:
    """The checked answer for the chatbot, built from its sentences by kind (see
    :func:`answer_blocks`), then the model's unsupported sentences collapsed in a
    ``details.pc-unsupported-note`` (never in the body), then a line naming the answer mode.
    A refusal is stated plainly."""
    prefix = _searching(answer.standalone_question, answer.question)
    if answer.refused and not answer.hits:  # the filters left nothing: the text says which
        return prefix + _text(answer.text)
    if answer.refused:
        return prefix + _text(answer.text)
    blocks = answer_blocks(answer) if answer.sentences else []
    if not blocks:
        blocks = [link_markers(_text(answer.text), answer.hits)] if answer.text.strip() else []
    hidden = unsupported_sentences(answer)
    if hidden:
        blocks.append(_unsupported_html(hidden, answer.hits, threshold))
    line = mode_line(answer)
    if line:
        blocks.append(line)
    return prefix + "\n\n".join(blocks)


def _searching(standalone: str, question: str) -> str:
    if standalone and standalone.strip() != question.strip():
        return f'<div class="pc-searching">Searching for: {esc(standalone)}</div>\n\n'
    return ""


def user_markdown(question: str) -> str:
    return _text(question)


def header_html(index: str, n_papers: int, model: str, auto_mode: str = "") -> str:
    """The header line: index, paper count, model and (``auto_mode``) the answer mode ``auto``
    resolves to for this model."""
    mode = (f' · auto answers: <b>{esc(auto_mode)}</b>' if auto_mode else "")
    return (f'<div class="pc-header"><span class="pc-logo">paperchat</span>'
            f'<span class="pc-info">index <b>{esc(index)}</b> · {n_papers:,} papers · '
            f'model <b>{esc(model)}</b>{mode} · runs locally</span></div>')


def coverage_html(progress) -> str:
    """Below the header line, while the index is still being embedded: ``dense 41% · about 9 min
    left (papers not embedded yet are found by their words)`` (:func:`rag.retrieve.coverage.coverage_line`
    of an :class:`index.dense.DenseProgress`); ``""`` for a whole index (``progress`` None)."""
    from rag.retrieve.coverage import coverage_line

    line = coverage_line(progress)
    return (f'<div class="pc-info pc-coverage" role="status">index still being embedded: '
            f'{esc(line)}</div>' if line else "")


# --- the plan line ---------------------------------------------------------------------------
#: What the plan line says before its parts: a sure reading, and one the answer states as unsure
#: (:attr:`rag.understand.plan.Plan.unsure`).
PLAN_LABEL = "Read as:"
PLAN_LABEL_UNSURE = "Reading this as:"
#: Paper sources whose ``papers`` part can be removed: :meth:`rag.understand.plan.Plan.without` turns them
#: into a new search on the turn's words. (A search stays a search, and removing ``op`` changes
#: nothing, so those parts have no ×.)
REMOVABLE_SOURCES = ("previous", "focus", "positions")


def plan_parts(plan: dict | None, filters_applied: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The parts of an answer's plan line as ``(key, text)``: the plan's own
    (:attr:`Answer.plan` ``["parts"]``, from :meth:`rag.understand.plan.Plan.parts`: ``papers``, one
    ``filter:F`` per filter, ``order``, ``aspect``, ``op``), plus the filters the search used
    that the plan does not hold (``filters_applied``: the Status and Primary area dropdowns'),
    placed after the plan's filters and worded as the plan words its own ("orals only").
    Filters are compared case-insensitively. An answer without a plan gives its filters only."""
    parts = [(str(k), str(t)) for k, t in ((plan or {}).get("parts") or [])]
    said = {k[len("filter:"):].lower() for k, _ in parts if k.startswith("filter:")}
    extra = [f for f in dict.fromkeys(filters_applied or ()) if f.lower() not in said]
    if extra:
        worded = [p for p in Plan(filters=extra).parts() if p[0].startswith("filter:")]
        at = max([i + 1 for i, (k, _) in enumerate(parts)
                  if k == "papers" or k.startswith("filter:")], default=0)
        parts[at:at] = worded
    return parts


def removable(key: str, plan: dict | None) -> bool:
    """Whether removing part ``key`` of ``plan`` asks something else: a filter, the order,
    the aspect and "outside what the papers' list says" (then the turn is searched) always;
    ``papers`` when they were read from the previous answer (:data:`REMOVABLE_SOURCES`)."""
    if key.startswith("filter:") or key in ("order", "aspect", "outside"):
        return True
    return key == "papers" and (plan or {}).get("papers") in REMOVABLE_SOURCES


def plan_line_html(plan: dict | None, filters_applied: Sequence[str] = (), *,
                   active: bool = True) -> str:
    """The one line above an answer that says how its turn was read: :data:`PLAN_LABEL` (or
    :data:`PLAN_LABEL_UNSURE` when ``plan["unsure"]``), then each part of :func:`plan_parts` as
    a chip, separated by " · ". With ``active`` (the last answer), each :func:`removable` part
    has a ``<button class="pc-part-x" value="<key>">×</button>`` (the app asks the question again
    without that part); older answers show their parts without buttons. ``""`` when there is no
    part. Every text and key is escaped (a topic or filter holds the user's words) and kept on
    one line (an HTML block of the chat's Markdown ends at a blank line)."""
    parts = plan_parts(plan, filters_applied)
    if not parts:
        return ""
    unsure = bool((plan or {}).get("unsure"))
    chips = []
    for key, text in parts:
        words = _plain(flat(text))
        button = ""
        if active and removable(key, plan):
            button = (f'<button type="button" class="pc-part-x" value="{esc(key)}" '
                      f'title="Ask again without “{words}”"><span class="pc-sr">Remove '
                      f'“{words}” and ask again</span><span class="pc-x">×</span></button>')
        chips.append(f'<span class="pc-part"><span class="pc-part-text">{words}</span>'
                     f'{button}</span>')
    label = PLAN_LABEL_UNSURE if unsure else PLAN_LABEL
    cls = "pc-plan pc-plan-unsure" if unsure else "pc-plan"
    dot = '<span class="pc-plan-dot"> · </span>'
    return (f'<div class="{cls}" role="group"><span class="pc-plan-label">{label}</span> '
            f'{dot.join(chips)}</div>')


def _plain(text: str) -> str:
    """Text for an HTML block of the chat: escaped, with no address the Markdown renderer could
    turn into a link (as :func:`_text`)."""
    text = esc(text)
    for a, b in _NO_LINKS:
        text = text.replace(a, b)
    return text


def assistant_markdown(answer: Answer, threshold: float = 0.5, *, last: bool = True) -> str:
    """An assistant message of the chat: the plan line (:func:`plan_line_html`, removable parts
    only on the ``last`` answer), then :func:`answer_markdown`. Older answers' ``[n]`` links
    become plain chips (:func:`unlink_markers`): the Sources panel shows the last answer's
    papers."""
    body = answer_markdown(answer, threshold)
    if not last:
        body = unlink_markers(body)
    line = plan_line_html(answer.plan, answer.filters_applied, active=last)
    return f"{line}\n\n{body}" if line else body


# --- the Map view ---------------------------------------------------------------------------------
def map_status_html(n_papers: int = 0, *, state: str = "idle", method: str = "",
                    seconds: float | None = None, error: str = "") -> str:
    """The line above the map. ``state``: ``idle`` (not drawn yet), ``computing`` (the first
    layout of an index: "computing the map (N papers)…", with the seconds so far), ``ready``
    (N papers and the layout method; a click on a point asks about it) or ``error``."""
    if state == "computing":
        took = f" {seconds:.0f} s so far." if seconds else ""
        text = (f"computing the map ({n_papers:,} papers)… the chat keeps working meanwhile; "
                f"this is done once per index.{took}")
        return f'<p class="pc-map-line pc-map-busy" role="status">{esc(text)}</p>'
    if state == "error":
        return (f'<p class="pc-map-line pc-map-error" role="alert">The map could not be drawn: '
                f'{esc(error)}</p>')
    if state == "ready":
        how = f" · layout {esc(method)}" if method else ""
        return (f'<p class="pc-map-line">{n_papers:,} papers{how} · hover a point for its '
                f'title, click it to ask about it; the answer\'s papers are marked [n]</p>')
    return '<p class="pc-map-line">Open this tab to draw the map of the papers.</p>'


#: Styles of the Map tab (the area table comes from :meth:`rag.conference.mapfigure.AreaTable.html`). The
#: last rules: while the Map tab is open the page takes the window's width and the side column
#: the row's whole width, above the chat (``:has`` on the tab button's ``aria-selected``, so no
#: script is needed); the Sources tab brings the two columns back.
MAP_CSS = """
.pc-map-line { color: var(--body-text-color-subdued); font-size: 0.86rem;
  margin: 2px 0 !important; }
.pc-map-busy::before { content: ""; display: inline-block; width: 0.8em; height: 0.8em;
  margin-right: 6px; border-radius: 50%; border: 2px solid var(--color-accent);
  border-right-color: transparent; animation: pc-spin 0.9s linear infinite; vertical-align: -1px; }
@keyframes pc-spin { to { transform: rotate(360deg); } }
.pc-map-error { color: #b42318; }
#pc-map, #pc-hist { min-height: 0; }
#pc-map-color { display: flex; align-items: center; gap: 8px; flex-wrap: wrap; }
#pc-map-color > span, #pc-map-color .block-title { font-size: 0.85rem; margin: 0; }
#pc-map-status { min-height: 0; }
table.pc-areas { border-collapse: collapse; font-size: 0.8rem; width: 100%; }
table.pc-areas th, table.pc-areas td { padding: 2px 6px; text-align: right;
  border-bottom: 1px solid var(--border-color-primary); }
table.pc-areas th:first-child, table.pc-areas td:first-child { text-align: left; }
tr.pc-area-total td { font-weight: 600; }
.pc-area-note { padding: 6px 10px; border-radius: 6px; background: var(--color-accent-soft);
  font-size: 0.85rem; margin: 4px 0 !important; }
.pc-area-caption { color: var(--body-text-color-subdued); font-size: 0.75rem;
  margin: 4px 0 0 !important; }
.gradio-container:has(#pc-tab-map-button[aria-selected="true"]),
.gradio-container:has(#pc-tab-map-button[aria-selected="true"]) .main.app {
  max-width: 100% !important; margin-left: 0 !important; margin-right: 0 !important; }
.gradio-container:has(#pc-tab-map-button[aria-selected="true"]) .main.app {
  padding-left: 12px !important; padding-right: 12px !important; }
#pc-main:has(#pc-tab-map-button[aria-selected="true"]) { flex-wrap: wrap !important; }
#pc-main:has(#pc-tab-map-button[aria-selected="true"]) > #pc-sources-col { order: -1;
  flex: 1 1 100% !important; min-width: 100% !important; max-height: none !important;
  overflow: visible !important; }
#pc-main:has(#pc-tab-map-button[aria-selected="true"]) > #pc-chat-col {
  flex: 1 1 100% !important; min-width: 100% !important; }
"""
#: Places the map's annotations so that none overlaps another: ``window.pcPlaceLabels(gd)``
#: measures their boxes on screen (after every redraw, zoom and pan), then
#:
#: 1. the answer's ``[n]`` marks (annotations named ``pc-highlight``, arrows pointing at their
#:    papers), in ``[n]`` order: a mark whose box would overlap an earlier one moves to the
#:    first free spot on rings around its paper's point (26, 40, 56 and 72 px; up first) and
#:    its arrow is redrawn from the box to the point; a mark with no free spot stays where it
#:    was (a mark is never hidden);
#: 2. the region labels (annotations named ``pc-region:<papers>`` by
#:    :func:`ui.app.name_region_labels`), largest region first: a label that would overlap a
#:    mark or a label already placed moves to the nearest free spot among a few offsets (up,
#:    down, left, right: at most 1.5 label heights or 0.35 label widths, so it stays on its
#:    region), and is hidden when none is free or it would leave the plot area; smaller regions
#:    give way first.
#:
#: Returns (and keeps as ``gd.__pcLabels``) ``{shown, moved, hidden, marks, marks_moved}``.
#: Each region label's ``g.annotation`` gets ``data-pc-placed`` = ``kept``, ``moved`` or
#: ``hidden``. Only the drawn SVG is changed (plotly redraws it from the figure on the next
#: redraw, and the placement runs again), never the figure. ``window.pcWatchLabels(gd)`` runs
#: it once now and after each ``plotly_afterplot`` / ``plotly_relayouting`` (one per frame).
MAP_LABELS_JS = """
window.pcPlaceLabels = (gd) => {
  const fl = gd && gd._fullLayout;
  const out = {shown: 0, moved: 0, hidden: 0, marks: 0, marks_moved: 0};
  if (!fl || !fl._size) return out;
  const nodes = {};
  gd.querySelectorAll('g.annotation').forEach((g) => { nodes[g.getAttribute('data-index')] = g; });
  const textOf = (g) => g.querySelector('.annotation-text-g') || g;
  const box = (g) => textOf(g).getBoundingClientRect();
  const root = gd.getBoundingClientRect(), sz = fl._size;
  const area = {left: root.left + sz.l, top: root.top + sz.t, right: root.left + sz.l + sz.w,
                bottom: root.top + sz.t + sz.h};
  const pad = 2;
  const hits = (a, b) => a.left < b.right + pad && b.left < a.right + pad &&
                         a.top < b.bottom + pad && b.top < a.bottom + pad;
  const inside = (b) => b.left >= area.left && b.right <= area.right && b.top >= area.top &&
                        b.bottom <= area.bottom;
  const shift = (b, dx, dy) => ({left: b.left + dx, right: b.right + dx, top: b.top + dy,
                                 bottom: b.bottom + dy});
  const placed = [], regions = [], marks = [];
  (fl.annotations || []).forEach((a, i) => {
    const g = nodes[a._index !== undefined ? a._index : i];
    if (!g) return;
    const name = String(a.name || '');
    if (name.startsWith('pc-region:')) regions.push({g, i, size: Number(name.slice(10)) || 0});
    else if (name === 'pc-highlight') marks.push({g, a, i});
    else { const r = box(g); if (r.width) placed.push(r); }
  });
  // 1. the [n] marks: spread the ones that pile up, arrows redrawn to their points
  const xa = fl.xaxis, ya = fl.yaxis;
  for (const m of marks) {
    const t = textOf(m.g), path = m.g.querySelector('.annotation-arrow-g path');
    // back to plotly's own drawing first (this runs again without a redraw while panning)
    if (!t.hasAttribute('data-pc-t')) t.setAttribute('data-pc-t', t.getAttribute('transform'));
    t.setAttribute('transform', t.getAttribute('data-pc-t'));
    if (path) {
      if (!path.hasAttribute('data-pc-d')) path.setAttribute('data-pc-d', path.getAttribute('d'));
      path.setAttribute('d', path.getAttribute('data-pc-d'));
    }
    const b0 = box(m.g);
    if (!b0.width) continue;
    out.marks += 1;
    const svg = (m.g.closest('svg') || gd).getBoundingClientRect();
    const px = svg.left + xa._offset + xa.l2p(m.a.x), py = svg.top + ya._offset + ya.l2p(m.a.y);
    const w = b0.width, h = b0.height;
    let best = null;
    if (!placed.some((p) => hits(p, b0))) best = [0, 0];
    for (const r of [26, 40, 56, 72]) {
      for (const deg of [-90, -60, -120, -30, -150, 0, 180, 30, 150, 60, 120, 90]) {
        if (best) break;
        const rad = deg * Math.PI / 180;
        const cx = px + r * Math.cos(rad), cy = py + r * Math.sin(rad);
        const b = {left: cx - w / 2, right: cx + w / 2, top: cy - h / 2, bottom: cy + h / 2};
        if (inside(b) && !placed.some((p) => hits(p, b))) {
          best = [b.left - b0.left, b.top - b0.top];
        }
      }
    }
    if (!best) best = [0, 0];
    const [dx, dy] = best, b = shift(b0, dx, dy);
    placed.push(b);
    if (dx || dy) {
      out.marks_moved += 1;
      t.setAttribute('transform', `translate(${dx.toFixed(1)},${dy.toFixed(1)}) ` +
                     t.getAttribute('data-pc-t'));
      if (path) {  // from the box's edge nearest the point to the point
        const ex = Math.min(Math.max(px, b.left), b.right);
        const ey = Math.min(Math.max(py, b.top), b.bottom);
        path.setAttribute('d', `M${(ex - svg.left).toFixed(2)},${(ey - svg.top).toFixed(2)}` +
                               `L${(px - svg.left).toFixed(2)},${(py - svg.top).toFixed(2)}`);
        path.style.strokeDasharray = 'none';
      }
    }
  }
  // 2. the region labels, largest region first
  regions.sort((a, b) => b.size - a.size || a.i - b.i);
  for (const r of regions) {
    r.g.removeAttribute('transform');
    r.g.style.display = '';
    const b0 = box(r.g);
    if (!b0.width) continue;  // not drawn (its point is off the axes)
    const w = b0.width, h = b0.height;
    const tries = [[0, 0], [0, -0.75 * h], [0, 0.75 * h], [-0.35 * w, 0], [0.35 * w, 0],
                   [0, -1.5 * h], [0, 1.5 * h], [-0.35 * w, -0.75 * h], [0.35 * w, -0.75 * h],
                   [-0.35 * w, 0.75 * h], [0.35 * w, 0.75 * h]];
    let done = false;
    for (const [dx, dy] of tries) {
      const b = shift(b0, dx, dy);
      if (!inside(b) || placed.some((p) => hits(p, b))) continue;
      placed.push(b);
      if (dx || dy) {
        r.g.setAttribute('transform', `translate(${dx.toFixed(1)},${dy.toFixed(1)})`);
        out.moved += 1;
      }
      r.g.setAttribute('data-pc-placed', dx || dy ? 'moved' : 'kept');
      out.shown += 1;
      done = true;
      break;
    }
    if (!done) {
      r.g.style.display = 'none';
      r.g.setAttribute('data-pc-placed', 'hidden');
      out.hidden += 1;
    }
  }
  gd.__pcLabels = out;
  return out;
};
window.pcWatchLabels = (gd) => {
  if (!gd || gd.__pcLabelsWatched || typeof gd.on !== 'function') return;
  gd.__pcLabelsWatched = true;
  const again = () => {
    if (gd.__pcLabelsQueued) return;
    gd.__pcLabelsQueued = true;
    requestAnimationFrame(() => { gd.__pcLabelsQueued = false; window.pcPlaceLabels(gd); });
  };
  gd.on('plotly_afterplot', again);
  gd.on('plotly_relayouting', again);
  again();
};
"""


#: Styles of the plan line (:func:`plan_line_html`), the cards' "More like this" button and the
#: BibTeX code block (added to :data:`CSS` by the app). ``#pc-plan-events`` carries the plan
#: line's clicks and its copy for API clients; the chat shows the line, so it stays hidden.
PLAN_CSS = """
#pc-sources-col { flex-wrap: nowrap !important; }
#pc-plan-events { display: none !important; }
.pc-sr { position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px;
  overflow: hidden; clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }
#pc-chat .pc-plan { display: flex; flex-wrap: wrap; align-items: center; gap: 3px 4px;
  margin: 0 0 0.55em !important; padding-bottom: 5px; font-size: 0.84em;
  border-bottom: 1px dashed var(--border-color-primary); color: var(--body-text-color-subdued); }
#pc-chat .pc-plan-label { font-weight: 600; margin-right: 2px; }
#pc-chat .pc-plan-unsure .pc-plan-label { color: #b45309; }
#pc-chat .pc-plan-unsure { border-bottom-color: #f0b86e; }
#pc-chat .pc-part { display: inline-flex; align-items: center; gap: 1px; padding: 0 3px 0 8px;
  border-radius: 11px; background: var(--color-accent-soft); color: var(--body-text-color);
  border: 1px solid var(--border-color-accent-subdued, var(--border-color-primary));
  line-height: 1.55; }
#pc-chat .pc-part:not(:has(button)) { padding-right: 8px; }
#pc-chat .pc-plan-dot { color: var(--body-text-color-subdued); }
#pc-chat button.pc-part-x { border: 0; background: transparent; cursor: pointer;
  border-radius: 50%; width: 1.45em; height: 1.45em; line-height: 1; font-size: 1.05em;
  padding: 0; margin: 0; color: var(--body-text-color-subdued); }
#pc-chat button.pc-part-x:hover, #pc-chat button.pc-part-x:focus-visible {
  background: var(--color-accent); color: white; }
#pc-chat button.pc-part-x:focus-visible { outline: 2px solid var(--color-accent);
  outline-offset: 1px; }
button.pc-more-like { margin-left: 8px; padding: 0 8px; border-radius: 9px; cursor: pointer;
  font-size: 0.95em; line-height: 1.5; white-space: nowrap; background: transparent;
  color: var(--color-accent); border: 1px solid var(--color-accent); }
button.pc-more-like:hover, button.pc-more-like:focus-visible { background: var(--color-accent);
  color: white; }
#pc-chat .code_wrap pre { max-height: 22em; overflow: auto; font-size: 0.82em; }
"""


CSS = """
.gradio-container { max-width: 1400px !important; }
.pc-header { display: flex; align-items: baseline; gap: 14px; flex-wrap: wrap; padding: 2px 2px 0; }
.pc-logo { font-size: 1.35rem; font-weight: 700; letter-spacing: -0.01em; }
.pc-info { color: var(--body-text-color-subdued); font-size: 0.92rem; }
.pc-sources { display: flex; flex-direction: column; gap: 6px; }
.pc-sources p { margin: 0; }
.pc-sources-title { font-weight: 700; font-size: 1.05rem; position: sticky; top: 0; z-index: 1;
  background: var(--background-fill-primary); padding: 2px 0 4px; }
.pc-note, .pc-status { color: var(--body-text-color-subdued); font-size: 0.88rem; }
.pc-refused { padding: 8px 10px; border-radius: 6px; background: var(--color-accent-soft);
  font-weight: 600; }
.pc-searching { color: var(--body-text-color-subdued); font-size: 0.9em; font-style: italic; }
.pc-cards { display: flex; flex-direction: column; gap: 8px; }
.pc-card { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 9px 12px;
  background: var(--background-fill-primary); scroll-margin-top: 34px;
  transition: box-shadow .2s; }
.pc-card.pc-cited { border-left: 4px solid var(--color-accent); }
.pc-card.pc-weak { border-left-color: var(--border-color-accent-subdued, #c7c7c7); }
.pc-card:target { box-shadow: 0 0 0 2px var(--color-accent); }
.pc-card:target .pc-support { background: #ffe27a; color: #1f1f1f; }
.pc-head { line-height: 1.35; }
.pc-n { font-weight: 700; color: var(--color-accent); margin-right: 2px; }
.pc-title { font-weight: 600; color: var(--body-text-color) !important; text-decoration: none; }
.pc-title:hover { text-decoration: underline; }
.pc-cited-tag { font-size: 0.75rem; padding: 0 6px; border-radius: 9px; white-space: nowrap;
  background: var(--color-accent-soft); color: var(--color-accent); }
.pc-authors { font-size: 0.82rem; color: var(--body-text-color-subdued); margin-top: 2px; }
.pc-meta { font-size: 0.8rem; color: var(--body-text-color-subdued); margin-top: 3px; }
.pc-rating { white-space: nowrap; }
.pc-badge { padding: 0 6px; border-radius: 9px; background: var(--background-fill-secondary);
  border: 1px solid var(--border-color-primary); }
.pc-status-oral { background: #fde7c7; border-color: #f5b65b; color: #6b3d00; }
.pc-status-spotlight { background: #dcecff; border-color: #8ab8f0; color: #0d3b73; }
.pc-evidence { font-size: 0.86rem; margin: 6px 0 0 !important; padding-left: 9px;
  border-left: 3px solid var(--border-color-primary); color: var(--body-text-color); }
.pc-support { background: transparent; color: inherit; border-radius: 3px; padding: 0 1px;
  transition: background .3s; }
.pc-more { color: var(--body-text-color-subdued); }
.pc-cite { text-decoration: none !important; font-weight: 600; white-space: nowrap;
  color: var(--color-accent) !important; }
#pc-chat a.pc-cite { display: inline-block; font-size: 0.78em; line-height: 1.45;
  padding: 0 5px; border-radius: 9px; vertical-align: 0.08em;
  background: var(--color-accent-soft); border: 1px solid var(--border-color-accent-subdued,
  transparent); }
#pc-chat a.pc-cite:hover { background: var(--color-accent); color: white !important; }
#pc-chat blockquote.pc-quote { margin: 0.55em 0 !important; padding: 7px 12px !important;
  border-left: 3px solid var(--color-accent) !important; border-radius: 0 6px 6px 0;
  background: var(--background-fill-secondary); color: var(--body-text-color);
  font-style: normal; quotes: none; }
#pc-chat blockquote.pc-quote::before, #pc-chat blockquote.pc-quote::after { content: none; }
.pc-quote-text { font-family: Charter, "Bitstream Charter", "Sitka Text", Cambria, Georgia,
  "DejaVu Serif", serif; line-height: 1.5; }
#pc-chat ul.pc-items { margin: 0.3em 0 0.5em !important; padding-left: 1.3em !important; }
#pc-chat ul.pc-items li { margin: 0.25em 0; }
.pc-item-title { font-weight: 600; }
q.pc-item-quote { font-family: Charter, "Bitstream Charter", "Sitka Text", Cambria, Georgia,
  "DejaVu Serif", serif; color: var(--body-text-color); }
#pc-chat p.pc-heading { margin: 0.8em 0 0.2em !important; font-weight: 600; font-size: 0.92em;
  color: var(--body-text-color-subdued); }
#pc-chat p.pc-note-line { margin: 0.5em 0 !important; padding: 5px 10px; border-radius: 6px;
  color: var(--body-text-color-subdued); background: var(--background-fill-secondary);
  font-size: 0.93em; }
#pc-chat details.pc-unsupported-note { margin: 0.6em 0 0.2em; font-size: 0.88em;
  color: var(--body-text-color-subdued); border: 1px dashed var(--border-color-primary);
  border-radius: 6px; padding: 3px 10px; }
#pc-chat details.pc-unsupported-note summary { cursor: pointer; color: #b45309; }
#pc-chat details.pc-unsupported-note ul { margin: 0.3em 0 0.2em !important; }
.pc-unsupported-text { font-style: italic; }
.pc-support-score { font-size: 0.85em; white-space: nowrap; cursor: help; opacity: 0.85; }
#pc-chat .pc-mode-line { margin-top: 0.7em; font-size: 0.78em; letter-spacing: 0.01em;
  color: var(--body-text-color-subdued); border-top: 1px solid var(--border-color-primary);
  padding-top: 4px; }
.pc-stopped { color: var(--body-text-color-subdued); font-size: 0.85em; font-style: italic; }
#pc-sources-col { max-height: 78vh; overflow-y: auto; }
#pc-chat table { font-size: 0.9em; }
#pc-chat td:first-child, #pc-chat th:first-child { min-width: 7em; word-break: normal;
  overflow-wrap: normal; font-weight: 600; }
"""
