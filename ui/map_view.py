"""What the Map tab shows in the browser besides its figures (:mod:`rag.conference.mapfigure`):
the status line above the map (:func:`map_status_html`), the tab's styles (:data:`MAP_CSS`) and
its scripts, which place the map's labels and ``[n]`` marks so that none overlaps another
(:data:`MAP_LABELS_JS`) and send a click on a point to the app (:data:`MAP_CLICK_JS`).
"""

from __future__ import annotations

from ui.render import esc


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


#: Styles of the Map tab (the area table comes from :meth:`rag.conference.area_table.AreaTable.html`). The
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
table.pc-areas, table.pc-trend-table { border-collapse: collapse; font-size: 0.8rem;
  width: 100%; }
table.pc-trend-table th, table.pc-trend-table td { padding: 2px 6px; text-align: right;
  border-bottom: 1px solid var(--border-color-primary); }
.pc-trend-rule { color: var(--body-text-color-subdued); font-size: 0.8rem; margin: 4px 0; }
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
#:    :func:`ui.map_tab.name_region_labels`), largest region first: a label that would overlap a
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


#: The Map tab: plotly emits ``plotly_click`` on the graph div (its own emitter, not a DOM event)
#: and gr.Plot draws a new div for each new figure, so a MutationObserver gives every map div
#: one handler; a click on a point sends its paper id (``customdata``) as the map status line's
#: ``click`` event data (``evt.paper``), and the app asks about that paper. Also: a click on an
#: answer's ``[n]`` while the Map tab is open brings the Sources tab (and its card) back.
MAP_CLICK_JS = MAP_LABELS_JS + """
window.__pcMapTrigger = (id) => trigger('click', {paper: id});
const attach = () => {
  window.__pcMapQueued = false;
  document.querySelectorAll('#pc-map .js-plotly-plot').forEach((gd) => {
    if (gd.__pcClick || typeof gd.on !== 'function') return;
    gd.__pcClick = true;
    gd.on('plotly_click', (ev) => {
      const pt = ev && ev.points && ev.points[0];
      const id = pt && pt.customdata;
      if (typeof id === 'string' && id) window.__pcMapTrigger(id);
    });
    window.pcWatchLabels(gd);
  });
};
if (!window.__pcMapObserver) {
  window.__pcMapObserver = new MutationObserver(() => {
    if (!window.__pcMapQueued) { window.__pcMapQueued = true; requestAnimationFrame(attach); }
  });
  window.__pcMapObserver.observe(document.body, {childList: true, subtree: true});
  document.addEventListener('click', (e) => {
    if (!e.target.closest || !e.target.closest('#pc-chat a.pc-cite')) return;
    const tab = document.querySelector('#pc-side-tabs [role=tab][aria-controls=pc-tab-sources]')
      || [...document.querySelectorAll('#pc-side-tabs [role=tab]')]
           .find((b) => b.textContent.trim() === 'Sources');
    if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
  }, true);
  // the Map tab opened: its figures were last drawn at another width (or hidden), resize them
  document.addEventListener('click', (e) => {
    if (!e.target.closest || !e.target.closest('#pc-tab-map-button')) return;
    const resize = () => document.querySelectorAll('#pc-tab-map .js-plotly-plot')
      .forEach((gd) => { if (window.Plotly && gd.offsetWidth) Plotly.Plots.resize(gd); });
    requestAnimationFrame(() => requestAnimationFrame(resize));
  });
}
attach();
"""
