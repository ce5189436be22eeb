"""Author TL;DRs as retrieval queries: each paper's own one-line summary asks for that paper.

The ICLR 2026 lists carry a ``tldr`` field written by the authors (2,848 of the 5,358 accepted
papers). Used as a question with its paper as the only gold hit, it is a query in the authors'
own words, the case where BM25 alone is strongest (issue 21). Two things keep it honest:

* **The split** is the one of ``shared/eval``: a paper is *dev* when the first hex digit of
  ``md5(id)`` is 0-7 and *held out* otherwise (:func:`split_of`). Fusion is trained and tuned on
  dev papers only, and of those the ones whose digit is 6 or 7 are kept aside (:func:`part_of`:
  ``train`` 0-5, ``aside`` 6-7), measured but never fitted on.
* **Coined names are masked.** A TL;DR usually repeats the name the title gives the method
  ("We propose StepORLM, ..."), which no one searching for the paper knows yet. :func:`coined_names`
  takes from the title (1) its heading, the part before the first ":" when it is at most
  :data:`MAX_HEAD_WORDS` words ("String Seed of Thought: ..."), and (2) any other name-like word
  of the title (:func:`rag.understand.names.name_like`: StepORLM, Part-X-MLLM, Qwen2.5) that the corpus
  has in at most :data:`MAX_NAME_PAPERS` papers' titles and abstracts, so a name the field
  shares (GPT-4o, LoRA) stays. :func:`mask_names` then drops each occurrence in the TL;DR
  together with an acronym in brackets right after it ("String Seed of Thought (SSoT)"), and that
  acronym's later occurrences too: "We propose X, a ..." becomes "We propose a ...", any other
  occurrence becomes "this work" ("X introduces ..." -> "This work introduces ..."). Nothing else
  of the TL;DR changes. The title's non-name words stay, as an author's summary would have them.

Query lines (:mod:`rag.evaluate.retrieval`): ``{"qid": "tldr-<id>", "type": "tldr", "question", "gold":
[id], "turns": null, "masked": [names dropped]}``. Write a file with::

    python -m rag.evaluate.tldr ../shared/data/iclr2026_accepted.jsonl --split dev --part aside \
        --out /tmp/tldr_dev_aside.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Iterable

#: A title's heading (before the first ":") of at most this many words is the paper's name.
MAX_HEAD_WORDS = 4
#: A name-like title word outside the heading counts as coined when at most this many papers of
#: the corpus have it (folded) in their title or abstract.
MAX_NAME_PAPERS = 2

#: A TL;DR with fewer words than this once masked is no question and is left out.
MIN_WORDS = 4

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9+_.-]*[A-Za-z0-9+]|[A-Za-z0-9]")
_INTRO = re.compile(r"\b(?:propose|proposes|introduce|introduces|present|presents|develop|"
                    r"develops|design|designs|build|builds|release|releases|call|called|term|"
                    r"termed|name|named|coined|dubbed)\s*$",
                    re.I)


_DETERMINER = re.compile(r"\b(?:the|our|a|an|this|their|its|enhanced|novel|new)\s+$", re.I)


def split_of(paper_id: str) -> str:
    """``"dev"`` when the first hex digit of md5(id) is 0-7, else ``"heldout"`` (the split of
    ``shared/eval``)."""
    return "dev" if hashlib.md5(paper_id.encode()).hexdigest()[0] in "01234567" else "heldout"


def part_of(paper_id: str) -> str:
    """Within the dev split: ``"train"`` (first md5 hex digit 0-5) or ``"aside"`` (6-7, kept
    out of fitting and tuning); ``"heldout"`` outside the dev split."""
    digit = hashlib.md5(paper_id.encode()).hexdigest()[0]
    return "train" if digit in "012345" else "aside" if digit in "67" else "heldout"


def _fold(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKC", text).lower())


def name_counts(papers: Iterable[dict]) -> Counter:
    """Folded word -> number of papers whose title or abstract holds it."""
    counts: Counter = Counter()
    for p in papers:
        text = unicodedata.normalize("NFKC", f"{p.get('title', '')} {p.get('abstract', '')}")
        counts.update({_fold(w) for w in _WORD.findall(text)})
    return counts


def coined_word(word: str) -> bool:
    """True for a word written like a coined name: :func:`rag.understand.names.name_like`, except a
    hyphenated word whose parts are only capitalised words or short acronyms
    ("Walsh-Hadamard", "Vision-to-Action", "FT-based" are words, "Part-X-MLLM" a name)."""
    from rag.understand.names import name_like

    if not name_like(word):
        return False
    parts = [x for x in word.split("-") if x]
    if len(parts) < 2:
        return True
    return any(any(a.islower() and b.isupper() for a, b in zip(x, x[1:]))
               or (x.isupper() and sum(c.isalpha() for c in x) >= 3)
               or (any(c.isdigit() for c in x) and any(c.isalpha() for c in x))
               or (len(x) == 1 and x.isupper()) for x in parts)


def coined_names(title: str, counts: Counter) -> list[str]:
    """The names ``title`` coins (module doc), longest first."""
    title = unicodedata.normalize("NFKC", title)
    names = []
    head, sep, rest = title.partition(":")
    if sep and 0 < len(head.split()) <= MAX_HEAD_WORDS and _fold(head):
        names.append(head.strip())
    for w in _WORD.findall(rest if sep else title):
        if coined_word(w) and len(_fold(w)) >= 3 and counts.get(_fold(w), 0) <= MAX_NAME_PAPERS:
            names.append(w)
    names = list(dict.fromkeys(names))
    return sorted(names, key=len, reverse=True)


def _pattern(name: str) -> re.Pattern:
    """``name`` in any case, its parts separated by nothing, spaces or hyphens, with a suffix such
    as ``-7B`` or ``'s``, and an acronym in brackets after it captured as ``acr``."""
    parts = [re.escape(x) for x in re.findall(r"[A-Za-z0-9]+", name)]
    body = r"[\s\u00a0\u202f_-]*".join(parts)
    return re.compile(rf"(?<![A-Za-z0-9]){body}(?:-[A-Za-z0-9.]+)*(?:'s)?(?![A-Za-z0-9])"
                      rf"(?:\s*\((?P<acr>[A-Za-z0-9][\w.+-]{{0,15}})\))?", re.I)


