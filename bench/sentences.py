"""Sentence splitters scored on the labelled boundaries in tests/data/sentence_boundaries.jsonl.

Each case there is ``{"text": normalised abstract snippet, "sentences": [gold split], "tags": [...],
"source": "<file>#<paper id>" or "constructed"}``, hand-checked. For every splitter the script
prints, over all cases: the share of cases split exactly like the gold (``exact``) and boundary
precision / recall / F1 (a boundary is the count of non-whitespace characters before a sentence
start, so whitespace never matters). When ``../shared/data/iclr2026_accepted.jsonl`` is present it
also runs every splitter over all its normalised abstracts: speed (median of 3 passes: sentences/s,
mean and median ms per abstract), ``broken`` (abstracts whose sentences are not, in order, the
input's non-whitespace characters), and two error counts that need no labels, lower bounds:
``missed`` (inside one sentence, a full stop after a lower-case letter, digit or ")" followed by a
frequent sentence opener such as "We", "Our", "The", "However": a missed boundary) and ``bad cut``
(a sentence, not an abstract's last, ending in ":", ";", "," or an abbreviation such as "e.g.",
"et al.", "U.S.", "Dr.": a false boundary).

``--errors NAME`` lists one splitter's wrong labelled cases; ``--disagree N`` lists N random
boundaries over the abstracts where ``current`` and ``regex`` differ (to judge by hand).

Splitters: ``current`` is :func:`rag.text.split_sentences` as it is now; ``regex`` the rule-based
splitter it replaced (kept here, :func:`regex_split`, as the baseline); ``pysbd`` (``clean=False``,
English), ``sentencex`` (``"en"``, without rag.text's fixes) and ``syntok``. A library that is
not installed is skipped:

    .venv/bin/pip install pysbd sentencex syntok
    .venv/bin/python bench/sentences.py [--errors current] [--disagree 40] [--no-speed]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "data" / "sentence_boundaries.jsonl"
ACCEPTED = ROOT.parent / "shared" / "data" / "iclr2026_accepted.jsonl"

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

Splitter = Callable[[str], list[str]]

# --- the splitters -------------------------------------------------------------------------------
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9$\\])")
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|et al|vs|cf|Fig|Eq|resp|approx|etc)\.$", re.I)


def regex_split(text: str) -> list[str]:
    """The rule-based splitter rag.text used before (verbatim): split at ``.!?`` + space +
    upper-case letter, digit or opening bracket, then re-join pieces that end in an abbreviation."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _pysbd() -> Splitter:
    import pysbd

    seg = pysbd.Segmenter(language="en", clean=False)
    return lambda text: [s.strip() for s in seg.segment(text) if s.strip()]


def _sentencex() -> Splitter:
    from sentencex import segment

    return lambda text: [s.strip() for s in segment("en", text) if s.strip()]


def _syntok() -> Splitter:
    from syntok import segmenter

    def split(text: str) -> list[str]:  # cut the input at token offsets: nothing re-spelled
        out = []
        for paragraph in segmenter.analyze(text):
            for sent in paragraph:
                s = text[sent[0].offset:sent[-1].offset + len(sent[-1].value)].strip()
                if s:
                    out.append(s)
        return out

    return split


def splitters() -> dict[str, Splitter]:
    from rag.text import split_sentences

    out: dict[str, Splitter] = {"current": split_sentences, "regex": regex_split}
    for name, make in (("pysbd", _pysbd), ("sentencex", _sentencex), ("syntok", _syntok)):
        try:
            out[name] = make()
        except ImportError:
            print(f"({name} is not installed: skipped)", file=sys.stderr)
    return out


# --- scoring -------------------------------------------------------------------------------------
def _nows(s: str) -> str:
    return re.sub(r"\s+", "", s)


def boundaries(sentences: list[str]) -> set[int]:
    """Sentence starts after the first, as counts of non-whitespace characters before them."""
    out, n = set(), 0
    for s in sentences[:-1]:
        n += len(_nows(s))
        out.add(n)
    return out


def keeps_text(text: str, sentences: list[str]) -> bool:
    """The contract: non-empty stripped sentences that are, in order, the input's non-whitespace
    characters."""
    return (all(s and s == s.strip() for s in sentences)
            and _nows("".join(sentences)) == _nows(text))


def load_labelled(path: Path = LABELLED) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def score(split: Splitter, cases: list[dict]) -> dict:
    exact = tp = fp = fn = 0
    wrong = []
    for case in cases:
        got = split(case["text"])
        exact += got == case["sentences"]
        if got != case["sentences"]:
            wrong.append((case, got))
        g, p = boundaries(case["sentences"]), boundaries(got)
        tp, fp, fn = tp + len(g & p), fp + len(p - g), fn + len(g - p)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"exact": exact, "cases": len(cases), "precision": precision, "recall": recall,
            "f1": f1, "wrong": wrong}


#: A full stop closing a sentence, then a frequent sentence opener: a boundary not to miss.
_SURE_MISS = re.compile(
    r"[a-z0-9)][.!?][\"”’)]? (?:We|Our|The|This|These|In this|To|However|Finally|Moreover|"
    r"Furthermore|Experiments|Extensive|Code|Specifically|Additionally) ")
