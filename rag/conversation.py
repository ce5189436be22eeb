"""Turn a chat turn into what retrieval needs: follow-ups made standalone, comparisons split.

Both paths are rule-based on purpose: the bundled 135M model cannot be trusted to rewrite a
question, and a wrong rewrite would send retrieval after the wrong paper. A follow-up ("what
baselines did they beat?") is recognised by its anaphora (it, they, their, this paper, the
method ...) and the absence of its own topic, and is rewritten by naming the paper under discussion
(the first paper cited in the previous answer, else its top hit). A comparison ("how does A differ
from B", "compare A with B", "A vs B") is split into its sides, each retrieved on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.types import Paper

_ANAPHORA = re.compile(
    r"\b(?:it|its|it's|they|them|their|theirs|he|she|the same|(?:this|that)(?=\s+(?:is|was|does|do|"
    r"did|give|gives|mean|means|work|works|help|helps|hold|holds|scale|scales|require|requires|"
    r"depend|depends|apply|applies|change|changes|matter|matters|affect|affects|cost|costs)\b|\s*[?.!,]|$)"
    r"|(?:this|that|these|those|the|both|either) (?:paper|papers|method|methods|model|models|approach|"
    r"authors|work|works|framework|algorithm|system|technique|one|ones|study|result|results|"
    r"benchmark|dataset))\b", re.I)
_TOPIC_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9-]{3,}")
_STOP = set("""what which when where does did do done have has had been being their there they them
this that these those with from into about than then also only some such more most much many how
why who whom whose will would could should might must shall can paper papers method methods model
models approach work authors used uses using make makes made show shows shown result results
compare compared comparison against baseline baselines beat does always sometimes case cases
other another each every just like same different differ between better worse well were was
anything something thing things turn think thought found find report reported really actually
still even ever never very case""".split())

_COMPARE = [
    re.compile(r"^\s*(?:how|in what ways?|where)\s+(?P<v>does|do|did|is|are)\s+(?P<a>.+?)\s+"
               r"(?:differ|compare|contrast|relate)\w*\s+(?:from|with|to|against|and)\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^\s*(?:compare|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against|versus|vs\.?)\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^\s*(?:what(?:'s| is| are) the differences?\s+between)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    re.compile(r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?)\s*[?.!]*\s*$", re.I),
    # "Which is better: the paper that does A, or the one that does B?" (sides described, not
    # named: each must be a clause of OR_SIDE_WORDS words or more, see split_comparison)
    re.compile(r"^\s*(?:which\s+(?:one\s+|paper\s+|method\s+|approach\s+)?(?:is|works|"
               r"performs|should I (?:use|pick|read))\s+(?:better|best|stronger|faster|more \w+)?"
               r"\s*[:,-]?\s*)?(?P<a>(?:the|a)\s+.+?),?\s+or\s+(?P<b>(?:the|a)\s+.+?)"
               r"\s*[?.!]*\s*$", re.I),
]
#: Words each side of an "A or B" comparison needs (shorter "X or Y" is a topic: "papers on
#: pruning or quantization").
OR_SIDE_WORDS = 6


@dataclass
class Turn:
    """One earlier exchange: the user's question and the papers the answer cited (best first),
    or its top hits when it cited none. The first ``focus`` papers are the ones under discussion
    (the best match; after a comparison, every compared paper): a follow-up is about them."""

    question: str
    standalone: str = ""
    papers: list[Paper] = field(default_factory=list)
    focus: int = 1
    #: The papers as the answer numbered them ([n] in its text and cards), for "the second paper".
    numbered: dict[int, Paper] = field(default_factory=dict)

    @property
    def discussed(self) -> list[Paper]:
        """The papers under discussion (at least the first paper, when there is one)."""
        return self.papers[:max(1, self.focus)]


_NEW_TOPIC = re.compile(r"^\s*(?:(?:is|are) there|any(?:one|body)?\b|find|list|show me|search|"
                        r"(?:which|what) (?:papers?|works?|methods?|approaches|studies|research)\b|"
                        r"(?:papers|works|studies) (?:that|which|on|about|using|with)\b)", re.I)


def turn_after(answer) -> Turn:
    """The :class:`Turn` an :class:`rag.types.Answer` leaves for follow-ups: the papers it is
    about (``answer.about_ids``, in that order) then its other cited papers, else its hits (none
    for a refusal: no paper is under discussion). ``focus`` is the number of papers it is about
    (at least 1). The UI's history and ``paperchat eval --answers`` both keep this."""
    if answer.refused:
        return Turn(answer.question, answer.standalone_question, [])
    by_id = {h.id: h.paper for h in answer.hits}
    about = [by_id[i] for i in dict.fromkeys(answer.about_ids) if i in by_id]
    ids = {p.id for p in about}
    cited = [c.paper for c in answer.citations if c.paper.id not in ids]
    papers = (about + cited) or [h.paper for h in answer.hits]
    numbered = {n: h.paper for n, h in enumerate(answer.hits, start=1)}
    numbered.update({c.n: c.paper for c in answer.citations})
    return Turn(answer.question, answer.standalone_question, papers, focus=len(about) or 1,
                numbered=numbered)


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5}
#: A paper of the previous answer by its position: "the second paper", "the first one", "[3]",
#: "paper 2"; not "the first paper to/that/on ..." (a question of its own).
_BY_POSITION = re.compile(
    r"\b(?:the\s+)?(first|second|third|fourth|fifth)\s+(?:one|paper|work|method|approach|model)s?\b"
    r"(?!\s+(?:to|that|which|who|on|about|in|with|using)\b)"
    r"|\bthe\s+(first|second|third|fourth|fifth)\b(?=\s*(?:[?.,]|$))"
    r"|\[(\d{1,2})\]|\bpaper\s+(\d{1,2})\b", re.I)


