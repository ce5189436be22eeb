"""``paperchat fetch``: pull a public paper list into the project's JSONL, the only code of
paperchat that uses the network (and only when that command is run).

Sources (:func:`index.fetch_source.parse_source`):

``openreview:<venue id>`` (``openreview:ICLR.cc/2026/Conference``)
    OpenReview API v2 notes through the official ``openreview-py`` client
    (:meth:`openreview.api.OpenReviewClient.get_notes`), paged as its own ``get_all_notes`` pages:
    ``sort=id`` and ``after=<last id>``, :data:`PAGE_SIZE` notes a request. By default the
    accepted papers (``content.venueid=<venue id>``); with ``all_submissions`` every submission
    (``invitation=<venue id>/-/Submission``: also rejected, withdrawn and desk-rejected ones).
    The decision comes from ``venueid`` and ``venue``
    (:func:`index.source_json.paper_from_openreview`: ``ICLR 2026 Oral`` -> ``Accept (Oral)``,
    ``.../Withdrawn_Submission`` -> ``Withdrawn``).
``papercopilot:<conf>/<file>`` (``papercopilot:iclr/iclr2018``)
    One Paper Copilot ``paperlists`` JSON file, ``<base>/<conf>/<file>.json``, read with
    :func:`index.sources.load_papers` (so it carries the lists' reviewer ratings).

Both write the schema of ``shared/data/README.md`` (:func:`paper_row`), one object per line, so
``paperchat index`` reads the file as it is.

Faults:

* Retries: 429 and 5xx are retried with exponential backoff, honouring ``Retry-After``, and a
  dropped connection is retried too: openreview-py's own urllib3 ``Retry`` policy (8 tries,
  backoff factor 1 s, at most 120 s), used as it is for OpenReview and copied for Paper Copilot
  (:data:`index.fetch_http.RETRY_POLICY`). Every request also gets a timeout
  (:data:`index.fetch_http.TIMEOUT`: the client sets none, so a silent server would hang it for
  ever).
* Resume: OpenReview pages are appended to ``<out>.partial`` as they arrive and, after each page
  is on disk (flushed and fsynced), ``<out>.partial.json`` records the cursor: the byte length of
  the partial file, the last note id and the counts. A run with the same source, ``--all`` and
  URL truncates the partial file to that length (dropping a half-written page) and asks for the
  notes ``after`` that id. A Paper Copilot download goes to ``<out>.download`` and is resumed
  with an HTTP ``Range`` request when the server honours it (otherwise it starts again).
  The output file appears, whole, only when the list is complete (renamed into place).
* Offline or unreachable: :class:`rag.errors.FetchError` with one line naming the URL, the cause
  and how many papers are saved for the next run.

This module fetches a list and writes it (:func:`fetch`); what to fetch and the summary of a fetch
are in :mod:`index.fetch_source`, the network client side (retries, timeouts, the error of a
failed request) in :mod:`index.fetch_http`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

from index.fetch_http import _http_error, _saved, _session, _ToStderr, openreview_client
from index.fetch_source import FetchResult, Source
from rag.errors import FetchError
from rag.types import Paper, status_tier


#: Where OpenReview's forum and pdf links point (a note's ``pdf`` is a path on it).
OPENREVIEW_SITE = "https://openreview.net"
#: Notes per OpenReview request: the API's largest ``limit`` (openreview-py's ``client.limit``).
PAGE_SIZE = 1000
#: Download chunk of a Paper Copilot file, bytes.
_CHUNK = 1 << 16


# --- records ----------------------------------------------------------------------------------
def paper_row(paper: Paper, **extra: Any) -> dict[str, Any]:
    """``paper`` as one line of the project's JSONL schema (``shared/data/README.md``): ``id``,
    ``title``, ``abstract``, ``authors`` (None when unknown, as the ICLR 2026 lists), ``keywords``,
    ``primary_area``, ``status``, ``url``, ``tldr`` (None when empty), ``venue``, ``year``,
    ``ratings`` and ``confidences`` (only when the source has them), then ``extra`` fields with
    a value (e.g. ``pdf``, ``number``, ``venueid``)."""
    row: dict[str, Any] = {
        "id": paper.id, "title": paper.title, "abstract": paper.abstract,
        "authors": list(paper.authors) or None, "keywords": list(paper.keywords),
        "primary_area": paper.primary_area, "status": paper.status, "url": paper.openreview_url,
        "tldr": paper.tldr or None, "venue": paper.venue or None, "year": paper.year,
    }
    if paper.ratings:
        row["ratings"] = list(paper.ratings)
    if paper.confidences:
        row["confidences"] = list(paper.confidences)
    row.update({k: v for k, v in extra.items() if v not in (None, "", [])})
    return row


def note_row(note: dict[str, Any]) -> dict[str, Any]:
    """One OpenReview v2 note (the API's JSON) as a :func:`paper_row`, plus ``pdf`` (made an
    absolute ``https://openreview.net/pdf/...`` URL, like the forum ``url``), ``number`` and
    ``venueid``.

    Raises:
        ValueError: the note cannot be a paper (no ``content``, no title or abstract); the
            message says which field (:func:`index.source_json.paper_from_openreview`).
    """
    from index.source_json import paper_from_openreview

    paper = paper_from_openreview(note)
    content = note.get("content") or {}

    def value(name: str) -> Any:
        v = content.get(name)
        return v.get("value") if isinstance(v, dict) else v

    pdf = value("pdf")
    if isinstance(pdf, str) and pdf.startswith("/"):
        pdf = OPENREVIEW_SITE + pdf
    return paper_row(paper, pdf=pdf if isinstance(pdf, str) else None,
                     number=note.get("number"), venueid=value("venueid"))


# --- partial files ----------------------------------------------------------------------------
def partial_paths(out: Path) -> tuple[Path, Path, Path]:
    """``(<out>.partial, <out>.partial.json, <out>.download)``: the pages written so far, the
    cursor, and a Paper Copilot download in progress."""
    return (out.with_name(out.name + ".partial"), out.with_name(out.name + ".partial.json"),
            out.with_name(out.name + ".download"))


def _read_state(path: Path, source: Source) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and state.get("source") == source.key else None


def _write_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    os.replace(tmp, path)


# --- OpenReview -------------------------------------------------------------------------------
def fetch_openreview(source: Source, out: Path, *, progress: bool = True,
                     page_size: int = PAGE_SIZE, retries: int | None = None,
                     log: Callable[[str], None] = lambda m: None) -> FetchResult:
    """Fetch ``source``'s notes into ``out`` (JSONL), resuming an interrupted run's
    ``<out>.partial`` (see the module docstring). ``page_size``: notes per request, 1..1000;
    ``retries``: as :func:`index.fetch_http.openreview_client`.

    Raises:
        FetchError: the network or the API failed after the client's retries, or the venue id
            selects no note (the message suggests the spelling and ``--all``).
    """
    import requests

    t0 = time.perf_counter()
    partial, state_path, _ = partial_paths(out)
    state = _read_state(state_path, source) if partial.is_file() else None
    if state and partial.stat().st_size < state["bytes"]:
        log(f"paperchat: {partial} is shorter than its cursor says; starting again")
        state = None
    if state:
        after, written, total = state["after"], state["papers"], state["total"]
        skipped, n_skipped = list(state.get("skipped", [])), int(state.get("n_skipped", 0))
        statuses = dict(state.get("statuses", {}))
        with partial.open("r+b") as fh:
            fh.truncate(state["bytes"])
        log(f"paperchat: resuming {source.spec} after {written} papers (note id {after}) "
            f"from {partial}")
    else:
        after, written, total, skipped, n_skipped, statuses = None, 0, None, [], 0, {}
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(b"")
    resumed_from, seen, requests_made = written, written + n_skipped, 0
    client = openreview_client(source.url, retries)
    from tqdm import tqdm

    bar = tqdm(total=total, initial=seen, unit="paper", desc=source.spec, disable=not progress,
               file=sys.stderr, dynamic_ncols=True)
    try:
        with partial.open("ab") as fh, contextlib.redirect_stdout(_ToStderr()):
            while True:
                kwargs: dict[str, Any] = dict(source.notes_query(), sort="id", limit=page_size)
                if after:
                    kwargs["after"] = after
                if total is None:
                    notes, total = client.get_notes(with_count=True, **kwargs)
                    bar.total = total
                    bar.refresh()
                else:
                    notes = client.get_notes(**kwargs)
                requests_made += 1
                lines = []
                for note in notes:
                    raw = note.to_json()  # (which leaves out the number and the domain)
                    raw.update(number=note.number, domain=note.domain)
                    try:
                        row = note_row(raw)
                    except ValueError as exc:
                        n_skipped += 1
                        if len(skipped) < 20:
                            skipped.append(f"{raw.get('id')}: {exc}")
                        continue
                    tier = status_tier(row["status"])
                    statuses[tier] = statuses.get(tier, 0) + 1
                    lines.append(json.dumps(row, ensure_ascii=False) + "\n")
                fh.write("".join(lines).encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
                written += len(lines)
                if notes:
                    after = notes[-1].id
                _write_state(state_path, {
                    "source": source.key, "bytes": fh.tell(), "after": after,
                    "papers": written, "total": total, "skipped": skipped,
                    "n_skipped": n_skipped, "statuses": statuses})
                bar.update(len(notes))
                seen += len(notes)
                # the end: an empty page, or a short one once the count is reached (a short page
                # before it means the server pages smaller than asked: go on)
                if not notes or (len(notes) < page_size and seen >= (total or 0)):
                    break
    except requests.exceptions.RequestException as exc:
        raise _http_error(source, source.url, exc, _saved(written, "papers", partial)) from None
    except KeyboardInterrupt:
        log(f"paperchat: interrupted; {written} papers are saved in {partial}: run the same "
            "command again to resume")
        raise
    except Exception as exc:
        from openreview import OpenReviewException

        if not isinstance(exc, OpenReviewException):
            raise
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, dict):
            detail = f"{detail.get('name', 'error')}: {detail.get('message', '')}".strip()
        raise FetchError(f"OpenReview ({source.url}) refused {source.spec}: {detail}; "
                         f"{_saved(written, 'papers', partial)}") from None
    finally:
        bar.close()
    if written == 0:
        partial.unlink(missing_ok=True)
        state_path.unlink(missing_ok=True)
        which = "notes" if source.all_submissions else "accepted papers"
        raise FetchError(f"OpenReview ({source.url}) has no {which} for venue id "
                         f"{source.target!r}: check its spelling (e.g. ICLR.cc/2026/Conference)"
                         + ("" if source.all_submissions else
                            "; before decisions are out, --all fetches every submission"))
    os.replace(partial, out)
    state_path.unlink(missing_ok=True)
    return FetchResult(source, out, written, skipped, n_skipped, resumed_from, requests_made,
                       time.perf_counter() - t0, statuses)


# --- Paper Copilot ----------------------------------------------------------------------------
def fetch_papercopilot(source: Source, out: Path, *, progress: bool = True,
                       retries: int | None = None,
                       log: Callable[[str], None] = lambda m: None) -> FetchResult:
    """Download ``source``'s Paper Copilot list to ``<out>.download`` (resumed with ``Range``
    when a previous run left part of it and the server honours ranges), then write its papers
    to ``out`` as JSONL (:func:`paper_row`, ratings and confidences included). Venue and year
    come from the records, else from the file name (``iclr2018`` -> ICLR 2018).

    Raises:
        FetchError: the network failed after the retries, the server has no such list (404), or
            the file is not a Paper Copilot list (the message says what it holds).
    """
    import requests

    from index.source_records import venue_from_filename
    from index.sources import load_papers
    from rag.errors import SourceFormatError

    t0 = time.perf_counter()
    _, state_path, download = partial_paths(out)
    url = source.list_url()
    state = _read_state(state_path, source) if download.is_file() else None
    have = download.stat().st_size if state else 0
    session = _session(retries)
    from tqdm import tqdm

    requests_made = 0
    try:
        headers = {"Range": f"bytes={have}-"} if have else {}
        with session.get(url, stream=True, headers=headers) as r:
            requests_made += 1
            if r.status_code == 404:
                raise FetchError(f"Paper Copilot has no list {source.target!r} at {url}: lists "
                                 "are named <conf>/<file> as in its repository, e.g. "
                                 "papercopilot:iclr/iclr2025")
            if r.status_code == 416 and have:  # the whole file is already here
                pass
            elif r.status_code >= 400:
                raise FetchError(f"{url} answered HTTP {r.status_code} {r.reason} (after "
                                 f"retries); run the same command again later")
            else:
                resumed = r.status_code == 206 and have > 0
                if have and not resumed:
                    log(f"paperchat: {url} does not resume downloads; starting it again")
                elif resumed:
                    log(f"paperchat: resuming {url} after {have:,} bytes")
                mode, start = ("ab", have) if resumed else ("wb", 0)
                size = r.headers.get("Content-Length")
                total = int(size) + start if size and size.isdigit() else None
                _write_state(state_path, {"source": source.key})
                with download.open(mode) as fh, tqdm(
                        total=total, initial=start, unit="B", unit_scale=True,
                        desc=source.spec, disable=not progress, file=sys.stderr) as bar:
                    for chunk in r.iter_content(_CHUNK):
                        fh.write(chunk)
                        bar.update(len(chunk))
    except requests.exceptions.RequestException as exc:
        saved = download.stat().st_size if download.is_file() else 0
        raise _http_error(source, url, exc, _saved(saved, "bytes", download)) from None
    try:
        result = load_papers(download, fmt="papercopilot")
    except SourceFormatError as exc:
        download.unlink(missing_ok=True)
        state_path.unlink(missing_ok=True)
        raise FetchError(f"{url} is not a Paper Copilot list: {exc}") from None
    venue, year = venue_from_filename(source.target.rsplit("/", 1)[-1] + ".json")
    statuses: dict[str, int] = {}
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for paper in result.papers:
            if not paper.venue and venue:
                paper.venue = venue
            if paper.year is None:
                paper.year = year
            tier = status_tier(paper.status)
            statuses[tier] = statuses.get(tier, 0) + 1
            fh.write(json.dumps(paper_row(paper), ensure_ascii=False) + "\n")
    os.replace(tmp, out)
    download.unlink(missing_ok=True)
    state_path.unlink(missing_ok=True)
    skipped = [str(p) for p in result.problems if p.skipped]
    return FetchResult(source, out, len(result.papers), skipped[:20], len(skipped), 0,
                       requests_made, time.perf_counter() - t0, statuses)


def fetch(source: Source, out: Path, *, progress: bool = True, page_size: int = PAGE_SIZE,
          retries: int | None = None, log: Callable[[str], None] = lambda m: None) -> FetchResult:
    """Fetch ``source`` into ``out`` (a JSONL file; its folder is created):
    :func:`fetch_openreview` or :func:`fetch_papercopilot`.

    Raises:
        FetchError: as those, or ``out`` is a directory, or ``page_size`` is outside 1..1000, or
            ``retries`` is negative.
    """
    out = Path(out).expanduser()
    if out.is_dir():
        raise FetchError(f"--out {out}: is a directory; give a file name such as "
                         f"{out / (source.slug() + '.jsonl')}")
    if not 1 <= page_size <= PAGE_SIZE:
        raise FetchError(f"--page-size must be 1..{PAGE_SIZE} (the API's limit), not {page_size}")
    if retries is not None and retries < 0:
        raise FetchError(f"--retries must be 0 or more, not {retries}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if source.kind == "openreview":
        return fetch_openreview(source, out, progress=progress, page_size=page_size,
                                retries=retries, log=log)
    return fetch_papercopilot(source, out, progress=progress, retries=retries, log=log)
