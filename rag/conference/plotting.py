"""What the conference figures share (:mod:`rag.conference.mapfigure`,
:mod:`rag.conference.histogram`, :mod:`rag.conference.area_table`): text escaped for plotly, a
paper's area and mean rating, hover titles, the base layout and font, and the colour and trace
role of the answer's papers.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from rag.types import Paper

NO_AREA = "(no primary area)"
HIGHLIGHT_COLOR = "#ffd400"
#: Each trace's role is its ``meta`` (plotly.py drops ``uid`` from the JSON it sends; ``meta``
#: stays in the browser's ``gd.data``): the dimmed papers, the answer's papers, and
#: ``pc-<color_by>-<rank>`` for a colour.
DIMMED_ROLE = "pc-dimmed"
HIGHLIGHT_ROLE = "pc-highlight"
#: Hover titles: at most this many lines of this many characters, then "…".
HOVER_WIDTH = 60
HOVER_LINES = 2
FONT = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"


# --- small helpers ---------------------------------------------------------------------------
def esc(text: Any) -> str:
    """Text for plotly's hover, legend and annotation strings, which plotly reads as a small
    HTML subset: ``&``, ``<`` and ``>`` become entities plotly decodes back (it knows ``&amp;``,
    ``&lt;``, ``&gt;`` but not ``&quot;``, so quotes stay as they are: they are harmless in
    text), so ``<script>`` or ``<br>`` in a title shows as text."""
    return html.escape(str(text if text is not None else ""), quote=False)


def area_of(paper: Paper) -> str:
    return paper.primary_area.strip() or NO_AREA


def mean_rating(paper: Paper) -> float | None:
    """The mean reviewer rating as shown everywhere (:attr:`Paper.rating`, 2 decimals)."""
    r = paper.rating
    return None if r is None else float(r["mean"])


def hover_title(title: str, width: int = HOVER_WIDTH, lines: int = HOVER_LINES) -> list[str]:
    """The title as at most ``lines`` lines of at most ``width`` characters, broken at spaces
    where there is one (plain text; the last line ends with "…" when the title was cut).
    ``textwrap`` does the same 10x slower, which shows at 19,630 titles."""
    rest = " ".join(str(title or "").split()) or "(untitled)"
    out: list[str] = []
    while rest and len(out) < lines:
        if len(rest) <= width:
            out.append(rest)
            rest = ""
            break
        cut = rest.rfind(" ", 0, width + 1)
        cut = cut if cut > width // 2 else width
        out.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        out[-1] = out[-1][: width - 1].rstrip() + "…"
    return out


def _paper_list(papers: Mapping[str, Paper] | Iterable[Paper]) -> list[Paper]:
    return list(papers.values()) if isinstance(papers, Mapping) else list(papers)


def _base_layout(height: int) -> dict:
    return dict(template="none", height=height, autosize=True, paper_bgcolor="white",
                plot_bgcolor="white", font=dict(family=FONT, size=12, color="#222"),
                hoverlabel=dict(align="left", namelength=-1, font=dict(family=FONT, size=12)),
                hovermode="closest")