def papers_by_position(question: str, turn: Turn) -> list[Paper]:
    """The papers of ``turn`` that ``question`` names by their number in its answer ("how does
    the first one differ from the second?", "[1] vs [3]", "paper 2"), in the question's order,
    without repeats; numbers the answer did not show are ignored."""
    found: list[Paper] = []
    for m in _BY_POSITION.finditer(question):
        word = m.group(1) or m.group(2)
        n = _ORDINALS[word.lower()] if word else int(m.group(3) or m.group(4))
        paper = turn.numbered.get(n)
        if paper is not None and paper not in found:
            found.append(paper)
    return found


def is_followup(question: str) -> bool:
    """True when the question leans on an earlier turn.

    Either it refers back (it, they, their, this method, the authors ...) and names little of its
    own topic (at most 8 content words of 4+ letters outside a stop list), or it is short on topic
    (at most 5 content words) and does not open a new search ("Which papers ...", "Is there ...",
    "Any work on ...").
    """
    content = [w for w in _TOPIC_WORDS.findall(question) if w.lower() not in _STOP]
    if _ANAPHORA.search(question):
        return len(content) <= 8
    return not _NEW_TOPIC.match(question) and len(content) <= 5


def standalone_question(question: str, history: list[Turn]) -> tuple[str, Paper | None]:
    """The standalone question shown to the user, and the paper a follow-up is about (or None).

    A follow-up with history becomes ``"<question> (about: <title>; <title>)"``, naming every
    paper under discussion (:attr:`Turn.discussed`: after a comparison, all compared papers);
    anything else is returned unchanged. The paper returned is the first of them; all of them
    are :func:`discussed_papers`. Retrieval uses :func:`retrieval_query`.
    """
    papers = discussed_papers(question, history)
    if not papers:
        return question, None
    return f"{question.rstrip()} (about: {'; '.join(p.title for p in papers)})", papers[0]


def discussed_papers(question: str, history: list[Turn]) -> list[Paper]:
    """The papers a follow-up ``question`` is about (empty when it is not a follow-up): the ones
    it names by number ("the second paper", :func:`papers_by_position`), else the papers under
    discussion."""
    if not history:
        return []
    named = papers_by_position(question, history[-1])
    if named:
        return named
    if not history[-1].papers or not follows(question, history[-1]):
        return []
    return history[-1].discussed


#: A name in a question: CamelCase (StepORLM), an acronym of 3+ capitals (GRPO, RFTHGS), or a
#: word with letters and digits (Llama3, F2SA).
_NAME = re.compile(r"\b(?:[A-Za-z]*[a-z][A-Z][A-Za-z0-9-]*|[A-Z][A-Z0-9-]{2,}[a-z]*|"
                   r"[A-Za-z]+[0-9][A-Za-z0-9-]*)\b")