#: A sentence (not the last) ending like this was cut where no sentence ends.
_SURE_BAD_CUT = re.compile(
    r"(?:\be\.g\.|\bi\.e\.|\bet al\.|\bvs\.|U\.S\.|\bresp\.|\bcf\.|\bFig\.|\bEq\.|\bDr\.|"
    r"\babbr\.|\bavg\.|\ba\.k\.a\.|\bapprox\.|[:;,])$")


def corpus_errors(split: Splitter, abstracts: list[str]) -> dict:
    missed = bad_cut = broken = 0
    for a in abstracts:
        got = split(a)
        broken += not keeps_text(a, got)
        missed += sum(len(_SURE_MISS.findall(s)) for s in got)
        bad_cut += sum(bool(_SURE_BAD_CUT.search(s)) for s in got[:-1])
    return {"broken": broken, "missed": missed, "bad_cut": bad_cut}


def disagreements(a: Splitter, b: Splitter, abstracts: list[str], n: int,
                  seed: int = 0) -> list[str]:
    """``n`` random boundaries (with context) found by exactly one of ``a`` and ``b``."""
    def context(text: str, k: int) -> str:
        seen = 0
        for pos, ch in enumerate(text):
            if seen == k:
                break
            seen += not ch.isspace()
        return f"{text[max(0, pos - 80):pos].lstrip()} ‖ {text[pos:pos + 40].rstrip()}"

    rows = []
    for text in abstracts:
        ba, bb = boundaries(a(text)), boundaries(b(text))
        rows += [f"only current: {context(text, k)}" for k in sorted(ba - bb)]
        rows += [f"only regex:   {context(text, k)}" for k in sorted(bb - ba)]
    random.Random(seed).shuffle(rows)
    return rows[:n]


def load_abstracts() -> list[str]:
    from rag.text import normalise

    with ACCEPTED.open(encoding="utf-8") as f:
        return [normalise(json.loads(line)["abstract"] or "") for line in f if line.strip()]


def speed(split: Splitter, abstracts: list[str], runs: int = 3) -> dict:
    """Median of ``runs`` passes over all abstracts; the per-abstract median from that pass (the
    slowest abstract is not shown: on a shared machine it measures other processes)."""
    passes = []
    for _ in range(runs):
        per, n = [], 0
        start = time.perf_counter()
        for a in abstracts:
            t = time.perf_counter()
            n += len(split(a))
            per.append(time.perf_counter() - t)
        passes.append((time.perf_counter() - start, n, per))
    total, n, per = sorted(passes, key=lambda p: p[0])[len(passes) // 2]
    return {"sent_per_s": n / total, "mean_ms": 1000 * total / len(abstracts),
            "median_ms": 1000 * statistics.median(per), "sentences": n}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--errors", metavar="NAME", help="list this splitter's wrong cases")
    p.add_argument("--disagree", type=int, metavar="N",
                   help="list N random boundaries that current and regex differ on")
    p.add_argument("--no-speed", action="store_true", help="skip the passes over all abstracts")
    args = p.parse_args(argv)

    cases = load_labelled()
    abstracts = load_abstracts() if ACCEPTED.exists() and not args.no_speed else []
    print(f"{len(cases)} labelled cases, {sum(len(c['sentences']) for c in cases)} sentences "
          f"({LABELLED.relative_to(ROOT)})" + (f"; speed over {len(abstracts):,} abstracts"
                                                 if abstracts else "; no speed pass"))
    head = f"{'splitter':10} {'exact':>11} {'P':>6} {'R':>6} {'F1':>6}"
    if abstracts:
        head += (f" {'sent/s':>9} {'ms/abs':>7} {'med ms':>7} {'broken':>6} {'missed':>6}"
                 f" {'bad cut':>7}")
    print(head)
    results = {}
    for name, split in splitters().items():
        r = results[name] = score(split, cases)
        line = (f"{name:10} {r['exact']:>3}/{r['cases']:<3} {r['exact'] / r['cases']:4.0%} "
                f"{r['precision']:6.3f} {r['recall']:6.3f} {r['f1']:6.3f}")
        if abstracts:
            s, e = speed(split, abstracts), corpus_errors(split, abstracts)
            line += (f" {s['sent_per_s']:9,.0f} {s['mean_ms']:7.3f} {s['median_ms']:7.3f}"
                     f" {e['broken']:6} {e['missed']:6} {e['bad_cut']:7}")
        print(line, flush=True)
    if args.errors:
        for case, got in results[args.errors]["wrong"]:
            print(f"\n{case['source']} {case['tags']}")
            for s in case["sentences"]:
                print(f"  gold | {s}")
            for s in got:
                print(f"  got  | {s}")
    if args.disagree and not (abstracts or ACCEPTED.exists()):
        print(f"\n--disagree needs {ACCEPTED}")
    elif args.disagree:
        split = splitters()
        texts = abstracts or load_abstracts()
        print()
        for row in disagreements(split["current"], split["regex"], texts, args.disagree):
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
