"""Topic phrases of a turn: whether a query names a topic at all (:func:`has_topic`; "how many
papers?" does not) or only an aspect (:func:`names_only_an_aspect`), a new subject asked of the
previous question ("And for vision transformers?": :func:`new_subject`), and the topic of a
count question (:func:`count_topic`, :func:`topic_phrase`).
"""

from __future__ import annotations

import re


#: Words that ask for papers or counts without naming a topic (stemmed, as BM25 sees them).
_NO_TOPIC = frozenset("some few sever coupl pl pls plz plea pleas thank thx ty good interest cool nice "
                      "how mani number count total paper work submiss articl studi list show "
                      "give find tell me all ani there which what are were is was the in of "
                      "accept conferenc index corpus iclr year public entri lol haha thx ok okai "
                      "um uh hmm confer each from size big larg review score averag mean rate "
                      "rater across both reject oral poster spotlight withdrawn withdraw decis "
                      "iclr18 iclr26 time bigger smaller larger pool rough roughli approxim than s factor differ differenc harder hard easier get into go up "
                      "down percent percentag share".split())


#: Stemmed words that name an aspect (:data:`rag.understand.plan.ASPECTS`) or point at what has one
#: ("metrics", "limitations", "datasets they use"), as BM25 sees them.
_ASPECT_ONLY = frozenset("metric measur dataset benchmark data limit weak drawback result find "
                         "approach method techniqu evalu use about it its they them their those "
                         "these".split())


def names_only_an_aspect(text: str) -> bool:
    """True when ``text`` asks for an aspect and names nothing else ("and what metrics?";
    not "metrics for speech models"): :func:`has_topic`'s words, less the aspects'."""
    from rag.backends.lexical import query_terms

    return not set(query_terms(text)) - _NO_TOPIC - _ASPECT_ONLY


def has_topic(query: str) -> bool:
    """True when ``query`` (an :attr:`Intent.query`) names something to search for beyond
    "how many papers" / "list the papers"."""
    from rag.backends.lexical import query_terms

    return bool(set(query_terms(query)) - _NO_TOPIC)


# --- a new subject ----------------------------------------------------------------------------
# "And for vision transformers?", "What about diffusion models?", "How about in robotics?",
# "Same for GNNs?", "switch to X": the previous question's topic, asked of another subject.
_NEW_SUBJECT = re.compile(
    r"^\s*(?:(?:and|but|ok(?:ay)?|now|then|so),?\s+)?(?:(?:what|how)\s+about\s+(?:for\s+|in\s+|"
    r"on\s+|with\s+)?|(?:and|but|now|then)\s+(?:for|in|on|with|among)\s+|(?:the\s+)?same\s+"
    r"(?:\w+\s+)?(?:for|in|on|with)\s+|(?:and|now)\s+|"
    # "switch to climate downscaling", "ok, switch that to X", "let's move on to X"
    r"(?:let'?s\s+)?(?:switch(?:ing)?|chang(?:e|ing)|mov(?:e|ing)(?:\s+on)?)\s+(?:it\s+|that\s+|"
    r"this\s+|the\s+topic\s+|over\s+)?to\s+)(?P<s>[^?.!]{3,80}?)\s*[?.!]*\s*$", re.I)
#: Pronouns that make a subject point back rather than name a new one ("what about its results?").
_POINTS_BACK = re.compile(r"\b(?:it|its|they|them|their|this|that|these|those|the same)\b", re.I)


#: A subject that is only a year ("2026", "ICLR 2018", "the 2026 papers", "iclr2018").
_ONLY_A_YEAR = re.compile(r"^(?:the\s+)?(?:iclr[-\s]?)?(?:19|20)\d\d(?:\s+(?:papers?|ones|submissions?|"
                          r"list|conference|edition|instead|too|as\s+well))?$", re.I)


#: A subject that is only a decision ("posters", "the orals"): a filter, not a subject.
_ONLY_A_TIER = re.compile(r"^(?:the\s+)?(?:orals?|posters?|spotlights?|rejected(?:\s+ones)?|"
                          r"withdrawn(?:\s+ones)?|rejects|accepted(?:\s+ones)?)$", re.I)