def fold_name(text: str) -> str:
    """``text`` lower-cased without anything but letters and digits, so that names compare
    regardless of case, hyphens and spacing ("Part-X-MLLM" and "part x mllm" -> "partxmllm")."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def new_names(question: str, papers: list[Paper]) -> list[str]:
    """Names in ``question`` (:data:`_NAME`) that occur in none of ``papers``' titles and
    abstracts (case and hyphens ignored): a question naming something else is not about them."""
    fold = fold_name
    corpus = fold(" ".join(f"{p.title} {p.abstract}" for p in papers))
    return [n for n in _NAME.findall(question) if fold(n) and fold(n) not in corpus]


#: Anaphora that can only point back: pronouns and "this/that/these/those/both ... paper". ("the
#: authors", "the method" may as well open a new question: "Who are the authors of the DreamOn
#: paper?")
_STRONG_ANAPHORA = re.compile(
    r"\b(?:it|its|it's|they|them|their|theirs|the same|(?:this|that)(?=\s+(?:is|was|does|do|"
    r"did|give|gives|mean|means|work|works|help|helps|hold|holds|scale|scales|require|requires|"
    r"depend|depends|apply|applies|change|changes|matter|matters|affect|affects|cost|costs|cut|"
    r"cuts)\b|\s*[?.!,]|$)|(?:this|that|these|those|both|either) (?:paper|papers|method|methods|"
    r"model|models|approach|authors|work|works|framework|algorithm|system|technique|one|ones|study|"
    r"result|results|benchmark|dataset|combination|picture))\b", re.I)


def refers_back(question: str) -> bool:
    """True when the question holds an anaphor that can only point to an earlier turn, or names
    a paper of it by number ("the second paper", "[3]": :data:`_BY_POSITION`)."""
    return bool(_STRONG_ANAPHORA.search(question) or _BY_POSITION.search(question))


def follows(question: str, turn: Turn) -> bool:
    """True when ``question`` is a follow-up of ``turn``: :func:`is_followup`, and, when it does
    not refer back (:func:`refers_back`: "it", "they", "that paper" ...), it names nothing the
    papers under
    discussion do not mention ("What does StepORLM propose?" after an answer about another paper
    is a new question; "Can it wrap others like DPO?" still asks about the last paper)."""
    if not is_followup(question):
        return False
    return refers_back(question) or not new_names(question, turn.discussed)


# "And for vision transformers?", "What about diffusion models?", "How about in robotics?",
# "Same for GNNs?": the previous question's topic, asked of another subject.
_NEW_SUBJECT = re.compile(
    r"^\s*(?:(?:and|but|ok(?:ay)?|now|then),?\s+)?(?:(?:what|how)\s+about\s+(?:for\s+|in\s+|on\s+|"
    r"with\s+)?|(?:and|but|now|then)\s+(?:for|in|on|with|among)\s+|(?:the\s+)?same\s+(?:for|in|on|"
    r"with)\s+)(?P<s>[^?.!]{3,80}?)\s*[?.!]*\s*$", re.I)


def new_subject(question: str) -> str | None:
    """The new subject of a question that keeps the previous topic and changes what it is asked
    of ("And for vision transformers?" -> ``vision transformers``), or None. A subject that
    points back ("what about its results?", "and for that paper?") is no new subject: it is a
    follow-up about the papers under discussion."""
    m = _NEW_SUBJECT.match(question)
    if not m:
        return None
    subject = m.group("s").strip()
    if _STRONG_ANAPHORA.search(subject) or _ANAPHORA.search(subject):
        return None
    return subject


def with_new_subject(question: str, history: list[Turn]) -> str | None:
    """The standalone question of a change of subject (:func:`new_subject`): the previous
    turn's standalone question with the new subject ("Which papers study KV cache compression?"
    then "And for vision transformers?" -> "Which papers study KV cache compression for vision
    transformers?"); the previous turn's own change of subject is replaced, not stacked. None
    when the question is no change of subject or there is no previous turn."""
    subject = new_subject(question)
    if not subject or not history:
        return None
    base = (history[-1].standalone or history[-1].question).strip()
    earlier = new_subject(history[-1].question)
    if earlier and base.rstrip(" ?.!").endswith(f" for {earlier}"):
        base = base.rstrip(" ?.!")[: -len(f" for {earlier}")]
    return f"{base.rstrip(' ?.!')} for {subject}?"


def retrieval_query(question: str, history: list[Turn]) -> str:
    """The text retrieval runs for a turn: a follow-up is searched together with the previous
    turn's (standalone) question, which names its topic in the user's own words; measured on
    dev_hard's follow-ups this finds the paper under discussion in the top 5 every time, where
    the title of the previous top hit alone drags in that hit's errors."""
    if not history or not follows(question, history[-1]):
        return question
    prev = history[-1].standalone or history[-1].question
    return f"{prev} {question}"


