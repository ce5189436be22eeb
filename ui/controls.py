"""The controls every tab reads, and the checks of what a client sends: the Status, Primary
area and Answer mode dropdowns' choices (:data:`STATUS_CHOICES`, :func:`area_choices`,
:func:`mode_choices`), the :class:`rag.filters.Filters` the first two make (:func:`filters_for`),
a request's ``drop_filters`` (:func:`_filter_list`), and the ``gr.Error`` a handler raises, its
message escaped (:func:`_gr_error`).
"""

from __future__ import annotations

import html
import logging
from typing import TYPE_CHECKING

import gradio as gr

from rag.chat.answer import MODES

if TYPE_CHECKING:
    from rag.backends.seams import Retriever

LOG = logging.getLogger("paperchat.ui")


#: Status filter choices (label, value); values are ``Filters`` status words.
STATUS_CHOICES = [("Any status", "any"), ("Accepted", "accepted"), ("Oral", "oral"),
                  ("Spotlight", "spotlight"), ("Poster", "poster"), ("Rejected", "rejected"),
                  ("Withdrawn", "withdrawn")]
ANY = "any"
#: Answer modes the UI and ``/ask`` take (:data:`rag.chat.answer.MODES` plus ``auto``).
ANSWER_MODES = ("auto",) + MODES


def filters_for(status: str | None, area: str | None):
    """:class:`rag.filters.Filters` for the two dropdowns (``"any"``/empty means no filter).

    Raises:
        rag.filters.FilterError: a status that is not one of :data:`STATUS_CHOICES`.
    """
    from rag.filters import FilterError, Filters

    items = []
    status = (status or ANY).strip().lower()
    if status != ANY:
        if status not in {v for _, v in STATUS_CHOICES}:
            raise FilterError(f"unknown status filter {status!r}; use one of "
                              f"{', '.join(v for _, v in STATUS_CHOICES)}")
        items.append(f"status={status}")
    area = (area or ANY).strip()
    if area and area.lower() != ANY:
        items.append(f"primary_area={area}")
    return Filters.parse(items)


def area_choices(retriever: Retriever) -> list[tuple[str, str]]:
    """``("Any primary area", "any")`` then each primary area of the index with its paper count,
    most common first (from the index catalog; counted from ``retriever.papers`` if it has none)."""
    counts: list[tuple[str, int]] = []
    try:
        from index.reader import open_catalog
        from rag.paths import IndexPaths

        index_dir = retriever.settings.index_dir(retriever.name)
        if IndexPaths(index_dir).catalog.exists():
            counts = open_catalog(index_dir).facet_values("primary_area")
    except Exception:  # noqa: BLE001 - a missing catalog only loses the counts' source
        LOG.debug("no catalog for facets", exc_info=True)
    if not counts:
        tally: dict[str, int] = {}
        for p in getattr(retriever, "papers", {}).values():
            if p.primary_area:
                tally[p.primary_area] = tally.get(p.primary_area, 0) + 1
        counts = sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    return [("Any primary area", ANY)] + [(f"{a} ({n})", a) for a, n in counts]


def mode_choices(auto_mode: str) -> list[tuple[str, str]]:
    """Answer-mode dropdown choices (label, value); ``auto`` says what it picks for this model."""
    return [(f"auto ({auto_mode})", "auto")] + [(m, m) for m in ANSWER_MODES[1:]]


#: Most filter strings a request may name in ``drop_filters`` (and chars per string).
MAX_DROP_FILTERS = 20
MAX_FILTER_CHARS = 200


def _filter_list(items) -> list[str]:
    """``drop_filters`` from a client: a list of strings (one string is a list of one).

    Raises:
        FilterError: anything else, more than :data:`MAX_DROP_FILTERS` or a string longer than
            :data:`MAX_FILTER_CHARS`.
    """
    from rag.filters import FilterError

    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise FilterError("drop_filters must be a list of filter strings such as 'status=oral'")
    if len(items) > MAX_DROP_FILTERS or any(len(i) > MAX_FILTER_CHARS for i in items):
        raise FilterError(f"drop_filters takes at most {MAX_DROP_FILTERS} filters of at most "
                          f"{MAX_FILTER_CHARS} characters")
    return [i for i in items if i.strip()]


def _gr_error(exc: Exception, title: str = "paperchat"):
    # gr.Error renders its message as HTML: escape it (filter values come from the client)
    return gr.Error(html.escape(str(exc)), title=title, print_exception=False)
