"""The Sources tab beside the chat: the cards of the last answer's papers (:func:`sources_panel`;
the HTML is :func:`ui.cards.sources_html`) and the turn a card's "More like this" asks
(:class:`SourcesHandlers`, part of :class:`ui.app.ChatApp`).

Every paper card has a "More like this" button: it asks the similar operation for that paper as
a new turn, with an explicit plan (:meth:`SourcesHandlers.similar_turn`), not a reading of words;
the Map tab then marks the neighbours, as it marks any answer's papers.
"""

from __future__ import annotations

import gradio as gr


#: Listens on the Sources panel (its cards are redrawn with each answer) and sends the paper id
#: of a clicked "More like this" button as the ``click`` event data (``evt.paper``).
MORE_LIKE_JS = """
element.addEventListener('click', (e) => {
  const button = e.target.closest('button.pc-more-like[data-paper]');
  if (button) trigger('click', {paper: button.dataset.paper});
});
"""

#: The question a card's "More like this" shows (it runs with an explicit plan, not this text).
SIMILAR_TO = "Papers similar to \u201c{title}\u201d"


class SourcesHandlers:
    """The Sources tab's handler of :class:`ui.app.ChatApp`: the turn a card's "More like this"
    asks."""

    def similar_turn(self, paper_id) -> tuple[str, dict]:
        """The turn a card's "More like this" asks for paper ``paper_id``: the question shown,
        ``Papers similar to “<title>”``, and its plan as JSON (:meth:`rag.understand.plan.Plan.to_json`):
        the similar operation on that paper, given explicitly (``papers="named"``, its id and
        title), so no reading of the words can pick another paper.

        Raises:
            gr.Error: not a paper of the index open now (a stale card or a forged click).
        """
        from rag.understand.plan import Plan

        paper = self._clicked_paper(paper_id, "ask again to get fresh cards")
        title = self._fitted_title(paper, SIMILAR_TO)
        question = SIMILAR_TO.format(title=title)
        plan = Plan(papers="named", op="similar", ids=[paper.id], names=[title], said=question)
        return question, plan.to_json()


def sources_panel(idle_sources: str):
    """The Sources tab, made in the side column's Tabs open now: the cards (``idle_sources``
    until the first answer), whose "More like this" buttons send their paper ids
    (:data:`MORE_LIKE_JS`). Returns its ``gr.HTML``."""
    with gr.Tab("Sources", id="sources", elem_id="pc-tab-sources"):
        # the cards; a card's "More like this" sends its paper id
        sources = gr.HTML(idle_sources, elem_id="pc-sources",
                          js_on_load=MORE_LIKE_JS)
    return sources
