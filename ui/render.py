"""HTML and Markdown for the chat UI's messages: answers with linked ``[n]`` markers, the plan
line above them, the header. The Sources panel's cards are :mod:`ui.cards`, the page's style
sheets :mod:`ui.styles`, the Map tab's status line, styles and scripts :mod:`ui.map_view`.

Everything that comes from a paper list or a model (titles, statuses, areas, evidence, answer
text, URLs) goes through :func:`html.escape` (:func:`esc`, here and in those modules), before any
markup is added: a title holding ``<script>`` or ``<img src=x onerror=...>`` shows as text.
Gradio's own sanitiser (Chatbot ``sanitize_html=True``) is a second line, not the only one;
``gr.HTML`` does not sanitise at all.

A marker ``[n]`` in an answer is a link to its paper's card, ``#card-n`` (:func:`link_markers`,
:func:`ui.cards.card_html`).

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

from rag.compose import citations as cit
from rag.compose.rendering import answer_layout, flat, to_markdown, unsupported_sentences
from rag.types import Answer, AnswerSentence, Hit
from rag.understand.plan import Plan


#: Math the chatbot renders with KaTeX: ``$$...$$`` (display) and ``$...$`` (inline).
LATEX_DELIMITERS = [
    {"left": "$$", "right": "$$", "display": True},
    {"left": "$", "right": "$", "display": False},
]


def esc(text) -> str:
    """HTML-escaped text, quotes included (safe in element content and attribute values)."""
    return html.escape(str(text if text is not None else ""), quote=True)


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
            run: list[str] = []
            for s in group:
                if s.kind == "note" and is_markdown_table(s.text):
                    # a count per year's or per decision's table: Markdown of its own block
                    # (flattened into a paragraph it showed as raw "| year | ..." text)
                    if run:
                        blocks.append(" ".join(run))
                        run = []
                    blocks.append(link_markers(_text(s.text.strip()), hits))
                else:
                    run.append(html_of(s))
            if run:
                blocks.append(" ".join(run))
    return blocks


def is_markdown_table(text: str) -> bool:
    """True when ``text`` is a Markdown table: two or more lines, each a row ``| ... |``, the
    second a delimiter row (``|---|---:|``)."""
    lines = text.strip().splitlines()
    return len(lines) >= 2 and all(ln.strip().startswith("|") and ln.strip().endswith("|")
                                   for ln in lines) and \
        bool(re.fullmatch(r"\|(?:\s*:?-{3,}:?\s*\|)+", lines[1].strip()))


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


def header_html(index: str, n_papers: int, model: str, auto_mode: str = "",
                years: dict[int, int] | None = None) -> str:
    """The header line: index, paper count (per year, ``years``, when the index holds several),
    model and (``auto_mode``) the answer mode ``auto`` resolves to for this model."""
    mode = (f' · auto answers: <b>{esc(auto_mode)}</b>' if auto_mode else "")
    per_year = (" (" + ", ".join(f"{int(y)}: {int(n):,}" for y, n in years.items()) + ")"
                if years and len(years) > 1 else "")
    return (f'<div class="pc-header"><span class="pc-logo">paperchat</span>'
            f'<span class="pc-info">index <b>{esc(index)}</b> · {n_papers:,} papers{per_year} · '
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