def new_subject(text: str) -> str | None:
    """The new subject of a turn that keeps the previous question and changes what it is asked
    of ("And for vision transformers?" -> ``vision transformers``), or None. A subject that
    points back ("what about its results?", "and for that paper?") is none."""
    m = _NEW_SUBJECT.match(text)
    if not m:
        return None
    subject = m.group("s").strip()
    if _POINTS_BACK.search(subject) or _ONLY_A_YEAR.match(subject) or _ONLY_A_TIER.match(subject):
        return None  # ("same for 2026": the previous question in another year, not a subject)
    return subject


# --- the topic of a count ----------------------------------------------------------------------
# What a count question says before its topic: "how many papers are about", "number of works on"
#: What papers do to a topic in a count question ("papers that tackle X").
_COUNT_VERB = (r"about|on|studying|stud(?:y|ies|ied)|us(?:e|es|ed|ing)|propos(?:e|es|ed|ing)|"
               r"address(?:es|ed|ing)?|mention(?:s|ed|ing)?|concerning|regarding|related to|"
               r"deal(?:s|t|ing)? with|focus(?:es|ed|ing)? on|tackl(?:e|es|ed|ing)|"
               r"cover(?:s|ed|ing)?|explor(?:e|es|ed|ing)|investigat(?:e|es|ed|ing)|"
               r"look(?:s|ed)? at|work(?:s|ed|ing)? on|appl(?:y|ies|ied|ying)|"
               r"evaluat(?:e|es|ed|ing)|analy[sz](?:e|es|ed|ing)|introduc(?:e|es|ed|ing)|"
               r"develop(?:s|ed|ing)?|in")
_COUNT_LEAD = re.compile(
    r"^\s*(?:[\w',]+\s+){0,3}?(?:how many|the number of|number of|count(?: of)?|total of)\s+"
    r"(?P<pre>(?:[\w'-]+\s+){0,4}?)"
    r"(?:(?:papers?|works?|submissions?|articles?|studies|entries|publications)\b\s*|"
    r"(?<=many\s)(?=(?:are\s+there\s+)?(?:about|on|regarding|concerning)\s))"
    # "how many papers in total are on X"
    r"(?:(?:in\s+(?:total|all)|overall|altogether)\s+)?"
    r"(?:(?:are|were|is|was|did|do|have|has)\s+)?(?:there\s+)?(?:(?:in|at|from)\s+(?:this|the)\s+"
    r"(?:index|list|corpus|conference)\s+)?(?:(?:that\s+)?(?:are\s+|were\s+)?"
    # "use or study sparse autoencoders", "propose or evaluate X": two verbs before the topic
    r"(?:(?:" + _COUNT_VERB + r")\s+(?:or|and|and/or)\s+)?(?:" + _COUNT_VERB + r")\s+)?"
    # "propose methods for music generation": the methods are no part of the topic
    r"(?:(?:new\s+|novel\s+)?(?:methods?|approaches|techniques|ways|models)\s+(?:for|to)\s+)?",
    re.I)
_TRAILER = re.compile(r"(?:\s*(?:(?:in|at|from)?\s*(?:this|the)\s+(?:index|list|corpus|conference)|"
                      r"(?:got|get|were|was|are|have\s+been|has\s+been)\s+(?:in|accepted)|"
                      r"(?:at|in)\s+ICLR(?:\s+\d{4})?|(?:(?:are|were|is|was)\s+)?there(?:\s+are)?|"
                      # "how many offline RL papers in total at ICLR 2026?"
                      r"(?:in\s+)?(?:total|overall|altogether)))*"
                      r"\s*[?.!]*\s*$", re.I)
#: A preposition a topic was said with ("orals on diffusion language models" less its filter
#: leaves "on diffusion language models"): not part of the topic's phrase.
_TOPIC_LEAD = re.compile(r"^(?:(?:list|show|find|give)\s+(?:me\s+)?)?(?:(?:(?:any|the|all|some)\s+)?"
                         r"(?:papers?|works?|research|submissions?)\s+)?"
                         r"(?:about|on|regarding|concerning)\s+(?=\w)", re.I)
#: "GAN papers", "diffusion model submissions": the noun after a topic is no part of it.
_TOPIC_TAIL = re.compile(r"(?<=\w)\s+(?:papers?|works?|submissions?)\s*$", re.I)
#: Words before the noun that point at the set, not at a topic ("of the papers", "these").
_COUNT_SET = re.compile(r"^(?:(?:of|among)\s+)?(?:the|these|those|all|all\s+the)\s+|"
                        r"^(?:iclr|accepted)(?:\s+(?:iclr|accepted|(?:19|20)\d\d))*\s+", re.I)


