"""HTML and Markdown for the chat UI: paper cards, answers with linked ``[n]`` markers.

Everything that comes from a paper list or a model (titles, statuses, areas, evidence, answer
text, URLs) goes through :func:`html.escape` here, before any markup is added: a title holding
``<script>`` or ``<img src=x onerror=...>`` shows as text. Gradio's own sanitiser (Chatbot
``sanitize_html=True``) is a second line, not the only one; ``gr.HTML`` does not sanitise at all.

Cards get ``id="card-n"``; a marker ``[n]`` in the answer is a link to ``#card-n``, and the CSS
``:target`` rule (:data:`CSS`) outlines that card and highlights its supporting evidence sentence.
"""

from __future__ import annotations

import html
import re
from typing import Sequence
from urllib.parse import quote, urlsplit

from rag import citations as cit
from rag.types import Answer, Citation, Hit, Paper

#: Math the chatbot renders with KaTeX: ``$$...$$`` (display) and ``$...$`` (inline).
LATEX_DELIMITERS = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "$", "right": "$", "display": False},
]

UNSUPPORTED_TITLE = ("Not supported by the cited abstract{s}: the checker found no sentence "
                     "there that backs this claim (support {support:.2f} < {threshold:.2f}).")


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
def card_html(n: int, hit: Hit, citation: Citation | None = None) -> str:
    """One paper card: ``[n]`` title (link, new tab), status, primary area, score, evidence.

    The supporting sentence (the citation's evidence unless that is the paper's title, else the
    best evidence sentence) carries class ``pc-support``, highlighted when the card is the URL's ``:target``.
    """
    from index.text import normalise

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
    return (f'<article class="{classes}" id="card-{n}">'
            f'<div class="pc-head"><span class="pc-n">[{n}]</span> '
            f'<a class="pc-title" href="{safe_url(paper)}" target="_blank" '
            f'rel="noopener noreferrer">{esc(paper.title)}</a> {cited}</div>'
            f'{authors}<div class="pc-meta">{" · ".join(meta)}</div>{evidence}</article>')


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
    """The answer while it streams (not yet checked): markers linked, a cursor at the end."""
    body = link_markers(_text(cit.normalise_markers(text)), hits) if text else \
        f"_Found {len(hits)} papers; writing the answer…_"
    return _searching(standalone, question) + body + (CURSOR if text else "")


#: Ends an answer that is still streaming.
CURSOR = " ▍"


def stopped_markdown(streaming: str) -> str:
    """A streamed answer the user stopped: cursor removed, marked unchecked."""
    return (streaming.removesuffix(CURSOR).rstrip() +
            ' <span class="pc-stopped">(stopped; not checked, not remembered)</span>')


def answer_markdown(answer: Answer, threshold: float = 0.5) -> str:
    """The checked answer for the chatbot: linked markers, unsupported sentences muted with a
    marker and a tooltip, a refusal stated plainly."""
    prefix = _searching(answer.standalone_question, answer.question)
    if answer.refused and not answer.hits:  # the filters left nothing: the text says which
        return prefix + _text(answer.text)
    if answer.refused:
        return prefix + "**No paper in this index answers this.** " + _text(answer.text)
    if not answer.sentences:
        return prefix + link_markers(_text(answer.text), answer.hits)
    if answer.comparison is not None:  # the extractive table precedes the checked synthesis
        prefix += link_markers(_text(comparison_table(answer)), answer.hits) + "\n\n"
    parts = []
    for s in answer.sentences:
        body = link_markers(_text(s.text), answer.hits)
        if s.supported:
            parts.append(body)
        else:
            tip = UNSUPPORTED_TITLE.format(s="s" if len(s.citations) != 1 else "",
                                           support=s.support, threshold=threshold)
            if not s.citations:
                tip = ("No retrieved abstract supports this sentence "
                       f"(support {s.support:.2f} < {threshold:.2f}).")
            parts.append(f'<span class="pc-unsupported" title="{esc(tip)}">'
                         f'<span class="pc-flag" aria-label="unsupported">(?)</span> {body}</span>')
    return prefix + " ".join(parts)


def comparison_table(answer: Answer) -> str:
    """The Markdown table that opens a comparison answer's text (``""`` for other answers)."""
    if answer.comparison is None:
        return ""
    head = answer.text.partition("\n\n")[0]
    return head if head.lstrip().startswith("|") else ""


def _searching(standalone: str, question: str) -> str:
    if standalone and standalone.strip() != question.strip():
        return f'<div class="pc-searching">Searching for: {esc(standalone)}</div>\n\n'
    return ""


def user_markdown(question: str) -> str:
    return _text(question)


def header_html(index: str, n_papers: int, model: str) -> str:
    return (f'<div class="pc-header"><span class="pc-logo">paperchat</span>'
            f'<span class="pc-info">index <b>{esc(index)}</b> · {n_papers:,} papers · '
            f'model <b>{esc(model)}</b> · runs locally</span></div>')


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
.pc-unsupported { color: var(--body-text-color-subdued); opacity: 0.8;
  text-decoration: underline dotted; text-underline-offset: 3px; cursor: help; }
.pc-stopped { color: var(--body-text-color-subdued); font-size: 0.85em; font-style: italic; }
.pc-flag { font-size: 0.8em; font-weight: 700; color: #b45309; }
#pc-sources-col { max-height: 78vh; overflow-y: auto; }
#pc-chat table { font-size: 0.9em; }
#pc-chat td:first-child, #pc-chat th:first-child { min-width: 7em; word-break: normal;
  overflow-wrap: normal; font-weight: 600; }
"""
