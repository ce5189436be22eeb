"""Author names a turn says, matched against the names the index's papers list (ICLR 2018 lists
them; ICLR 2026 was anonymous): "bernhard scholkopf papers", "what did David Ha submit in 2018",
"Chelsea Finn's highest-rated paper?", "had Yoshua Bengio as an author". The filter words of
:mod:`rag.understand.filter_words` read "papers by NAME"; this reads a full name said in any
frame, because the index knows it.

Names are compared :func:`rag.filters.fold`-ed (case and accents: "scholkopf" is "Schölkopf"),
as whole runs of two to four words, the longest first.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from rag.filters import fold

#: Words a name of the list never is as a whole (a two-word "name" such as "Deep Learning" in a
#: list's author field would otherwise filter every question that says it).
_NOT_A_NAME = frozenset("deep learning neural network networks machine reinforcement language "
                        "model models paper papers".split())
_WORD = re.compile(r"[^\W\d_][\w'’.\-]*", re.U)


def author_index(papers: Iterable) -> dict[str, str]:
    """Folded full name -> the name as the list spells it, for every author of ``papers`` whose
    name has two to four words (the first spelling met is kept), with and without its initials
    (:func:`rag.filters.name_core`), by its first and last names alone, and by a shortened first name of at least five letters with
    the surname (of at least five) when one person of the list has it ("geoff hinton")."""
    from rag.filters import name_core

    out: dict[str, str] = {}
    short: dict[str, set[str]] = {}
    for p in papers:
        for name in p.authors or ():
            plain = [w for w in fold(name).replace(".", " ").split() if len(w) > 1]
            # ("geoffrey hinton": "Geoffrey E. Hinton"; "zack lipton": "Zack Chase Lipton";
            # "samuel schoenholz": "Samuel S. Schoenholz", the umlaut's "e" kept)
            for key in (fold(name), name_core(name), " ".join(plain[:1] + plain[-1:])):
                words = key.split()
                if 2 <= len(words) <= 4 and not set(words) & _NOT_A_NAME:
                    out.setdefault(key, name.strip())
            words = name_core(name).split()
            if len(words) >= 2 and len(words[0]) > 5 and len(words[-1]) >= 5 and \
                    not set(words) & _NOT_A_NAME:
                for n in range(5, len(words[0])):  # "geoff hinton": "Geoffrey E. Hinton"
                    short.setdefault(f"{words[0][:n]} {words[-1]}", set()).add(name.strip())
    for key, spelled in short.items():
        if key not in out and len({name_core(s) for s in spelled}) == 1:
            out[key] = min(spelled)
    return out


def authors_said(text: str, names: Mapping[str, str]) -> list[tuple[str, tuple[int, int]]]:
    """The author names of ``names`` (:func:`author_index`) that ``text`` says, as ``(name as
    the list spells it, (start, end) span in text)``, left to right, longest match first, a
    possessive "'s" left outside the span."""
    if not names:
        return []
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    found: list[tuple[str, tuple[int, int]]] = []
    i = 0
    while i < len(words):
        for n in (4, 3, 2):
            if i + n > len(words):
                continue
            run = words[i:i + n]
            last = re.sub(r"['’]s$", "", run[-1][0])
            key = fold(" ".join([w for w, _, _ in run[:-1]] + [last]))
            if key in names:
                end = run[-1][1] + len(last)
                found.append((names[key], (run[0][1], end)))
                i += n
                break
        else:
            i += 1
    return found


#: Words that say a name is an author's ("by", "et al.", "'s papers", "wrote"): a surname said
#: alone is read as an author only beside one of them.
_AUTHOR_CUE = re.compile(r"\b(?:by|from|authored|authors?|co-?authors?|co-?authored|wrote|written|"
                         r"et\s+al|submit(?:ted|s)?|publish(?:ed|es)?)\b|"
                         # "did Salakhutdinov have any orals?"
                         r"\bdid\s+[A-Z][\w'’-]+\s+(?:have|get|submit|publish|write|present)\b|"
                         r"['’]s\s+(?:\w+\s+){0,2}?(?:papers?|works?|submissions?|"
                         r"orals?|posters?|research|publications?)\b", re.I)


#: Right before a surname: "papers by", "anything from", "work of" (a noun and "by").
_BY_BEFORE = re.compile(r"\b(?:papers?|works?|anything|something|stuff|submissions?|research|"
                        r"publications?|ones)\s+(?:by|from|of)\s+$", re.I)
#: Right after a surname: "'s papers", "et al.".
_AFTER_NAME = re.compile(r"['’]s\b|\s+et\s+al\b", re.I)


def surname_index(names: Mapping[str, str]) -> dict[str, str]:
    """Folded surname -> the surname as the list spells it, for the surnames of ``names``
    (:func:`author_index`) of at least four letters."""
    out: dict[str, str] = {}
    for key, name in names.items():
        last = key.split()[-1]
        if len(last) >= 4 and last.isalpha():
            out.setdefault(last, name.split()[-1])
    return out


def surnames_said(text: str, surnames: Mapping[str, str], vocabulary=frozenset()
                  ) -> list[tuple[str, tuple[int, int]]]:
    """Surnames of ``surnames`` (:func:`surname_index`) that ``text`` says beside an author word
    ("papers by goodfellow", "Levine et al.", "schmidhuber's papers"), as ``(surname as the list
    spells it, span)``; a word of ``vocabulary`` (the papers' BM25 terms) is a surname only when
    capitalised or said as one ("papers by song", "song et al.", not "music made by song
    structure"). Without an author word, a surname that is no word of the papers is one when
    nothing else of the turn names a topic ("Vinyals 2018", "levine papers 2018")."""
    if not surnames:
        return []
    cue = bool(_AUTHOR_CUE.search(text))
    found = []
    for m in _WORD.finditer(text):
        word = re.sub(r"['’]s$", "", m.group(0))
        key = fold(word)
        if key not in surnames:
            continue
        if not cue:
            from rag.understand.topics import has_topic

            rest = _AUTHOR_FRAME.sub(" ", text[:m.start()] + " " + text[m.end():])
            rest = re.sub(r"\b(?:19|20)\d\d\b|['’]\d\d\b", " ", rest)  # (a year is no topic)
            if not _stems(key) & vocabulary and vocabulary and not has_topic(rest):
                found.append((surnames[key], (m.start(), m.start() + len(word))))
            continue
        said_as_author = bool(_BY_BEFORE.search(text[:m.start()]) or
                              _AFTER_NAME.match(text[m.start() + len(word):]))
        if word[:1].isupper() or said_as_author or not _stems(key) & vocabulary:
            found.append((surnames[key], (m.start(), m.start() + len(word))))
    return found


def _stems(word: str) -> set[str]:
    """The BM25 terms of ``word`` (:func:`rag.backends.lexical.query_terms`)."""
    from rag.backends.lexical import query_terms

    return set(query_terms(word))


#: Words that say "papers by this author" around a name, not a topic.
_AUTHOR_FRAME = re.compile(
    r"['’]s\b|\b(?:what|which|where|who|whose|that|did|does|do|has|have|had|is|are|was|were|"
    r"any|anything|something|everything|stuff|group|lab|team|all|the|a|an|of|and|or|together|"
    r"put|out|releas\w*|present\w*|up|doing|get|got|"
    r"jointly|joint|both|collaborat\w*|"
    r"from|by|with|as|in|at|to|iclr|papers?|works?|submissions?|submit(?:ted|s)?|wrote|written|"
    r"write|authored|authors?|co-?author(?:ed|s)?|publish(?:ed)?|list|show|me|give|find|else|other|"
    r"there|many|how|number|count|also|et|al|sort(?:ed)?|rank(?:ed)?|order(?:ed)?|mean|average|avg|"
    r"reviewers?|scores?|ratings?|rated|highest|lowest|best|worst|top|first|descending|"
    r"ascending)\b|[?!.,;:]", re.I)


#: An order asked in so many words ("sorted by rating", "best rated first", "by score").
_SORTED = re.compile(r"\b(?:sort(?:ed)?|rank(?:ed)?|order(?:ed)?)\s+by\b|\bfirst\b|\bby\s+"
                     r"(?:(?:mean|average|avg|reviewer)\s+)*(?:rating|score)s?\b", re.I)


def apply_authors(plan, text: str, said: list[tuple[str, tuple[int, int]]],
                 add: bool = True) -> None:
    """Filter ``plan`` by the authors ``said`` in ``text`` (:func:`rag.understand.authors.
    authors_said`), in place: their names and the words around them ("'s papers", "submit",
    "as an author") leave the search; what is left is the topic ("Chelsea Finn's papers on
    meta-learning"), and with no topic left the plan reads the catalog ("bernhard scholkopf
    papers": a list of that author's papers; a count, sort or extreme stays one)."""
    if add:  # (else the filters have them already; ``said`` only places the names)
        plan.filters = plan.filters + [f"author={name}" for name, _ in said]
    rest = text
    for _, (a, b) in sorted((s for s in said), key=lambda s: -s[1][0]):
        # (with the word that said it was an author: "papers by   on X" would read "on X" as
        # the next name)
        cue = re.search(r"(?:\b(?:by|from|with|and|or)\s+|[&,]\s*)+$", rest[:a], re.I)
        b += len(re.match(r"(?:['’]s\b)?", rest[b:]).group(0))  # (and its possessive)
        rest = rest[:cue.start() if cue else a] + " " + rest[b:]
    from rag.understand import rating_order, topics
    from rag.understand.slots import read_filters

    read = read_filters(rest)
    left = read.query
    for y in (read.filters.values.get("year", []) if read.filters else []):
        if f"year={y}" not in plan.filters:  # "Sergey Levine 2018": no name's own number
            plan.filters = plan.filters + [f"year={y}"]
    if plan.papers not in ("search", "catalog", "named"):
        return
    if plan.papers == "catalog":
        pass  # the reading already took the list as it is: a catalog reading stays one
    elif topics.has_topic(_AUTHOR_FRAME.sub(" ", left)):
        plan.papers, plan.query = "search", left
        plan.topic = topics.topic_phrase(left)
        return
    plan.papers, plan.query, plan.topic, plan.names, plan.ids = "catalog", "", "", [], []
    if plan.op not in ("count", "list", "sort", "extreme"):
        plan.op = "list"
    if plan.op == "list" and rating_order.orders_by_rating(text) and _SORTED.search(text):
        # "all of Ruslan Salakhutdinov's submissions, sorted by average reviewer score"
        plan.op = "sort"
        plan.order = "rating_asc" if rating_order.ascending(text) else "rating_desc"


#: Words that say several people wrote a paper together ("coauthored by A and B", "A and B
#: together", "joint papers of A and B", "A's papers with B").
_TOGETHER = re.compile(r"\b(?:co-?author(?:ed|s|ship)?|together|jointly|joint|both|collaborat\w*)\b",
                       re.I)
#: What joins one name to the next in a list of authors ("A and B", "A & B", "A, B", "A or B").
_JOIN = re.compile(r"\s*(?:,\s*(?:and\s+|&\s*)?|\s+and\s+|\s*&\s*|\s+or\s+|\s+with\s+)", re.I)


def joined_names(text: str, said: list[str], names: Mapping[str, str],
                 surnames: Mapping[str, str]) -> list[str]:
    """Authors said right after an author already read, joined to it by "and", "&", ",", "or"
    or "with" ("papers by Abbeel and Levine": "Levine" is read by its place beside "Abbeel"),
    as the list spells them (a full name of ``names``, else a surname of ``surnames``); left to
    right, none of ``said`` again."""
    out: list[str] = []
    known = {fold(s) for s in said}
    queue = list(said)
    while queue:
        name = queue.pop(0)
        for m in re.finditer(re.escape(name) + r"(?:['’]s)?", text, re.I):
            j = _JOIN.match(text, m.end())
            if not j:
                continue
            words = [w.group(0) for w in _WORD.finditer(text[j.end():j.end() + 80])][:4]
            found = next((names[fold(" ".join(words[:n]))] for n in (4, 3, 2)
                          if len(words) >= n and fold(" ".join(words[:n])) in names), None)
            if found is None and words:
                last = fold(re.sub(r"['’]s$", "", words[0]))
                found = surnames.get(last) if words[0][:1].isupper() or _BY_BEFORE.search(
                    text[:m.start()]) else None
            if found and fold(found) not in known and not any(
                    fold(found) in k.split() or fold(found) == k for k in known):
                known.add(fold(found))
                out.append(found)
                queue.append(found)
    return out


def join_coauthors(filters: list[str], text: str) -> list[str]:
    """``filters`` with its ``author=`` values made one ``author=A & B`` when ``text`` says the
    papers were written together ("coauthored by", "together", "joint", "both", "A with B";
    :data:`rag.filters` reads `` & `` as all of them); else unchanged (two authors mean either)."""
    values = [f[7:] for f in filters if f.startswith("author=")]
    if len(values) < 2:
        return filters
    with_next = any(re.search(re.escape(a) + r"(?:['’]s)?(?:\s+\w+){0,2}?\s+with\s+" + re.escape(b),
                              text, re.I) for a in values for b in values if a != b)
    if not (_TOGETHER.search(text) or with_next):
        return filters
    rest = [f for f in filters if not f.startswith("author=")]
    return rest + ["author=" + " & ".join(values)]


def name_spans(text: str, spelled: list[str]) -> list[tuple[str, tuple[int, int]]]:
    """Each occurrence in ``text`` of each name of ``spelled`` as a whole word (case-insensitive,
    a possessive "'s" left outside), as ``(name, (start, end))`` for :func:`apply_authors`."""
    out: list[tuple[str, tuple[int, int]]] = []
    for name in sorted(spelled, key=len, reverse=True):  # (the longest first; no overlaps)
        for m in re.finditer(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, re.I):
            if not any(a < m.end() and m.start() < b for _, (a, b) in out):
                out.append((name, m.span()))
    return out