def split_comparison(question: str) -> list[str] | None:
    """The sides of a comparison question (2 or more), or None if it is not one.

    "How does A differ from B?" -> [A, B]; "Compare A, B and C" -> [A, B, C]. A side must be two
    words or more, or one name-like word such as ``StepORLM`` (else it is likely not a comparison
    of papers: "how does it compare to this?").
    """
    for pattern in _COMPARE:
        m = pattern.match(question)
        if not m:
            continue
        a, b = m.group("a"), m.group("b")
        if pattern is _COMPARE[3] and len(a.split()) > 3 * len(b.split()):
            continue  # "teaching X ... with RL versus plain SFT": one topic, two settings
        if pattern is _COMPARE[-1] and min(len(a.split()), len(b.split())) < OR_SIDE_WORDS:
            continue
        # "A, B and C" lists several papers on the first side; "on- and off-policy" (a hyphen
        # before "and") and a first side without a comma ("the paper on X and Y") are one paper
        plural = (m.groupdict().get("v") or "do").lower() in ("do", "are", "did")
        listed = "," in a and plural
        sides = ([s.strip(" ,;") for s in re.split(r",\s*(?:and\s+)?|(?<!-)\s+and\s+", a)]
                 if listed else [a]) + [b]
        if len(sides) > 2 and not all(_side_ok(s) for s in sides):
            sides = [a, b]
        sides = [re.sub(r"^(?:the|a|an)\s+(?:paper|work|method|approach|one|model|technique|"
                        r"framework|system|study|algorithm)\s+(?:on|about|that|which|where|"
                        r"proposing)?\s*", "", s, flags=re.I) or s for s in sides]
        if all(_side_ok(s) for s in sides):
            return sides
    return None


def _side_ok(side: str) -> bool:
    """A comparison side names a paper: two words or more, or one name-like word (StepORLM,
    GRPO, F2SA: a capital after the first letter, or a digit)."""
    words = side.split()
    if len(words) >= 2:
        return True
    return len(words) == 1 and len(words[0]) >= 3 and bool(re.search(r"^.+[A-Z0-9]", words[0]))


_COMPARE_PREVIOUS = re.compile(
    r"^\s*(?:(?:compare|contrast)\s+(?:these|those|the|them|both|all)\b|how\s+do\s+(?:these|those|they|"
    r"the)\b.*\b(?:differ|compare)|what(?:'s| is| are) the differences?\s+between\s+(?:them|these|"
    r"those|the))", re.I)
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "both": 2}
#: "Compare the papers on X": papers of a topic of its own, a new search (read in the browser:
#: "Compare the papers on test-time scaling for reasoning" compared the previous protein papers).
_COMPARE_CUE = re.compile(r"\b(?:differ\w*|difference\w*|compar\w*|contrast\w*|versus|vs\.?)(?!\w)",
                          re.I)
_OWN_TOPIC = re.compile(r"^\s*(?:compare|contrast)\s+the\s+(?:papers|works|methods|approaches|"
                        r"models)\s+(?:on|about|that|which|using)\b", re.I)


def previous_papers_to_compare(question: str, history: list[Turn]) -> list[Paper] | None:
    """Papers of the previous answer when the question asks to compare them without naming them
    ("compare these three papers", "how do they differ?"); None otherwise or with fewer than two.

    The count comes from a number word or digit in the question (2-5), else up to three.
    """
    if not history:
        return None
    named = papers_by_position(question, history[-1])
    if len(named) >= 2 and _COMPARE_CUE.search(question):  # "how does the first differ from [3]?"
        return named
    if not _COMPARE_PREVIOUS.match(question) or _OWN_TOPIC.match(question):
        return None
    papers = history[-1].papers
    n = 3
    for word, value in _NUMBER_WORDS.items():
        if re.search(rf"\b{word}\b", question, re.I):
            n = value
    digit = re.search(r"\b([2-5])\b", question)
    if digit:
        n = int(digit.group(1))
    chosen = papers[:n]
    return chosen if len(chosen) >= 2 else None
