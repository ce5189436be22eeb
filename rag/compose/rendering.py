"""An Answer's renderings: the ``paperchat ask --json`` object, Markdown and references.

Every place that shows a :class:`rag.types.Answer` takes its rendering from here: the command
line (:mod:`rag.cli.chat`: the JSON object and the reference lines), the conversation export
(:mod:`rag.conference.export`: Markdown) and the chat UI (:mod:`ui.render` lays its HTML out in the blocks
of :func:`answer_layout`; sanitising and cards stay there). A comparison's table comes from
:attr:`Answer.comparison` (its rows, header first) and :attr:`Answer.comparison_ids`, never from
the answer's text. This module imports nothing of the project's but :mod:`rag.types`.
"""

from __future__ import annotations

import re

from rag.types import Answer, AnswerSentence, Paper

#: Shown in a table cell that has no text (a row the paper's abstract has no sentence for).
EMPTY = "—"


def _md_cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("\\", "\\\\").replace("|", "\\|").strip() or EMPTY


def to_markdown(rows: list[list[str]]) -> str:
    """A Markdown table of ``rows`` (header first); ``|`` in cells escaped, newlines folded."""
    lines = ["| " + " | ".join(_md_cell(c) for c in rows[0]) + " |",
             "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def answer_json(ans: Answer, filters=None) -> dict:
    """The ``paperchat ask --json`` object (the contract in ARCHITECTURE.md); ``filters`` the
    :class:`rag.filters.Filters` applied (listed as ``filters_applied`` when the answer lists
    none). Each hit's ``rating`` is None or ``{"mean": float, "n": int, "min": float, "max":
    float}`` (:attr:`rag.types.Paper.rating`); ``comparison`` is None or ``{"columns": [paper
    id], "rows": [[str]]}``; ``trend`` is None or the papers per year of a count per year
    (:meth:`rag.conference.trends.Trend.to_json`); ``dense_coverage`` (the share of papers embedded, in [0, 1]) is
    there only while the index is still being embedded."""
    return {
        "question": ans.question,
        "standalone_question": ans.standalone_question,
        "answer": ans.text,
        "refused": ans.refused,
        "citations": [{"n": c.n, "id": c.paper.id, "title": c.paper.title,
                       "url": c.paper.openreview_url, "supported": c.supported,
                       "support": float(c.support)} for c in ans.citations],
        "hits": [{"id": h.id, "title": h.paper.title, "score": float(h.score),
                  "status": h.paper.status, "primary_area": h.paper.primary_area,
                  "url": h.paper.openreview_url, "evidence": list(h.evidence),
                  "rating": h.paper.rating, "venue": h.paper.venue, "year": h.paper.year}
                 for h in ans.hits],
        "timings_ms": {k: round(float(ans.timings_ms.get(k, 0.0)), 1)
                       for k in ("retrieve", "first_token", "total")},
        "mode": ans.mode,
        "kind": ans.kind,
        "sentences": [{"text": s.text, "kind": s.kind, "citations": list(s.citations),
                       "supported": bool(s.supported), "support": float(s.support)}
                      for s in ans.sentences],
        "unsupported": [{"text": s.text, "citations": list(s.citations),
                         "support": float(s.support)} for s in ans.unsupported],
        "comparison": ({"columns": list(ans.comparison_ids), "rows": ans.comparison}
                       if ans.comparison is not None else None),
        "filters_applied": (list(ans.filters_applied) if ans.filters_applied
                            else filters.as_strings() if filters else []),
        "model": ans.model,
        "plan": dict(ans.plan),
        "trend": dict(ans.trend) if ans.trend is not None else None,
        # only while the index is still being embedded (the contract in ARCHITECTURE.md)
        **({"dense_coverage": round(float(ans.dense_coverage), 4)}
           if ans.dense_coverage is not None else {}),
    }


def answer_references(answer: Answer) -> list[tuple[int, Paper]]:
    """The numbered papers an answer's markers point at: its citations, or (refused or uncited)
    its hits, numbered as in the answer."""
    if answer.citations and not answer.refused:
        return [(c.n, c.paper) for c in answer.citations]
    return [(n, h.paper) for n, h in enumerate(answer.hits, start=1)]


def references(answer: Answer) -> list[str]:
    """The answer's references as the terminal prints them, one line per paper of
    :func:`answer_references`: ``[n] Title. Venue Status. rating 6.0 · 4 reviews, 4–8. URL``
    (empty parts and the rating of an unrated paper left out)."""
    lines = []
    for n, paper in answer_references(answer):
        bits = [paper.title, " ".join(x for x in (paper.venue, paper.status) if x),
                paper.rating_text(), paper.openreview_url]
        lines.append(f"[{n}] " + ". ".join(b.strip() for b in bits if b and b.strip()))
    return lines


def unsupported_sentences(answer: Answer) -> list[AnswerSentence]:
    """What a model wrote that the cited abstracts do not support: :attr:`Answer.unsupported`
    and any written sentence (``claim``) of the body the final check did not support."""
    return list(answer.unsupported) + [s for s in answer.sentences
                                       if s.kind == "claim" and not s.supported]


def answer_layout(answer: Answer) -> list[tuple[str, list[AnswerSentence]]]:
    """The answer body's blocks in order, as ``(kind, sentences)``: one block per sentence,
    except that consecutive ``item`` sentences make one block (a list) and consecutive
    ``claim`` sentences one (a paragraph). ``("table", [])`` marks the comparison's table (when
    :attr:`Answer.comparison` has rows): right after the direct line, or first when there is
    none. Unsupported sentences (:func:`unsupported_sentences`) are not among them."""
    shown = [s for s in answer.sentences if not (s.kind == "claim" and not s.supported)]
    table = bool(answer.comparison)
    blocks: list[tuple[str, list[AnswerSentence]]] = []
    if table and not any(s.kind == "direct" for s in shown):
        blocks.append(("table", []))
    for s in shown:
        if s.kind in ("item", "claim") and blocks and blocks[-1][0] == s.kind:
            blocks[-1][1].append(s)
        else:
            blocks.append((s.kind, [s]))
        if table and s.kind == "direct" and all(kind != "table" for kind, _ in blocks):
            blocks.append(("table", []))
    return blocks


def flat(text: str | None) -> str:
    """Whitespace runs (newlines included) collapsed to one space; None gives ''. A one-line
    Markdown or HTML block stays one block (a blank line would end it)."""
    return " ".join(str(text or "").split())


def _sentence_markdown(s: AnswerSentence) -> str:
    if s.kind == "quote":
        markers = "".join(f"[{n}]" for n in s.citations)
        return f"> “{flat(s.quote)}” {markers}" if s.quote else f"> {flat(s.text)}"
    return f"- {flat(s.text)}" if s.kind == "item" else flat(s.text)


def answer_markdown_text(answer: Answer) -> str:
    """The answer as Markdown, from its sentences by kind (:func:`answer_layout`): the direct
    line, a comparison's table (from :attr:`Answer.comparison`), quotes as ``> “…” [n]`` lines,
    items as ``- `` lines, headings, notes and the model's supported sentences as paragraphs;
    then the sentences a model wrote that no cited abstract supports, under their own heading
    (never in the body). A refusal, or an answer without sentences, is its text."""
    if answer.refused or not answer.sentences:
        return answer.text
    blocks = [to_markdown(answer.comparison) if kind == "table" else
              ("\n" if kind == "item" else " ").join(_sentence_markdown(s) for s in group)
              for kind, group in answer_layout(answer)]
    unsupported = unsupported_sentences(answer)
    if unsupported:
        blocks.append("_Not supported by the cited abstracts:_\n\n" + "\n".join(
            f"- {flat(s.text)} (support {s.support:.2f})" for s in unsupported))
    return "\n\n".join(blocks)
