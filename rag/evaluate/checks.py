"""``paperchat eval FILE --checks``: run questions about the conference through the whole answer
path and score the checks each one names (``tests/data/dev_conference.jsonl``).

Line format: ``{"qid", "category", "question", "turns": null | [earlier turns], "expect": {...}}``
(``turns`` are asked first, in one conversation). Checks (all that a line names must hold):

* ``top1``: [ids] the first hit is one of them; ``in_top5``: [ids] one of them is in the top 5;
* ``refused``: bool;
* ``count``: int, the first number the answer states that is not one of the index's years ("ICLR
  2018 had 23 orals" counts 23); ``count_between``: [lo, hi], the same number;
* ``filters``: [str] each is in ``filters_applied``; ``no_filters``: true, none applied;
* ``hits_status``: a status word (``oral``, ``reject`` ...) every hit's decision has;
  ``hits_area``: the primary area of every hit; ``hits_rating_min``: every hit's mean rating
  is at least this; ``hits_rating_max``: at most this; ``hits_year``: the year every hit has;
  ``hits_venue``: a word every hit's venue has ("ICLR 2018", case-insensitive);
* ``year_counts``: {"YEAR": [lo, hi]}, the answer's count per year (its ``trend``) of each
  year named is within [lo, hi]; ``trend_direction``: "up" / "down" / "flat", the direction of
  the share from the first year to the last (:meth:`rag.conference.trends.Trend.direction`);
* ``sorted_by_rating``: true, the hits' mean ratings never increase (unrated last);
* ``no_hits``: true; ``kind``: the answer's kind;
* ``text_has``: [str] each occurs in the answer text (case-insensitive);
* ``standalone_has``: [str] each occurs in the standalone question; ``standalone_lacks``: [str];
* ``comparison``: [ids] the compared papers, exactly, in any order;
* ``within_previous``: true, every hit was among the previous answer's hits;
  ``top1_is_previous``: n, the first hit is hit number n of the previous answer;
* ``hits_min`` / ``hits_max``: n, bounds on the number of hits;
* ``text_has_any``: [str] at least one occurs in the answer text (case-insensitive);
* ``bibtex_for``: [ids] the answer text holds BibTeX entries (parsed with bibtexparser) for
  exactly these papers (an entry names its paper by the OpenReview id in its url);
* ``top1_rating``: x, the first hit's mean rating equals x (2 decimals).

The report gives the share of checks passed, per category and overall, and every failed check.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import PaperchatError
from rag.types import is_accepted, status_tier

if TYPE_CHECKING:
    from rag.settings import Settings


def load_checks(path: str | Path) -> list[dict]:
    """Read a checks file. Raises PaperchatError naming the line of a malformed entry."""
    from rag.evaluate.retrieval import read_objects

    return read_objects(path, lambda q: isinstance(q["question"], str)
                        and isinstance(q["expect"], dict) and bool(q["expect"]),
                        "a check object with 'question' and a non-empty 'expect'")


def _first_number(text: str, years: frozenset[int] | set[int] = frozenset()) -> int | None:
    """The first whole number of ``text`` that is not one of ``years`` (commas read as
    thousands separators), or None."""
    for m in re.finditer(r"\b(\d[\d,]*)\b", text):
        n = int(m.group(1).replace(",", ""))
        if n not in years:
            return n
    return None


def bibtex_ids(text: str) -> list[str]:
    """OpenReview ids of the BibTeX entries in ``text`` (from each entry's ``url`` field, read
    with bibtexparser); entries without such a url count as ``""``."""
    import bibtexparser

    found = []
    for block in re.findall(r"```(?:bibtex)?\n(.*?)```", text, re.S) or [text]:
        for entry in bibtexparser.parse_string(block).entries:
            url = entry.fields_dict.get("url")
            m = re.search(r"[?&]id=([\w-]+)", url.value if url else "")
            found.append(m.group(1) if m else "")
    return found


def check_answer(expect: dict, ans, previous=None,
                 years: frozenset[int] | set[int] = frozenset()) -> list[tuple[str, bool, str]]:
    """``(check name, passed, what was seen)`` for each check of ``expect`` on ``ans`` (an
    :class:`rag.types.Answer`); ``previous`` is the answer of the turn before (or None);
    ``years`` are the index's years, which ``count`` skips."""
    ids = [h.id for h in ans.hits]
    before = [h.id for h in previous.hits] if previous is not None else []
    out: list[tuple[str, bool, str]] = []

    def add(name, ok, seen):
        out.append((name, bool(ok), str(seen)[:200]))

    for name, want in expect.items():
        if name == "top1":
            add(name, ids[:1] and ids[0] in want, ids[:1])
        elif name == "in_top5":
            add(name, set(ids[:5]) & set(want), ids[:5])
        elif name == "refused":
            add(name, ans.refused == want, ans.refused)
        elif name == "count":
            n = _first_number(ans.text, years)
            add(name, n == want, n)
        elif name == "count_between":
            n = _first_number(ans.text, years)
            add(name, n is not None and want[0] <= n <= want[1], n)
        elif name == "filters":
            add(name, set(want) <= set(ans.filters_applied), ans.filters_applied)
        elif name == "no_filters":
            add(name, not ans.filters_applied, ans.filters_applied)
        elif name == "hits_status":
            tiers = [status_tier(h.paper.status) for h in ans.hits]
            want = str(want).lower()  # ("Oral" as a status word is "oral")
            ok = all(t == want or (want in ("accept", "accepted") and
                                   is_accepted(h.paper.status))
                     for t, h in zip(tiers, ans.hits))
            add(name, ans.hits and ok, tiers)
        elif name == "hits_year":
            add(name, ans.hits and all(h.paper.year == want for h in ans.hits),
                sorted({h.paper.year or 0 for h in ans.hits}))
        elif name == "year_counts":
            got = {str(r["year"]): r["n"] for r in (ans.trend or {}).get("years", [])}
            add(name, ans.trend is not None and all(
                str(y) in got and lo <= got[str(y)] <= hi for y, (lo, hi) in want.items()), got)
        elif name == "trend_direction":
            seen = (ans.trend or {}).get("direction")
            add(name, seen == want, seen)
        elif name == "hits_venue":
            add(name, ans.hits and all(str(want).lower() in (h.paper.venue or "").lower()
                                       for h in ans.hits),
                sorted({h.paper.venue for h in ans.hits}))
        elif name == "hits_area":
            add(name, ans.hits and all(h.paper.primary_area == want for h in ans.hits),
                sorted({h.paper.primary_area for h in ans.hits}))
        elif name in ("hits_rating_min", "hits_rating_max"):
            means = [(h.paper.rating or {}).get("mean") for h in ans.hits]
            ok = all(m is not None and (m >= want if name.endswith("min") else m <= want)
                     for m in means)
            add(name, ans.hits and ok, means)
        elif name == "sorted_by_rating":
            means = [(h.paper.rating or {}).get("mean", -1.0) for h in ans.hits]
            add(name, len(means) > 1 and all(a >= b for a, b in zip(means, means[1:])), means)
        elif name == "no_hits":
            add(name, not ans.hits, ids)
        elif name == "kind":
            add(name, ans.kind == want, ans.kind)
        elif name == "text_has":
            add(name, all(w.lower() in ans.text.lower() for w in want), ans.text[:200])
        elif name == "standalone_has":
            add(name, all(w.lower() in ans.standalone_question.lower() for w in want),
                ans.standalone_question)
        elif name == "standalone_lacks":
            add(name, not any(w.lower() in ans.standalone_question.lower() for w in want),
                ans.standalone_question)
        elif name == "comparison":
            add(name, set(ans.comparison_ids) == set(want), ans.comparison_ids)
        elif name == "within_previous":
            add(name, bool(ids) and set(ids) <= set(before) if want else True, ids)
        elif name == "top1_is_previous":
            add(name, bool(ids) and len(before) >= want and ids[0] == before[want - 1],
                (ids[:1], before[want - 1:want]))
        elif name == "hits_min":
            add(name, len(ids) >= want, len(ids))
        elif name == "hits_max":
            add(name, len(ids) <= want, len(ids))
        elif name == "text_has_any":
            add(name, any(w.lower() in ans.text.lower() for w in want), ans.text[:200])
        elif name == "bibtex_for":
            try:
                got = bibtex_ids(ans.text)
            except Exception as exc:  # noqa: BLE001 - an unparsable entry fails the check
                got = [f"unparsable: {exc}"]
            add(name, sorted(got) == sorted(want), got)
        elif name == "top1_rating":
            mean = (ans.hits[0].paper.rating or {}).get("mean") if ans.hits else None
            add(name, mean is not None and abs(mean - want) < 0.005, mean)
        else:
            raise PaperchatError(f"unknown check {name!r}")
    return out


