"""The records that flow through paperchat: papers, chunks, hits, citations and answers, and a
search's rankings and result (:class:`Ranking`, :class:`Retrieval`); chunk
ids (:func:`chunk_id`, :func:`paper_of`, :func:`chunk_number`) and decision tiers of a status
(:func:`status_tier`, :func:`is_accepted`). Imports nothing of the project's.

All are plain dataclasses (ARCHITECTURE.md, habit 10): no behaviour beyond small helpers, safe to
pickle and to turn into JSON with :func:`dataclasses.asdict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Paper:
    """One paper of a conference list, as loaded from any supported format.

    ``title`` and ``abstract`` are kept exactly as supplied (LaTeX, markdown and all) for display;
    :mod:`rag.text` derives the normalised text used for embedding and BM25.
    ``year`` is an int or None; list fields are never None (empty list instead).
    ``ratings`` are the reviewers' overall scores, one per review, on the conference's scale
    (ICLR: 0-10, higher is better); ``confidences`` the reviewers' self-reported confidence, one per
    review (ICLR: 1-5). Both are empty when the list carries none.
    """

    id: str
    title: str
    abstract: str
    authors: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)
    primary_area: str = ""
    status: str = ""
    venue: str = ""
    year: int | None = None
    url: str = ""
    tldr: str = ""
    ratings: list[float] = field(default_factory=list)
    confidences: list[float] = field(default_factory=list)

    @property
    def openreview_url(self) -> str:
        """The paper's URL, falling back to the OpenReview forum URL built from its id."""
        return self.url or f"https://openreview.net/forum?id={self.id}"

    @property
    def rating(self) -> dict[str, float | int] | None:
        """Summary of the reviewer ratings, or None when the paper has none.

        ``{"mean": float, "n": int, "min": float, "max": float}``: ``mean`` is rounded to 2
        decimals and is the value rating filters compare and chunk metadata stores; ``n`` is the
        number of reviews; all on the conference's scale (ICLR: 0-10).
        """
        if not self.ratings:
            return None
        return {"mean": round(sum(self.ratings) / len(self.ratings), 2), "n": len(self.ratings),
                "min": float(min(self.ratings)), "max": float(max(self.ratings))}

    @property
    def mean_confidence(self) -> float | None:
        """Mean reviewer confidence rounded to 2 decimals (ICLR: 1-5); None when there is none."""
        if not self.confidences:
            return None
        return round(sum(self.confidences) / len(self.confidences), 2)

    def rating_text(self) -> str:
        """The rating as cards and terminal references show it: ``rating 6.0 · 4 reviews, 4–8``
        (one review: ``rating 6.0 · 1 review``); ``""`` when unrated. Plain text, not escaped."""
        r = self.rating
        if r is None:
            return ""
        if r["n"] == 1:
            return f"rating {r['mean']} · 1 review"

        def num(x: float) -> str:
            return str(int(x)) if float(x).is_integer() else f"{x:g}"

        return f"rating {r['mean']} · {r['n']} reviews, {num(r['min'])}–{num(r['max'])}"


def status_tier(status: str) -> str:
    """Normalised decision of a status string: oral, spotlight, poster, accept, reject,
    withdrawn, workshop or '' (unknown). ICLR 2026 says 'Accept (Oral)', 2018 says 'Oral'."""
    s = status.lower()
    if "not accepted" in s:  # "Not accepted (Reject, or withdrawn after 2025-11-22)"
        return "reject"
    for tier in ("oral", "spotlight", "poster", "workshop", "withdraw", "reject"):
        if tier in s:
            return "withdrawn" if tier == "withdraw" else tier
    return "accept" if "accept" in s else ""


def is_accepted(status: str) -> bool:
    return status_tier(status) in ("oral", "spotlight", "poster", "accept")


@dataclass
class Chunk:
    """A window of a paper's text as embedded and stored in Chroma.

    ``id`` is ``"<paper id>#<n>"`` with ``n`` counting from 0, so re-indexing gives the same ids.
    ``text`` is the normalised title followed by the window of the normalised abstract.
    ``n_tokens`` counts the embedder's tokenizer tokens of ``text`` including special tokens and is
    at most the embedder's window (256 for all-MiniLM-L6-v2).
    """

    id: str
    paper_id: str
    n: int
    text: str
    n_tokens: int


def chunk_id(paper_id: str, n: int) -> str:
    """Id of chunk ``n`` (from 0) of a paper: ``<paper id>#<n>``."""
    return f"{paper_id}#{n}"


def paper_of(chunk: str) -> str:
    """Paper id of a chunk id (the part before the last ``#``; paper ids may contain ``#``)."""
    return chunk.rsplit("#", 1)[0]


def chunk_number(chunk: str) -> int:
    """Number ``n`` of a chunk id (the part after the last ``#``)."""
    return int(chunk.rsplit("#", 1)[1])


@dataclass
class Hit:
    """A retrieved paper, rank 1 first.

    ``score`` is the fused retrieval score (higher is better; see :mod:`rag.retrieve.retriever` for how it is
    made); ``dense`` is the best cosine similarity of any of the paper's chunks to the question
    (in [-1, 1]) and ``lexical`` its BM25 score (>= 0, unnormalised). ``evidence`` holds the
    abstract's sentences that best match the question, best first.
    """

    paper: Paper
    score: float
    dense: float = 0.0
    lexical: float = 0.0
    evidence: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.paper.id


