"""What ``paperchat fetch`` (:mod:`index.fetch`) fetches and what it reports: the source, read
from ``kind:target`` with the public URLs it defaults to (:class:`Source`, :func:`parse_source`),
and the summary of a fetch (:class:`FetchResult`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import FetchError


#: The public OpenReview API v2 (what ``openreview.net`` itself reads).
OPENREVIEW_API = "https://api2.openreview.net"
#: Paper Copilot's ``paperlists`` repository as raw files: ``<base>/<conf>/<file>.json``.
PAPERCOPILOT_BASE = "https://raw.githubusercontent.com/papercopilot/paperlists/main"
KINDS = ("openreview", "papercopilot")


@dataclass(frozen=True)
class Source:
    """What to fetch: ``kind`` (``openreview`` or ``papercopilot``), ``target`` (a venue id, or
    ``<conf>/<file>``), ``url`` (the API or the lists' base URL, no trailing ``/``) and, for
    OpenReview, ``all_submissions`` (also rejected and withdrawn ones)."""

    kind: str
    target: str
    url: str
    all_submissions: bool = False

    @property
    def spec(self) -> str:
        """``kind:target``, as typed on the command line."""
        return f"{self.kind}:{self.target}"

    @property
    def key(self) -> str:
        """What a partial download must have been fetched with to be resumed."""
        return f"{self.spec}|all={self.all_submissions}|{self.url}"

    def slug(self) -> str:
        """A file name stem for the list: ``openreview-iclr.cc-2026-conference-all``."""
        text = re.sub(r"[^a-z0-9.]+", "-", f"{self.kind}-{self.target}".lower()).strip("-.")
        return text + ("-all" if self.all_submissions else "")

    def notes_query(self) -> dict[str, Any]:
        """Keyword arguments of ``get_notes`` that select this source's notes."""
        if self.all_submissions:
            return {"invitation": f"{self.target}/-/Submission"}
        return {"content": {"venueid": self.target}}

    def list_url(self) -> str:
        """The Paper Copilot file's URL."""
        return f"{self.url}/{self.target}.json"


def parse_source(spec: str, *, all_submissions: bool = False, api: str | None = None,
                 base: str | None = None) -> Source:
    """Read ``openreview:<venue id>`` or ``papercopilot:<conf>/<file>``.

    ``api`` (OpenReview) and ``base`` (Paper Copilot) replace the public URLs
    (:data:`OPENREVIEW_API`, :data:`PAPERCOPILOT_BASE`); ``all_submissions`` applies to OpenReview
    only.

    Raises:
        FetchError: no known ``kind:``, an empty or malformed target (spaces, a Paper Copilot name
            without exactly one ``/``, a ``.json`` suffix is tolerated), ``--all`` or ``--api``
            with Paper Copilot, ``--base`` with OpenReview, or a URL that is not http(s).
    """
    kind, sep, target = (spec or "").strip().partition(":")
    kind = kind.lower()
    examples = ("openreview:ICLR.cc/2026/Conference (accepted papers; --all for every "
                "submission) or papercopilot:iclr/iclr2018")
    if not sep or kind not in KINDS:
        raise FetchError(f"unknown source {spec!r}: write {examples}")
    target = target.strip().strip("/")
    if not target or re.search(r"\s", target):
        raise FetchError(f"source {spec!r} has an empty or malformed name: write {examples}")
    if kind == "openreview":
        if base:
            raise FetchError("--base is for papercopilot: sources; OpenReview's is --api URL")
        url = api or OPENREVIEW_API
    else:
        if all_submissions:
            raise FetchError("--all is for openreview: sources; a Paper Copilot list already "
                             "holds every submission it has")
        if api:
            raise FetchError("--api is for openreview: sources; Paper Copilot's is --base URL")
        target = target[:-5] if target.lower().endswith(".json") else target
        if target.count("/") != 1 or "" in target.split("/"):
            raise FetchError(f"source {spec!r}: a Paper Copilot list is <conf>/<file>, e.g. "
                             "papercopilot:iclr/iclr2025 (the repository's folder and file name)")
        url = base or PAPERCOPILOT_BASE
    if not re.match(r"^https?://[^/\s]+", url):
        raise FetchError(f"{'--api' if kind == 'openreview' else '--base'} {url!r} is not an "
                         "http:// or https:// URL")
    return Source(kind, target, url.rstrip("/"), all_submissions and kind == "openreview")


@dataclass
class FetchResult:
    """What a fetch wrote: ``path`` (the JSONL file), ``papers`` (lines written), ``skipped``
    (records that could not become papers, as ``"<id>: <reason>"``; their number is
    ``n_skipped``), ``resumed_from`` (papers already on disk from an interrupted run, 0 for a
    fresh one), ``requests`` (HTTP requests this run made, retries not counted), ``seconds``
    (wall time of this run) and ``statuses`` (papers per decision tier, e.g. ``{"oral": 10,
    "poster": 290}``)."""

    source: Source
    path: Path
    papers: int
    skipped: list[str] = field(default_factory=list)
    n_skipped: int = 0
    resumed_from: int = 0
    requests: int = 0
    seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        """One summary line: ``fetched 300 papers (10 oral, 290 poster) from ... into ...``."""
        tiers = ", ".join(f"{n} {t or 'no decision'}" for t, n in
                          sorted(self.statuses.items(), key=lambda kv: -kv[1]))
        resumed = f"; resumed after {self.resumed_from}" if self.resumed_from else ""
        skipped = f"; {self.n_skipped} records skipped" if self.n_skipped else ""
        return (f"fetched {self.papers} papers ({tiers or 'none'}) from {self.source.spec} into "
                f"{self.path} in {self.seconds:.1f} s ({self.requests} requests{resumed}"
                f"{skipped})")