def run_checks(path: str | Path, settings: Settings, *, pipeline=None,
               log=lambda m: None) -> dict:
    """Ask every question of the file (after its ``turns``) and score its checks.

    Returns ``{"n": questions, "checks": int, "passed": int, "share": float,
    "by_category": {CATEGORY: {"checks", "passed", "share"}}, "failures": [{"qid",
    "question", "check", "seen"}]}``.
    """
    from rag.chat.answer import answer
    from rag.chat.pipeline import Pipeline
    from rag.understand.history import turn_after

    rows = load_checks(path)
    pipe = pipeline or Pipeline(settings)
    years = frozenset(p.year for p in pipe.retriever.papers.values() if p.year)
    by_cat: dict[str, dict[str, int]] = {}
    failures = []
    for q in rows:
        history, prev = [], None
        for turn in q.get("turns") or []:
            prev = answer(turn, retriever=pipe.retriever, generator=pipe.generator,
                          settings=settings, history=history)
            history.append(turn_after(prev))
        ans = answer(q["question"], retriever=pipe.retriever, generator=pipe.generator,
                     settings=settings, history=history)
        cat = by_cat.setdefault(q.get("category", "other"), {"checks": 0, "passed": 0})
        for name, ok, seen in check_answer(q["expect"], ans, prev, years):
            cat["checks"] += 1
            cat["passed"] += ok
            if not ok:
                failures.append({"qid": q.get("qid", ""), "question": q["question"],
                                 "check": name, "seen": seen})
        log(f"{q.get('qid', '')}: {ans.kind}, {len(ans.hits)} hits")
    total = sum(c["checks"] for c in by_cat.values())
    passed = sum(c["passed"] for c in by_cat.values())
    for c in by_cat.values():
        c["share"] = round(c["passed"] / c["checks"], 3) if c["checks"] else 0.0
    return {"n": len(rows), "checks": total, "passed": passed,
            "share": round(passed / total, 3) if total else 0.0,
            "by_category": by_cat, "failures": failures}


def format_checks(report: dict) -> str:
    """The report as a table, failures listed after it."""
    lines = [f"{report['n']} questions, {report['passed']}/{report['checks']} checks passed "
             f"({report['share']:.3f})", f"{'category':14} {'checks':>6} {'passed':>6} {'share':>6}"]
    for cat, c in sorted(report["by_category"].items()):
        lines.append(f"{cat:14} {c['checks']:6d} {c['passed']:6d} {c['share']:6.3f}")
    for f in report["failures"]:
        lines.append(f"FAIL {f['qid']} {f['check']}: saw {f['seen']}  ({f['question'][:80]})")
    return "\n".join(lines)
