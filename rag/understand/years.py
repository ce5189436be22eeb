"""Years in a turn: whether it asks for an answer per year ("how many orals in 2018 vs 2026?",
"how did interest in GANs change since 2018?", "share of papers on GNNs per year"), the years
it compares, and the topic of such a question with its frame taken off.

A turn asks per year when it says so ("per year", "each year", "over the years", "trend"), when
it names two years or a year and "now" ("in 2018 or now", "now than in 2018"), or when it asks
how something changed since a year ("since 2018"). Two years said in a list request ("papers from
2018 and 2026 on GANs") ask for papers of both years, not a count per year: those need a count,
a comparison or a change word too (:func:`asks_per_year`).
"""

from __future__ import annotations

import re

_YEAR = r"(?:19|20)\d\d"
#: A breakdown asked in so many words.
_PER_YEAR = re.compile(
    r"\b(?:per|each|every|by|for\s+each)\s+(?:year|edition)\b|\byear[-\s]+(?:over|by|on|to)[-\s]+"
    r"year\b|\bover\s+the\s+years\b|\bacross\s+(?:the\s+)?(?:years|editions)\b|"
    r"\bthrough\s+the\s+years\b|(?<!series\s)(?<!seasonal\s)\btrend(?:s|ing|ed)?\b(?!\s+(?:"
    r"forecast|decompos|component|filter|estimat|extract|predict|follow|line))|\bthen\s+(?:and|vs\.?|"
    r"versus)\s+now\b|\bnow\s+(?:and|vs\.?|versus)\s+then\b|\bin\s+both\s+years\b", re.I)
#: Words of change or comparison that make two years, a year and "now", or "since YEAR" a
#: question per year.
_CHANGE = re.compile(
    r"\b(?:chang\w*|grow\w*|grew|declin\w*|evolv\w*|shift\w*|rise|rose|risen|rising|fall|fell|"
    r"fallen|drop\w*|increas\w*|decreas\w*|popular\w*|interest|share|proportion|fraction|"
    r"percent\w*|more|fewer|less|compar\w*|vs\.?|versus|how\s+many|number\s+of|count\w*|"
    r"differ\w*|went|gone|up|down)\b", re.I)
_NOW = re.compile(r"\b(?:now|today|nowadays|these\s+days|currently|this\s+year|anymore|"
                  r"recent(?:ly)?|lately)\b", re.I)
_SINCE = re.compile(rf"\bsince\s+(?:{_YEAR}|then)\b|\bfrom\s+{_YEAR}\s+(?:to|till|until|through)"
                    rf"\s+(?:{_YEAR}|now|today)\b|\bbetween\s+{_YEAR}\s+and\s+{_YEAR}\b", re.I)
_YEARS = re.compile(rf"(?<![\w.@/-])({_YEAR})(?![\w.@/-]*\d)")


def years_said(text: str) -> list[int]:
    """The four-digit years of ``text`` (1900-2099), in order, once each."""
    return list(dict.fromkeys(int(y) for y in _YEARS.findall(text)))


def asks_per_year(text: str) -> bool:
    """True when ``text`` asks for an answer per year (see the module docstring)."""
    if _PER_YEAR.search(text):
        return True
    said = years_said(text)
    change = bool(_CHANGE.search(text))
    if len(said) >= 2 and (change or _SINCE.search(text)):
        return True
    if said and _NOW.search(text) and change:
        return True
    return bool(_SINCE.search(text) and change)


#: Phrases of a per-year question around its topic, taken off anywhere in it.
_FRAME = re.compile(
    rf"\b(?:per|each|every|by|for\s+each)\s+(?:year|edition)\b|\byear[-\s]+(?:over|by|on|to)"
    rf"[-\s]+year\b|\bover\s+(?:the\s+)?(?:years|time)\b|\bacross\s+(?:the\s+)?(?:years|"
    rf"editions)\b|\bthrough\s+the\s+years\b|\bsince\s+(?:{_YEAR}|then)\b|\b(?:from|between)\s+"
    rf"(?:{_YEAR})?\s*(?:to|and|till|until|through)\s+(?:{_YEAR}|now|today)?\b|"
    rf"\b(?:in|of|for)\s+both\s+years\b|\bmore\s+or\s+less\b|\b(?:as\s+)?(?:a\s+)?"
    rf"(?:share|proportion|fraction|percentage)\s+of\s+(?:(?:all|the|each|that)\s+)?(?:year'?s?\s+)?"
    rf"(?:papers?|submissions?|works?|accepted\s+papers?)?\b|\b(?:in\s+)?(?:{_YEAR}|now|today|"
    rf"nowadays|these\s+days|this\s+year|back\s+then|then)\s*(?:,|\?|$)|\b(?:in\s+)?{_YEAR}\b|"
    rf"\b(?:vs\.?|versus|or|and|than|compared\s+(?:to|with))\s+(?:in\s+)?(?:now|today|"
    rf"nowadays|these\s+days|this\s+year|then)\b", re.I)
#: Words a per-year question's topic never starts or ends with.
_EDGE = frozenset("""how did does do has have had is are was were what what's whats which show
    me plot chart give tell the a an of on about in for to than then now today or and vs
    versus more fewer less many much papers paper works work submissions submission research
    interest popularity popular share proportion fraction percentage number count counts trend
    trends trending changed change changes grow grown grew growing declined decline declining
    evolved evolve evolving shifted shift rise rose risen fall fell drop dropped increase
    increased decrease decreased compare compared comparison since over time years year per each
    every by there been at iclr conference icrl between from till until through it its that
    this these those got get accepted topic topics field area on? went gone up down become
    became anymore nowadays still so really actually submitted published orals posters
    spotlights rated""".split())


#: Field acronyms a per-year topic is said by alone, spelled out: a count by meaning or by
#: phrase reads the words abstracts use ("reinforcement learning (RL)"), and the relevance
#: model cannot know that "RL" means them.
ACRONYMS = {"rl": "reinforcement learning", "marl": "multi-agent reinforcement learning",
            "rlhf": "reinforcement learning from human feedback",
            "gnn": "graph neural networks", "gnns": "graph neural networks",
            "vae": "variational autoencoders", "vaes": "variational autoencoders",
            "nlp": "natural language processing", "nas": "neural architecture search",
            "cnn": "convolutional neural networks", "cnns": "convolutional neural networks",
            "rnn": "recurrent neural networks", "rnns": "recurrent neural networks",
            "lstm": "LSTM", "nerf": "neural radiance fields", "nerfs": "neural radiance fields"}


def trend_topic(query: str) -> str:
    """The topic of a per-year question, its frame taken off ("how did interest in GANs change
    since" -> "GANs", "is meta-learning more or less popular now than in" -> "meta-learning",
    "share of papers on graph neural networks per year" -> "graph neural networks"; a topic
    that is a field acronym alone is spelled out: "RL" -> "reinforcement learning",
    :data:`ACRONYMS`); ``""`` when nothing is left (a count of the catalog per year)."""
    from rag.understand.topics import count_topic

    s = _FRAME.sub(" ", query)
    s = count_topic(s.strip()) or s
    words = s.replace("?", " ").replace("!", " ").split()
    while words and words[0].lower().strip(",.;:'\"") in _EDGE:
        words.pop(0)
    while words and words[-1].lower().strip(",.;:'\"") in _EDGE:
        words.pop()
    topic = " ".join(words).strip(" ,.;:'\"")
    return ACRONYMS.get(topic.lower(), topic)
