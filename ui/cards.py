"""The Sources panel's HTML: one card per paper found (:func:`card_html`) and the panel around
them (:func:`sources_html`), everything from the paper list escaped (:func:`ui.render.esc`).
Cards get ``id="card-n"``; a marker ``[n]`` in the answer is a link to ``#card-n``, and the CSS
``:target`` rule (:data:`ui.styles.CSS`) outlines that card and highlights its supporting
evidence sentence. Each card has a "More like this" button (``data-paper``: the paper id;
:mod:`ui.sources_tab` asks the similar operation for it).
"""

from __future__ import annotations

from typing import Sequence
from urllib.parse import quote, urlsplit

from rag.compose.rendering import flat
from rag.types import Answer, Citation, Hit, Paper
from ui.render import esc


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


def card_html(n: int, hit: Hit, citation: Citation | None = None, *, more: bool = True) -> str:
    """One paper card: ``[n]`` title (link, new tab), status, venue (``ICLR 2018``), primary
    area, reviewer rating
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
    venue = (paper.venue or "").strip() or (str(paper.year) if paper.year else "")
    if venue:
        meta.append(f'<span class="pc-venue">{esc(venue)}</span>')
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