@dataclass
class Citation:
    """A ``[n]`` marker in an answer that points at hit number ``n`` (1-based) of the answer's hits.

    ``support`` is the grounding score of the sentences citing it (see :mod:`rag.compose.grounding`,
    in [0, 1], higher is better); ``supported`` is ``support >= settings.support_threshold``.
    ``evidence`` is the abstract sentence that supports the claim best.
    """

    n: int
    paper: Paper
    supported: bool = True
    support: float = 1.0
    evidence: str = ""


#: Kinds of answer sentence (:attr:`AnswerSentence.kind`): ``direct`` the one-line direct answer
#: (template text around paper titles); ``quote`` an abstract sentence quoted exactly; ``item`` a
#: list line: a paper's title and one quoted sentence; ``heading`` template text with no claim
#: ("Also relevant:"); ``note`` a plain statement about what the abstracts cannot say; ``metadata``
#: a fact from the paper list (authors); ``claim`` a sentence the model wrote; ``bibtex`` BibTeX
#: entries of the papers it cites (shown as a code block).
SENTENCE_KINDS = ("direct", "quote", "item", "heading", "note", "metadata", "claim", "bibtex")


@dataclass
class AnswerSentence:
    """One sentence of the answer with the hit numbers it cites after checking (may be empty).

    ``text`` is the sentence as shown (markers included); ``kind`` one of :data:`SENTENCE_KINDS`;
    ``quote`` the exact abstract sentence a ``quote`` or ``item`` shows (citation-like brackets
    defused), else ``""``. ``support`` in [0, 1] (see :mod:`rag.compose.grounding`); headings and notes
    make no claim about a paper and are always ``supported`` with ``support`` 1.0 but are not
    counted in the supported share of ``paperchat eval --answers``.
    """

    text: str
    citations: list[int] = field(default_factory=list)
    supported: bool = True
    support: float = 0.0
    auto_cited: bool = False
    kind: str = "claim"
    quote: str = ""

    @property
    def is_claim(self) -> bool:
        """True when the sentence says something about a paper (counted by the checks)."""
        return self.kind not in ("heading", "note", "bibtex")


@dataclass
class Answer:
    """The result of one question: answer text with ``[n]`` markers, citations, hits and timings.

    ``text`` contains only valid markers (each ``[n]`` with 1 <= n <= len(hits)).
    ``timings_ms`` has ``retrieve``, ``first_token`` and ``total`` in milliseconds from the start of
    the call. ``refused`` is True when retrieval found nothing relevant enough (see
    :mod:`rag.retrieve.retriever`); ``text`` then says so and ``hits`` still lists the nearest papers.

    ``mode`` is the answer mode used (``extractive``, ``constrained`` or ``generative``; see
    :mod:`rag.chat.answer`), ``kind`` the question type the composition used (``lookup``,
    ``describe``, ``survey``, ``compare``, ``followup``, ``count``, ``authors``, ``number``;
    see :mod:`rag.compose.extractive`; ``count``, ``list`` and ``rated`` answers come from the catalog,
    :mod:`rag.conference.facets`). ``comparison`` holds a comparison's table rows (header first) and
    ``comparison_ids`` its column papers' ids, in column order. ``unsupported`` holds the
    sentences a model wrote that no cited abstract supports: they are kept out of ``text`` and
    ``sentences`` and shown apart, collapsed. ``model`` names the model that took part (empty
    when none did). ``about_ids`` are the papers the answer is about (the best match, the
    compared papers, or the papers a follow-up asked about): the next turn's follow-ups refer to
    them. ``filters_applied`` lists every filter the search used, as ``FIELD=VALUE`` /
    ``rating>=6`` strings (:meth:`rag.filters.Filters.as_strings`): the caller's and those read
    from the question's words ("oral papers on ...", :mod:`rag.understand.slots`).
    """

    question: str
    standalone_question: str
    text: str
    citations: list[Citation]
    hits: list[Hit]
    refused: bool = False
    sentences: list[AnswerSentence] = field(default_factory=list)
    comparison: list[list[str]] | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    mode: str = "extractive"
    kind: str = ""
    comparison_ids: list[str] = field(default_factory=list)
    unsupported: list[AnswerSentence] = field(default_factory=list)
    model: str = ""
    about_ids: list[str] = field(default_factory=list)
    filters_applied: list[str] = field(default_factory=list)
    #: The turn's plan (:meth:`rag.understand.plan.Plan.to_json`): which papers, then what was done.
    plan: dict = field(default_factory=dict)
    #: Set when the answer's papers are every paper of the index these filters admit (a
    #: catalog reading: ``hits`` are only the first of them), so that "how many of those are
    #: orals?" next counts all of them, not only the ones shown. ``None`` otherwise.
    matched_filters: list[str] | None = None
    #: Share of the index's papers with dense vectors, in [0, 1], while the index is still being
    #: embedded (:mod:`rag.retrieve.coverage`); None for a whole index. ``coverage`` is its line
    #: ("dense 41% · about 9 min left").
    dense_coverage: float | None = None
    coverage: str = ""
    #: Papers per year when the answer is a count per year
    #: (:meth:`rag.conference.trends.Trend.to_json`: topic, rule, direction, years with n,
    #: total and share), else None.
    trend: dict | None = None


@dataclass
class Ranking:
    """Paper ids best first with their scores (one retrieval channel)."""

    ids: list[str]
    scores: list[float]

    def rank_of(self) -> dict[str, int]:
        return {pid: r for r, pid in enumerate(self.ids, start=1)}


@dataclass
class Retrieval:
    """Result of :meth:`rag.retrieve.retriever.Retriever.search`: hits best first, per-channel rankings and timing."""

    hits: list[Hit]
    dense: Ranking
    lexical: Ranking
    ms: float = 0.0
    meta: dict = field(default_factory=dict)
