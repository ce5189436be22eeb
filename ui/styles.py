"""The page's style sheets, which :func:`ui.app.launch` gives Gradio: the chat, its answers and
the paper cards (:data:`CSS`), and the plan line, the cards' "More like this" button and the
BibTeX block (:data:`PLAN_CSS`); the Map tab's own are :data:`ui.map_view.MAP_CSS`.
"""

#: Styles of the plan line (:func:`ui.render.plan_line_html`), the cards' "More like this"
#: button and the BibTeX code block (added to :data:`CSS` by the app). ``#pc-plan-events``
#: carries the plan line's clicks and its copy for API clients; the chat shows the line, so it
#: stays hidden.
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
