"""The Export panel below the chat: downloads of the session's BibTeX (the cited papers, all the
retrieved ones) and of the conversation as Markdown, and the cited papers' BibTeX to copy
(:func:`export_panel`); the files are written after each answer (:class:`ExportHandlers`, part
of :class:`ui.app.ChatApp`).
"""

from __future__ import annotations

import gradio as gr


class ExportHandlers:
    """The Export panel's handler of :class:`ui.app.ChatApp`: the session's files."""

    def write_exports(self, answers, session: str | None) -> dict[str, str]:
        """Write the session's .bib (cited, all retrieved) and .md files; return their paths.

        Files live in ``<files_dir>/<session>/`` (one set per session, overwritten per answer);
        Gradio copies what it serves into its own cache.
        """
        from rag.conference.export import bibtex, cited_papers, conversation_markdown, retrieved_papers

        folder = self.files_dir / (session or "anonymous").replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        cited = bibtex(cited_papers(answers)) or "% no paper cited yet\n"
        paths = {
            "cited": folder / "paperchat-cited.bib",
            "all": folder / "paperchat-retrieved.bib",
            "md": folder / "paperchat-conversation.md",
        }
        paths["cited"].write_text(cited, encoding="utf-8")
        paths["all"].write_text(bibtex(retrieved_papers(answers)) or "% no paper retrieved\n",
                                encoding="utf-8")
        paths["md"].write_text(conversation_markdown(answers, index=self.retriever.name,
                                                     model=self.generator.name), encoding="utf-8")
        return {k: str(v) for k, v in paths.items()} | {"cited_text": cited}


def export_panel() -> tuple:
    """The Export accordion, made in the chat column open now: its three download buttons and the
    cited papers' BibTeX. Returns ``(dl_cited, dl_all, dl_md, bib)``."""
    with gr.Accordion("Export: BibTeX and Markdown", open=False, elem_id="pc-export"):
        with gr.Row():
            dl_cited = gr.DownloadButton("Download .bib (cited)", interactive=False,
                                         size="sm", elem_id="pc-dl-cited")
            dl_all = gr.DownloadButton("Download .bib (all retrieved)",
                                       interactive=False, size="sm",
                                       elem_id="pc-dl-all")
            dl_md = gr.DownloadButton("Conversation (.md)", interactive=False,
                                      size="sm", elem_id="pc-dl-md")
        bib = gr.Textbox(label="BibTeX of the cited papers", lines=6, max_lines=14,
                         interactive=False, buttons=["copy"], elem_id="pc-bib")
    return dl_cited, dl_all, dl_md, bib
