"""The name channel of :class:`rag.retrieve.retriever.Retriever`: the papers a question names, by a
title's name or a rare name-like word (:meth:`NamedPapers.named`), and the index's paper names it
reads them from (:meth:`NamedPapers.name_index`, :meth:`NamedPapers.title_names`). A mixin: it
uses the retriever's ``papers``, ``lexical``, ``settings`` and ``name``.
"""

from __future__ import annotations

import logging
import re
import unicodedata

import numpy as np

from rag.backends.lexical import query_terms
from rag.paths import IndexPaths
from rag.understand.names import NameIndex, fold, name_like, papers_key, question_names, title_name
from rag.understand.names import WORD as _WORD

log = logging.getLogger(__name__)

#: A name in the question (:func:`question_names`) puts first the papers that use it, when at
#: most this many papers do (a name many papers use, such as GRPO or LoRA, is a topic: fusion
#: ranks those).
MAX_NAMED_PAPERS = 3


class NamedPapers:
    """The name channel of a :class:`rag.retrieve.retriever.Retriever` (see the module docstring)."""

    def name_index(self) -> NameIndex:
        """The :class:`rag.understand.names.NameIndex` of the indexed papers, on first use: read from the
        index's names file when it was made from these papers by this code (the build writes
        it: :func:`rag.understand.names.write_names`; about 0.3 s at 19,630 papers), else built (about
        4 s per 10,000 papers) and saved there for the next reader."""
        if getattr(self, "_name_index", None) is None:
            papers = list(self.papers.values())
            key = papers_key(papers)
            path = IndexPaths(self.settings.index_dir(self.name)).names
            names = NameIndex.load(path, key)
            if names is None:
                names = NameIndex(papers)
                if path.parent.is_dir():
                    try:
                        names.save(path, key)
                    except OSError as exc:  # a read-only index: kept in memory only
                        log.warning("paper names not saved to %s (%s)", path, exc)
            self._name_index = names
        return self._name_index

    def title_names(self) -> dict[str, list[str]]:
        """Folded title name (:func:`title_name`) -> ids of the papers whose title has it."""
        if self._title_names is None:
            names: dict[str, list[str]] = {}
            for pid, paper in self.papers.items():
                name = title_name(paper.title)
                if len(name) >= 3:
                    names.setdefault(name, []).append(pid)
            self._title_names = names
        return self._title_names

    def named(self, question: str, allowed: set[str] | None = None) -> list[str]:
        """Ids of the papers the question names, in question order: a title's name written in
        the question in any case and spacing ("steporlm", "part x mllm": its 1-3 word spans,
        folded; a name in capitals that is also a word, such as SPEED or MIMIC, only when
        written in capitals), and a name-like word (:func:`question_names`) that the lexical
        index finds in at most :data:`MAX_NAMED_PAPERS` papers (same term rule as BM25, so
        ``llama3-8b`` and ``Llama-3-8B`` agree). Only papers in ``allowed`` (when given) count.

        A title's name written as a plain word ("reveal", "mesh" for ReVeal and MeSH; not
        name-like, not in capitals) names the paper only when the word is itself rare (at most
        :data:`MAX_NAMED_PAPERS` papers have it): otherwise it is the field's word, and an author's
        summary "We reveal why audio reasoning fails" is about something else (issue 21: 18 of
        1,516 dev queries were pushed down that way). Words of a span are separated by
        anything but an apostrophe or a punctuation mark between clauses ("LoRA's" is not
        "LoRA-S"; "DA$^{2}$" is DA2)."""
        from rag.backends.lexical import compound_terms

        out: list[str] = []
        found = list(_WORD.finditer(question))
        words = [m.group(0) for m in found]
        titles = self.title_names()
        for size in range(min(3, len(words)), 0, -1):
            for i in range(len(words) - size + 1):
                span = words[i:i + size]
                gaps = [question[a.end():b.start()] for a, b in zip(found[i:i + size - 1],
                                                                  found[i + 1:i + size])]
                if any(re.search(r"['\u2019,;:!?]|\.\s", g) for g in gaps):
                    continue  # "LoRA's" is not the name "LoRA-S"; "DA$^{2}$" is DA2
                name = fold("".join(span))
                ids = titles.get(name, [])
                if not 0 < len(ids) <= MAX_NAMED_PAPERS:
                    continue
                head = self.papers[ids[0]].title.partition(":")[0]
                joined = "".join(span)
                written = joined.isupper() or any(name_like(w) for w in [*span, "-".join(span)])
                if head.isupper() and not written:
                    continue
                if not written and not self._rare_term(name):
                    continue  # "reveal", "mesh": words, although ReVeal and MeSH are names
                out += ids
        for name in question_names(question):
            joined = compound_terms(unicodedata.normalize("NFKC", name).lower())
            terms = query_terms(joined[0]) if joined else query_terms(name)
            if len(terms) != 1:
                continue
            scores = self.lexical.scores(terms[0])
            docs = np.flatnonzero(scores > 0)
            if 0 < len(docs) <= MAX_NAMED_PAPERS:
                out += [self.lexical.ids[i] for i in docs[np.argsort(-scores[docs])]]
        out = [pid for pid in dict.fromkeys(out) if pid in self.papers]
        return [pid for pid in out if allowed is None or pid in allowed]

    def _rare_term(self, term: str) -> bool:
        """True when at most :data:`MAX_NAMED_PAPERS` papers have ``term`` (one folded word) as a
        BM25 term: a coined name rather than a word of the field."""
        terms = query_terms(term)
        if len(terms) != 1:
            return False
        return int((self.lexical.scores(terms[0]) > 0).sum()) <= MAX_NAMED_PAPERS