#: "X, anything there?", "X - any?": asking whether there are papers, not part of the topic.
_ANY_THERE = re.compile(r"[\s,;:-]+(?:anything|any(?:one)?)(?:\s+(?:there|here|at\s+iclr\s*\d*))?"
                        r"\W*$", re.I)


def topic_phrase(query: str) -> str:
    """``query`` without a leading preposition (:data:`_TOPIC_LEAD`), a trailing "papers"
    (:data:`_TOPIC_TAIL`), a trailing "anything there?" (:data:`_ANY_THERE`) or a trailing
    question mark: "on diffusion language models", "papers on diffusion language models?" and
    "diffusion language models papers" -> "diffusion language models"."""
    return _TOPIC_TAIL.sub("", _TOPIC_LEAD.sub("", _ANY_THERE.sub("", query)).rstrip(" ?.!"))


#: The frame of a survey question around its topic ("Which papers study X?", "What work is there
#: on X?", "Find papers that use X", "papers proposing X").
_SURVEY_FRAME = re.compile(
    r"^\W*(?:(?:which|what)\s+(?:papers?|works?|research|studies)\s+(?:(?:are|is)\s+)?"
    r"(?:\w+ly\s+)?(?:stud(?:y|ies)|propos(?:e|es)|address(?:es)?|us(?:e|es)|tackl(?:e|es)|"
    r"explor(?:e|es)|investigat(?:e|es)|analy[sz](?:e|es)|improv(?:e|es)|do|deal\s+with|"
    r"focus\s+on|about|on)\s+|what\s+(?:work|research|papers?)\s+(?:is|are)\s+there\s+"
    r"(?:on|about)\s+|(?:find|show|list|give)\s+(?:me\s+)?(?:(?:the|some|all)\s+)?"
    r"(?:papers?|work)\s+(?:that\s+\w+|on|about)\s+|papers?\s+(?:proposing|studying|using)\s+)",
    re.I)


#: A request for a topic's papers in the plural: "which (ICLR 2026) papers study ...", "what works
#: ...", "I'm looking for work/papers on ..." (not "which paper", nor "which papers are by X").
_ASKS_PAPERS = re.compile(
    r"^\W*(?:(?:which|what)\s+(?:(?:iclr|accepted|oral|spotlight)\s+)*(?:(?:19|20)\d\d\s+)?"
    r"(?:papers|works|studies)\b(?!\s+(?:are|were|is|was|by|from|in|of|with|rated|got|have|did)\b)|"
    r"(?:i['’]?m|i\s+am)\s+(?:looking|searching)\s+for\s+(?:(?:recent|any|some)\s+)?"
    r"(?:work|papers|research)\b)", re.I)


def asks_for_papers(text: str) -> bool:
    """True when ``text`` asks for the papers on a topic in the plural (:data:`_ASKS_PAPERS`):
    "which ICLR 2026 papers study test-time scaling for code generation?", "I'm looking for
    work combining causal inference and LLMs"."""
    return bool(_ASKS_PAPERS.match(text))


def survey_topic(query: str) -> str:
    """The topic of a survey question, its frame and leading preposition taken off ("Which
    papers study scaling laws for data mixtures?" -> "scaling laws for data mixtures"), for an
    answer that names the topic; ``query`` itself (less a trailing "?") when it has no frame."""
    return topic_phrase(_SURVEY_FRAME.sub("", query).strip()) or topic_phrase(query)


def count_topic(question: str) -> str:
    """The topic of a count question: its words between "how many" and "papers" and after
    "papers are about", before "in this index?" ("How many papers are about reinforcement
    learning?" and "roughly how many machine unlearning papers got in?" -> "reinforcement
    learning", "machine unlearning"); ``""`` when there is none. A question without a count
    lead is returned without its trailer."""
    m = _COUNT_LEAD.match(question)
    if not m:
        return topic_phrase(_TRAILER.sub("", question).strip(" ,;:"))
    pre = _COUNT_SET.sub("", m.group("pre")).strip()
    rest = _TRAILER.sub("", question[m.end():]).strip(" ,;:")
    return " ".join(x for x in (pre, rest) if x)