def mask_names(tldr: str, names: list[str]) -> tuple[str, list[str]]:
    """``tldr`` with ``names`` dropped (module doc); returns (text, the names and acronyms
    found). Unchanged when no name occurs."""
    text = unicodedata.normalize("NFKC", tldr)
    found: list[str] = []
    queue = list(names)
    while queue:
        name = queue.pop(0)
        pat = _pattern(name)
        if not _fold(name) or not pat.search(text):
            continue
        found.append(name)
        out, pos = [], 0
        for m in pat.finditer(text):
            acr = m.group("acr")
            if acr and acr not in found and acr not in queue and len(_fold(acr)) >= 2:
                queue.append(acr)
            before = text[pos:m.start()]
            after = text[m.end():]
            if _INTRO.search(before) and re.match(r"\s*,\s*(?:a|an|the)\s", after, re.I):
                out.append(before)  # "We propose X, a ..." -> "We propose a ..."
                pos = m.end() + len(re.match(r"\s*,\s*", after).group(0))
                out.append(" " if not before.endswith(" ") else "")
                continue
            if _INTRO.search(before):  # "We propose X, which ..." -> "... a method, which ..."
                out.append(before + "a method")
                pos = m.end()
                continue
            if _DETERMINER.search(before) and re.match(r"\s+[A-Za-z]", after):
                # "our X method", "the X Transform": the name goes
                out.append(before)
                pos = m.end() + len(re.match(r"\s*", after).group(0))
                continue
            start = not before.strip() or re.search(r"[.!?]\s*$", before)
            out.append(before + ("This work" if start else "this work"))
            pos = m.end()
        out.append(text[pos:])
        text = "".join(out)
    text = re.sub(r"\s+([,.;:!?])", r"\1", re.sub(r"\s{2,}", " ", text)).strip()
    return text, found


def tldr_queries(papers: list[dict], split: str = "dev", part: str | None = None) -> list[dict]:
    """One query per paper of ``split`` (and ``part``, :func:`part_of`) that has a TL;DR, names
    masked (module doc), in file order."""
    counts = name_counts(papers)
    out = []
    for p in papers:
        tldr = (p.get("tldr") or "").strip()
        if not tldr or split_of(p["id"]) != split or (part and part_of(p["id"]) != part):
            continue
        text, found = mask_names(tldr, coined_names(p["title"], counts))
        if len(text.split()) < MIN_WORDS:  # "MOSAIC" -> "This work": no question left
            continue
        out.append({"qid": f"tldr-{p['id']}", "type": "tldr", "question": text,
                    "gold": [p["id"]], "turns": None, "masked": found})
    return out


def read_papers(path: str | Path) -> list[dict]:
    """The paper objects of a JSONL paper list (blank lines skipped)."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()
            if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write author TL;DRs as eval query lines.")
    ap.add_argument("papers", help="paper list (JSONL with a 'tldr' field)")
    ap.add_argument("--split", choices=("dev", "heldout"), default="dev")
    ap.add_argument("--part", choices=("train", "aside"), default=None,
                    help="dev split only: md5 digit 0-5 (train) or 6-7 (aside)")
    ap.add_argument("--out", default="-", help="output JSONL (default stdout)")
    args = ap.parse_args(argv)
    rows = tldr_queries(read_papers(args.papers), args.split, args.part)
    text = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in rows)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
        masked = sum(bool(q["masked"]) for q in rows)
        print(f"{len(rows)} queries ({masked} with a coined name masked) -> {args.out}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
