"""Paper names: how a turn can name a paper, and an index of the names an index's papers use.

A coined method or model name (StepORLM, RFTHGS, Part-X-MLLM, llama3) is written in any case and
spacing, so names are compared folded (:func:`fold`). :class:`NameIndex` knows, for one list of
papers, the names their titles give their methods ("StepORLM: ..."), the name-like words of
their titles and abstracts (:func:`_coined`: CamelCase, five or more capitals, letters with
digits, capitals then lower case) that at most :data:`MAX_NAMED_PAPERS` papers use (a name many papers
use, such as GRPO or LoRA, is a topic, not a paper), and the first words of every title, so that
a turn quoting a title names its paper. :mod:`rag.understand.read` reads a turn's names through it;
:meth:`rag.retrieve.retriever.Retriever.named` ranks named papers first.

Building one takes about 4 s per 10,000 papers, so an index keeps it in its names file
(:data:`rag.paths.NAMES_FILE`, JSON): :func:`write_names` writes it at build time, beside BM25
(:func:`index.build.build_index` is given it by the front doors, since the write side does not
import the query side), and :meth:`NameIndex.load` reads it back only when it was made from the
same papers by the same code (:func:`papers_key`); an index without it (older, or built by code
that names papers differently) gets a fresh one, saved for the next reader.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import threading
import unicodedata
from functools import lru_cache
from itertools import compress
from pathlib import Path
from typing import Iterable, Sequence

from rag.paths import IndexPaths
from rag.types import Paper
from rag.understand.mentions import fold_name

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9+_.-]*[A-Za-z0-9+]|[A-Za-z0-9]")
#: A name-like word names papers when at most this many papers use it, and at most
#: :data:`MAX_NAMED_SHARE` of the index (in a 19-paper list, "LLM" in 3 papers is a topic).
MAX_NAMED_PAPERS = 3
MAX_NAMED_SHARE = 0.05
#: Words of a title that a turn must repeat, in order, to name the paper by its title.
TITLE_WORDS = 4
#: Most words of a title opening that :meth:`NameIndex.find` compares when the first
#: :data:`TITLE_WORDS` are shared by many titles.
LONG_TITLE_WORDS = 8
#: Longest plain title head (the words before ":") that names its paper: "Stable Video Infinity".
HEAD_WORDS = 4


#: Everyday words that some paper's name spells ("MoST", "MoRE", "ALL", "Even"): a turn names
#: such a paper only when it writes the word as a name (capitals, camel case), not as a word.
COMMON_WORDS = frozenset("""most more less least best worst all any some each every other same
    few much many first last next new old good great high low long short small large big fast
    slow open free clear simple real true even still just only also here there now then when
    where what which who why how one two three see look find show tell give make take get come
    know think want need use work help try ask like similar about over under after before since
    near top it this that these those them they well very really again ever never always often
    part whole both either neither such own right left back down up out off""".split())


def fold(text: str) -> str:
    """:func:`rag.understand.mentions.fold_name` of the NFKC form: names compare regardless of case,
    hyphens and spacing (``Part-X-MLLM``, ``part x mllm`` -> ``partxmllm``; ``F²SA`` -> ``f2sa``)."""
    return fold_name(unicodedata.normalize("NFKC", text))


def name_like(word: str) -> bool:
    """True for a word written like a coined method or model name: a capital right after a
    lower-case letter (StepORLM, LoRA, DreamOn, pySpatial), five or more capitals (RFTHGS; not
    the field's short acronyms: ECG, PSNR), letters with digits (llama3, Qwen2.5), or inner
    hyphens with a capital (Part-X-MLLM)."""
    letters = [c for c in word if c.isalpha()]
    if not letters:
        return False
    camel = any(a.islower() and b.isupper() for a, b in zip(word, word[1:]))
    caps = sum(c.isupper() for c in letters) >= 5 and all(c.isupper() for c in letters)
    digits = any(c.isdigit() for c in word) and len(letters) >= 2
    parts = [x for x in word.split("-") if x]
    hyphen = len(parts) >= 2 and sum(any(c.isupper() for c in x) for x in parts) >= 2
    return camel or caps or digits or hyphen


def question_names(question: str) -> list[str]:
    """The name-like words of ``question`` (:func:`name_like`), in order, at least 3 letters
    or digits long once folded."""
    return [w for w in WORD.findall(question) if name_like(w) and len(fold(w)) >= 3]


def title_name(title: str) -> str:
    """The folded name a title gives its method: the part before ":" when it is one
    :func:`name_like` word ("StepORLM: A Self-Evolving ..." -> ``steporlm``; not "Never
    Saddle: ..." or "Prism: ...", which are plain words), else ``""``."""
    head, sep, _ = title.partition(":")
    head = head.strip()
    if not sep or len(head.split()) != 1 or not name_like(head):
        return ""
    return fold(head)


def _plain(text: str) -> list[str]:
    """Lower-case ASCII words of ``text`` (accents and punctuation dropped), for title matches."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", folded)


_VERSION = re.compile(r"v?\d{1,3}")


def _unversioned(words: list[str]) -> list[str]:
    """``words`` (:func:`_plain`) without the version that ends them: ``pusa v1 0`` ->
    ``pusa``, ``omni 2`` -> ``omni``; a head that is only a version is kept."""
    end = len(words)
    while end > 1 and _VERSION.fullmatch(words[end - 1]):
        end -= 1
    return words[:end]


_CAPS_PREFIX = re.compile(r"^[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*$")
#: Every :func:`_coined` word has a digit or a capital after its first character (a camel hump,
#: five capitals, a capital in a second hyphenated part, two leading capitals): a regex test in
#: C that skips the plain words (most of an abstract) before the Python checks. On the 19,630
#: ICLR 2026 papers it takes NameIndex from 18.5 s to 6.0 s (the same index; 15.7 -> 3.5 s
#: before the title heads' pass), which every ask pays.
_MAY_BE_COINED = re.compile(r"\d|.[A-Z]")


def _coined(word: str) -> bool:
    """A word written like a coined name: :func:`name_like` (StepORLM, RFTHGS, Llama3,
    Part-X-MLLM), or capitals then lower case (DCFold, MMDiT); not a capitalised English word
    (After, NOT, XOR: under five capitals and nothing else)."""
    return name_like(word) or bool(_CAPS_PREFIX.match(word))


#: Version of the names file's layout (:meth:`NameIndex.save`).
FILE_FORMAT = 1


@lru_cache(maxsize=1)
def code_version() -> str:
    """sha256 prefix of the code a :class:`NameIndex` is made by: this module's source, the
    source of :func:`rag.understand.mentions.fold_name` and the Unicode database of ``unicodedata`` (NFKC,
    NFKD). A names file made by other code is not used (:meth:`NameIndex.load`), so a change
    to how names are found needs no version number bumped by hand."""
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(inspect.getsource(fold_name).encode())
    h.update(unicodedata.unidata_version.encode())
    return h.hexdigest()[:16]


def papers_key(papers: Iterable[Paper]) -> str:
    """sha256 prefix of what a :class:`NameIndex` is made of: each paper's id, title and
    abstract, in order (the order of its lists of ids), and :func:`code_version`. About 0.1 s
    for 19,630 papers."""
    h = hashlib.sha256(code_version().encode())
    for p in papers:
        h.update(f"{len(p.id)}:{p.id}{len(p.title)}:{p.title}{len(p.abstract)}:{p.abstract}"
                 .encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


class NameIndex:
    """The names the papers of one index use (see the module docstring). Build once per index
    (about 4 s per 10,000 papers on 2 cores), or read it from the index's names file
    (:meth:`load`); :meth:`find` is then a few dict lookups per word."""

    def __init__(self, papers: Iterable[Paper]):
        self.titles: dict[str, list[str]] = {}
        #: Folded title names whose title writes them in capitals (SPEED, MIMIC): plain words
        #: too, so they name a paper only when a turn writes them in capitals or like a name.
        self.capitals: set[str] = set()
        self.words: dict[str, set[str]] = {}
        self.prefixes: dict[tuple[str, ...], list[str]] = {}
        #: Longer title openings (5 to :data:`LONG_TITLE_WORDS` words) of the titles whose first
        #: :data:`TITLE_WORDS` words more than :data:`MAX_NAMED_PAPERS` titles share ("On the
        #: Convergence of Adam and Beyond": "On the Convergence of" opens dozens).
        self.long_prefixes: dict[tuple[str, ...], list[str]] = {}
        #: Folded one-word title heads of any kind ("Cactus: ...", "Prism: ..."): names only where
        #: a turn uses the word as a paper's name (a side of a comparison).
        self.heads: dict[str, list[str]] = {}
        #: Plain title heads ("Polar Express: ...", "Antislop: ...", "OPPO: ...") of 1 to
        #: :data:`HEAD_WORDS` words that no more than :data:`MAX_NAMED_PAPERS` papers say
        #: anywhere in their titles and abstracts: a rare phrase a title puts first is the
        #: paper's name (see :meth:`find` for how a turn must write a one-word head).
        self.head_phrases: dict[tuple[str, ...], list[str]] = {}
        papers = list(papers)
        heads: dict[tuple[str, ...], list[str]] = {}
        for p in papers:
            head = p.title.partition(":")[0]
            words = _plain(head)
            if words and words[0] in ("the", "a", "an"):
                words = words[1:]  # "The Polar Express: ..." is also "the Polar Express paper"
            if ":" in p.title and 1 <= len(words) <= HEAD_WORDS and len("".join(words)) >= 4:
                heads.setdefault(tuple(words), []).append(p.id)
                bare = _unversioned(words)  # "Pusa V1.0: ..." is also "Pusa"
                if bare != words and len("".join(bare)) >= 4:
                    heads.setdefault(tuple(bare), []).append(p.id)
        firsts = {h[0] for h in heads}
        # the words a longer head goes on from: past them no longer phrase can be a head
        leads = {h[:size] for h in heads for size in range(1, len(h))}
        said: dict[tuple[str, ...], set[str]] = {}
        for p in papers:
            words = _plain(f"{p.title} {p.abstract}")
            present = firsts.intersection(words)
            if not present:
                continue
            # the positions of those words, found in C (most of an abstract's words are not)
            for i in compress(range(len(words)), map(present.__contains__, words)):
                for size in range(1, HEAD_WORDS + 1):
                    key = tuple(words[i:i + size])
                    if len(key) < size:
                        break
                    if key in heads:
                        said.setdefault(key, set()).add(p.id)
                    if key not in leads:
                        break
        self.head_phrases = {k: v for k, v in heads.items()
                             if len(said.get(k, ())) <= MAX_NAMED_PAPERS}
        may_be_coined = _MAY_BE_COINED.search
        #: word as written -> its folded key when it is a coined name of 3+ characters, else
        #: None: the same words recur across abstracts (LLMs, GPT-4o), each is judged once
        coined: dict[str, str | None] = {}
        n = 0
        for p in papers:
            n += 1
            head = p.title.partition(":")[0].strip()
            if ":" in p.title and len(head.split()) == 1 and len(fold(head)) >= 3:
                self.heads.setdefault(fold(head), []).append(p.id)
            name = title_name(p.title)
            if len(name) >= 3:
                self.titles.setdefault(name, []).append(p.id)
                if p.title.partition(":")[0].strip().isupper():
                    self.capitals.add(name)
            for w in filter(may_be_coined, WORD.findall(f"{p.title} {p.abstract}")):
                key = coined.get(w, False)
                if key is False:
                    key = coined[w] = fold(w) if _coined(w) else None
                    if key is not None and len(key) < 3:
                        key = coined[w] = None
                if key is not None:
                    self.words.setdefault(key, set()).add(p.id)
            words = _plain(p.title)
            if len(words) >= TITLE_WORDS:
                self.prefixes.setdefault(tuple(words[:TITLE_WORDS]), []).append(p.id)
        most = max(1, min(MAX_NAMED_PAPERS, int(MAX_NAMED_SHARE * n)))
        self.words = {k: v for k, v in self.words.items() if len(v) <= most}
        for p in papers:
            words = _plain(p.title)
            if len(words) > TITLE_WORDS and \
                    len(self.prefixes.get(tuple(words[:TITLE_WORDS]), ())) > MAX_NAMED_PAPERS:
                key = tuple(words[:LONG_TITLE_WORDS])
                self.long_prefixes.setdefault(key, []).append(p.id)

    def find(self, text: str) -> list[tuple[str, tuple[int, int], list[str]]]:
        """The names of papers in ``text``: ``(words as written, character span, paper ids)``
        in text order, without overlaps: a title's name in 1-3 words ("part x mllm"), a
        name-like word at most :data:`MAX_NAMED_PAPERS` papers use ("RFTHGS"), the first
        :data:`TITLE_WORDS` words of a title, or a rare plain title head (:attr:`head_phrases`;
        one word only when the turn capitalises it: "Antislop", not "antislop")."""
        out: list[tuple[str, tuple[int, int], list[str]]] = []
        words = list(WORD.finditer(text))

        def free(a: int, b: int) -> bool:
            return not any(a < e and s < b for _, (s, e), _ in out)

        plain = [(m, _plain(m.group(0))) for m in re.finditer(r"\S+", text)]
        flat = [(m, w) for m, ws in plain for w in ws]
        for i in range(len(flat) - TITLE_WORDS + 1):
            key = tuple(w for _, w in flat[i:i + TITLE_WORDS])
            ids = self.prefixes.get(key)
            if ids and len(ids) <= MAX_NAMED_PAPERS:
                a, b = flat[i][0].start(), flat[i + TITLE_WORDS - 1][0].end()
                if free(a, b):
                    out.append((text[a:b], (a, b), list(ids)))
        for size in range(LONG_TITLE_WORDS, TITLE_WORDS, -1):  # "On the Convergence of Adam ..."
            for i in range(len(flat) - size + 1):
                ids = self.long_prefixes.get(tuple(w for _, w in flat[i:i + size]))
                a, b = flat[i][0].start(), flat[i + size - 1][0].end()
                if ids and len(ids) <= MAX_NAMED_PAPERS and free(a, b):
                    out.append((text[a:b], (a, b), list(ids)))
        for size in (3, 2, 1):
            for i in range(len(words) - size + 1):
                a, b = words[i].start(), words[i + size - 1].end()
                if not free(a, b):
                    continue
                said = "".join(w.group(0) for w in words[i:i + size])
                key = fold(said)
                if key not in self.titles and key.endswith("s") and key[:-1] in self.titles:
                    key = key[:-1]  # "la-proteinas setup", "StepORLM's results"
                ids = self.titles.get(key)
                if key in self.capitals and not (said.isupper() or name_like(said)):
                    continue  # "speed" is a word; "SPEED" may be the paper
                if key in COMMON_WORDS and not (said.isupper() or name_like(said)):
                    continue  # "most similar", "is X more popular": words, not MoST or MoRE
                if ids and len(ids) <= MAX_NAMED_PAPERS:
                    out.append((text[a:b], (a, b), list(ids)))
        for size in range(HEAD_WORDS, 0, -1):  # plain title heads: "the Polar Express paper"
            for i in range(len(flat) - size + 1):
                key = tuple(w for _, w in flat[i:i + size])
                ids = self.head_phrases.get(key)
                if not ids:
                    continue
                a, b = flat[i][0].start(), flat[i + size - 1][0].end()
                written = text[a:b]
                if size == 1 and not written[:1].isupper():
                    continue  # one plain word names a paper only written as a name: "Antislop"
                if free(a, b):
                    out.append((written.strip(".,;:!?()\"'“”"), (a, b), list(ids)))
        for m in words:
            if not free(*m.span()) or not _coined(m.group(0)):
                continue
            key = fold(m.group(0))
            if key not in self.words and key.endswith("s"):
                key = key[:-1]  # a possessive or plural of the name: "ThinKV's", "LoRAs"
            ids = self.words.get(key)
            if ids:
                out.append((m.group(0), m.span(), sorted(ids)))
        return sorted(out, key=lambda x: x[1])

    # -- the names file ---------------------------------------------------------------------------
    def save(self, path: Path, key: str, catalog: str = "") -> None:
        """Write this index to ``path`` (JSON, through a temporary file renamed over it) with
        ``key``, the :func:`papers_key` of the papers it was made from, and ``catalog``, the
        catalog fingerprint of the index they came from (:func:`write_names` compares it)."""
        data = {"format": FILE_FORMAT, "key": key, "catalog": catalog,
                "code": code_version(), "titles": self.titles,
                "capitals": sorted(self.capitals),
                "words": {k: sorted(v) for k, v in self.words.items()},
                "prefixes": [[list(k), v] for k, v in self.prefixes.items()],
                "long_prefixes": [[list(k), v] for k, v in self.long_prefixes.items()],
                "heads": self.heads,
                "head_phrases": [[list(k), v] for k, v in self.head_phrases.items()]}
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh, ensure_ascii=False, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    @staticmethod
    def _read(path: Path) -> dict | None:
        """The names file at ``path`` as saved, or None when it is missing, unreadable or of
        another :data:`FILE_FORMAT`."""
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") == FILE_FORMAT else None

    @classmethod
    def load(cls, path: Path, key: str) -> "NameIndex | None":
        """The index saved at ``path`` when it was made from the papers whose
        :func:`papers_key` is ``key`` (the same :meth:`find` results as ``NameIndex(papers)``),
        else None (missing, unreadable, other papers or other code). About 0.3 s for 19,630
        papers, against 8 s to build."""
        data = cls._read(path)
        if data is None or data.get("key") != key:
            return None
        try:
            out = cls.__new__(cls)
            out.titles = {k: list(v) for k, v in data["titles"].items()}
            out.capitals = set(data["capitals"])
            out.words = {k: set(v) for k, v in data["words"].items()}
            out.prefixes = {tuple(k): list(v) for k, v in data["prefixes"]}
            out.long_prefixes = {tuple(k): list(v) for k, v in data["long_prefixes"]}
            out.heads = {k: list(v) for k, v in data["heads"].items()}
            out.head_phrases = {tuple(k): list(v) for k, v in data["head_phrases"]}
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return out

    def ids(self, names: Sequence[str]) -> list[str]:
        """Paper ids the given names (as :meth:`find` returns them) point at, in order."""
        out: list[str] = []
        for name in names:
            for _, _, ids in self.find(name):
                out += [i for i in ids if i not in out]
        return out


def write_names(index_dir: Path, catalog: str) -> bool:
    """Write the names file of the index at ``index_dir`` (:func:`index.build.build_index` runs
    this beside BM25, once the catalog holds every paper), unless the file there was made from
    the catalog whose fingerprint is ``catalog`` by this code. The papers are the catalog's, in
    its order (the order :meth:`rag.retrieve.retriever.Retriever.open` reads them in). Returns True when
    it wrote the file."""
    from index.reader import open_catalog

    path = IndexPaths(index_dir).names
    saved = NameIndex._read(path)
    if saved is not None and catalog and saved.get("catalog") == catalog and \
            saved.get("code") == code_version():
        return False
    papers = [p for p, _ in open_catalog(index_dir).papers()]
    NameIndex(papers).save(path, papers_key(papers), catalog)
    return True
