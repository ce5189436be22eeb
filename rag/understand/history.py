"""The conversation so far: what each earlier answer left for the next turn (:class:`Turn`), and
how a conversation is kept between sessions of ``paperchat chat`` (:func:`save`, :func:`load`).

A turn's words are read once, by :mod:`rag.understand.read`; this module only records what an answer
showed: its papers in their numbered order ("the second one"), the ones it was about ("it"),
its plan (for "and for vision transformers?", which asks the same again) and its kind.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from rag.types import Paper


@dataclass
class Turn:
    """One earlier exchange: the user's question and the papers the answer cited (best first),
    or its top hits when it cited none. The first ``focus`` papers are the ones under discussion
    (the best match; after a comparison, every compared paper): a follow-up is about them.
    ``numbered`` are the papers as the answer numbered them ([n] in its text and cards: "the
    second paper"), ``kind`` the answer's kind (:attr:`rag.types.Answer.kind`) and ``plan`` its
    plan as JSON (:meth:`rag.understand.plan.Plan.to_json`; empty for turns from before plans)."""

    question: str
    standalone: str = ""
    papers: list[Paper] = field(default_factory=list)
    focus: int = 1
    numbered: dict[int, Paper] = field(default_factory=dict)
    kind: str = ""
    plan: dict = field(default_factory=dict)
    #: The filters whose every match the answer was about (:attr:`rag.types.Answer.
    #: matched_filters`), when it was a catalog reading; ``None`` otherwise.
    matched_filters: list[str] | None = None

    @property
    def discussed(self) -> list[Paper]:
        """The papers under discussion (at least the first paper, when there is one)."""
        return self.papers[:max(1, self.focus)]

    @property
    def shown(self) -> list[Paper]:
        """Every paper the answer numbered, in its order ("these", "all of them")."""
        return [self.numbered[n] for n in sorted(self.numbered)] or list(self.papers)


def last_with_papers(history: Sequence[Turn]) -> Turn | None:
    """The last turn of ``history``, or the one before it that had papers when the last
    answer had none (nothing matched its filter, or it was refused): "compare them" after "No
    paper matches status=spotlight" means the papers shown before that."""
    if not history:
        return None
    for turn in reversed(history):
        if turn.papers or turn.numbered:
            return turn
    return history[-1]


def turn_after(answer) -> Turn:
    """The :class:`Turn` an :class:`rag.types.Answer` leaves for follow-ups: the papers it is
    about (``answer.about_ids``, in that order) then its other cited papers, else its hits (none
    for a refusal: no paper is under discussion). ``focus`` is the number of papers it is about
    (at least 1). The UI's history, ``paperchat chat`` and ``paperchat eval`` all keep this."""
    plan = answer.plan or {}
    if answer.refused:
        return Turn(answer.question, answer.standalone_question, [], kind=answer.kind, plan=plan)
    by_id = {h.id: h.paper for h in answer.hits}
    about = [by_id[i] for i in dict.fromkeys(answer.about_ids) if i in by_id]
    ids = {p.id for p in about}
    cited = [c.paper for c in answer.citations if c.paper.id not in ids]
    papers = (about + cited) or [h.paper for h in answer.hits]
    numbered = {n: h.paper for n, h in enumerate(answer.hits, start=1)}
    numbered.update({c.n: c.paper for c in answer.citations})
    return Turn(answer.question, answer.standalone_question, papers, focus=len(about) or 1,
                numbered=numbered, kind=answer.kind, plan=plan,
                matched_filters=getattr(answer, "matched_filters", None))


# --- kept between sessions ------------------------------------------------------------------
#: Version of the saved conversation file; another version is not read.
FORMAT_VERSION = 1
#: Turns a kept conversation holds (the oldest are dropped; only the last one is referred to).
MAX_TURNS = 50


def conversation_path(home: Path, index: str) -> Path:
    """Where ``paperchat chat`` and ``ask --continue`` keep the conversation with ``index``:
    ``<home>/conversations/<index>.json``."""
    return Path(home) / "conversations" / f"{index}.json"


def to_json(turns: Sequence[Turn]) -> dict:
    """``turns`` as JSON: papers by id (the index holds the rest)."""
    return {"format_version": FORMAT_VERSION, "turns": [
        {"question": t.question, "standalone": t.standalone, "papers": [p.id for p in t.papers],
         "focus": t.focus, "numbered": {str(n): p.id for n, p in t.numbered.items()},
         "kind": t.kind, "plan": t.plan,
         **({"matched_filters": t.matched_filters} if t.matched_filters is not None else {})}
        for t in turns]}


def from_json(data: Mapping, papers: Mapping[str, Paper]) -> list[Turn]:
    """The turns of :func:`to_json`'s ``data``, papers looked up in ``papers`` (an index's
    papers by id; ids it no longer has are left out). Raises ValueError for another format."""
    if data.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"conversation file format {data.get('format_version')!r}, expected "
                         f"{FORMAT_VERSION}")
    out = []
    for t in data.get("turns", []):
        numbered = {int(n): papers[i] for n, i in t.get("numbered", {}).items() if i in papers}
        out.append(Turn(t["question"], t.get("standalone", ""),
                        [papers[i] for i in t.get("papers", []) if i in papers],
                        int(t.get("focus", 1)), numbered, t.get("kind", ""), t.get("plan") or {},
                        t.get("matched_filters")))
    return out


def save(path: Path, turns: Sequence[Turn], index: str) -> None:
    """Write the conversation to ``path`` atomically, with the index's name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({**to_json(turns), "index": index}, fh, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: Path, papers: Mapping[str, Paper], index: str) -> list[Turn]:
    """The conversation saved at ``path`` for index ``index``; empty when there is none, it is
    unreadable, or it was kept for another index."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("index") != index:
            return []
        return from_json(data, papers)
    except (OSError, ValueError, KeyError, TypeError):
        return []
