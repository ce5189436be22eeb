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

from rag.understand.filter_words import SHORT_YEAR

_YEAR = r"(?:19|20)\d\d"
#: A breakdown asked in so many words.
_PER_YEAR = re.compile(
    r"\b(?:per|each|every|by|for\s+each)[-\s]+(?:year|edition|conference|list)\b|\byear[-\s]+(?:over|by|on|to)[-\s]+"
    r"year\b|\bover\s+the\s+years\b|\bacross\s+(?:the\s+)?(?:years|editions)\b|"
    r"\bthrough\s+the\s+years\b|(?<!series\s)(?<!seasonal\s)\btrend(?:s|ing|ed)?\b(?!\s+(?:"
    r"forecast|decompos|component|filter|estimat|extract|predict|follow|line|in|of|for|among|"
    r"within|across\s+(?!(?:the\s+)?years)))|\bthen\s+(?:and|vs\.?|"
    r"versus)\s+now\b|\bnow\s+(?:and|vs\.?|versus)\s+then\b|\bin\s+both\s+years\b|"
    r"\b(?:the|both)\s+two\s+years\b|\bbetween\s+the\s+(?:two\s+)?years\b|"
    r"^\W*(?:is|are|was|were)\s+(?:\S+\s+){1,6}?(?:growing|shrinking|declining|rising|falling|"
    r"trending|dying|booming|fading|taking\s+off|on\s+the\s+rise|in\s+decline)\b|"
    r"^\W*(?:has|have|did|is|are)\s+(?:the\s+)?(?:interest\s+in|work\s+on|research\s+on|"
    r"popularity\s+of|attention\s+to)\s+.+?\s+(?:dropped|grown|grew|declined|increased|"
    r"decreased|risen|rose|fallen|fell|changed|shrunk|faded|died|taken\s+off)\b|"
    r"\b(?:both|the\s+two)\s+(?:conferences|lists|editions)\b", re.I)
#: Words of change or comparison that make two years, a year and "now", or "since YEAR" a
#: question per year.
_CHANGE = re.compile(
    r"\b(?:chang\w*|grow\w*|grew|declin\w*|evolv\w*|shift\w*|rise|rose|risen|rising|fall|fell|"
    r"fallen|drop\w*|increas\w*|decreas\w*|popular\w*|interest|share|proportion|fraction|"
    r"percent\w*|more|fewer|less|compar\w*|vs\.?|versus|how\s+many|number\s+of|"
    r"counts?|counted|counting|"
    r"differ\w*|went|gone|bigger|smaller|larger|big|small|hot|hotter|part\s+of|"
    r"died?|dying|dead|faded?|boom\w*|trends?|trending)\b", re.I)
_NOW = re.compile(r"\b(?:now|today|nowadays|these\s+days|currently|this\s+year|anymore|"
                  r"recent(?:ly)?|lately)\b", re.I)
_SINCE = re.compile(rf"\b(?:since|after)\s+(?:{_YEAR}|then)\b|\bfrom\s+{_YEAR}\s+(?:to|till|until|through)"
                    rf"\s+(?:{_YEAR}|now|today)\b|\bbetween\s+{_YEAR}\s+and\s+{_YEAR}\b", re.I)
_YEARS = re.compile(rf"(?<![\w.@/-])({_YEAR})(?![\w.@/-]*\d)")


def years_said(text: str) -> list[int]:
    """The years of ``text`` (1900-2099; "'18", "iclr26" as 2018 and 2026), in order, once
    each."""
    found = [(m.start(), int(m.group(1))) for m in _YEARS.finditer(text)]
    found += [(m.start(), 2000 + int(m.group(1) or m.group(2)))
              for m in SHORT_YEAR.finditer(text)]
    return list(dict.fromkeys(y for _, y in sorted(found)))





#: "in total across both years", "altogether": one number, not one per year.
_TOTAL = re.compile(r"\b(?:in\s+total|total(?:led)?|overall|altogether|combined|all\s+together|"
                    r"summed|put\s+together)\b", re.I)


#: Two years set against each other ("2018 vs 2026", "2018 compared to 2026").
_YEAR_VS_YEAR = re.compile(rf"{_YEAR}\s*(?:vs\.?|versus|compared\s+(?:to|with)|against)\s*{_YEAR}",
                           re.I)


#: A follow-up that sets another year against the previous answer's: "and how does that compare
#: to 2026 — is it growing?", "is that more or less than in 2026?"
_AGAINST = re.compile(r"\b(?:compar\w*|vs\.?|versus|grow\w*|grew|shrink\w*|shrunk|declin\w*|"
                      r"chang\w*|ris(?:e|en|ing)|rose|fall\w*|fell|trend\w*|increas\w*|"
                      r"decreas\w*|differ\w*|more\s+or\s+less|bigger|smaller)\b", re.I)


def sets_year_against(text: str) -> bool:
    """True when ``text`` sets a year against another in words of change or comparison
    ("how does that compare to 2026?", "is it growing?"); "and how many in 2026?" does not."""
    return bool(_AGAINST.search(text))


def asks_per_year(text: str) -> bool:
    """True when ``text`` asks for an answer per year (see the module docstring); a total asked
    in so many words ("how many papers in total across both years?") is one number."""
    if _TOTAL.search(text) and not re.search(r"\b(?:per|each|every|by)\s+year\b", text, re.I) \
            and not _YEAR_VS_YEAR.search(text):  # ("total submissions 2018 vs 2026": each)
        return False
    if _ACCEPTANCE.search(text):  # "what was the acceptance rate at iclr 2018": its share
        return True
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
    rf"\b(?:per|each|every|by|for\s+each)[-\s]+(?:year|edition|conference|list)\b|"
    rf"\byear[-\s]+(?:over|by|on|to)"
    rf"[-\s]+year\b|\bover\s+(?:the\s+)?(?:years|time)\b|\bacross\s+(?:the\s+)?(?:years|"
    rf"editions)\b|\bthrough\s+the\s+years\b|\bsince\s+(?:{_YEAR}|then)\b|\b(?:from|between)\s+"
    rf"(?:{_YEAR})?\s*(?:to|and|till|until|through)\s+(?:{_YEAR}|now|today)?\b|"
    rf"\b(?:in|of|for)\s+both\s+years\b|\bbetween\s+and\b|\bfrom\s+to\b|"
    rf"\b(?:between\s+|in\s+|across\s+|over\s+)?(?:the|both)\s+(?:two\s+)?(?:years|lists|"
    rf"conferences|editions)\b|\b(?:go|went|gone|going)\s+up\s+or\s+down\b|\bup\s+or\s+down\b|"
    rf"\bin\s+counts?\b|\bcounts?\s+(?:and|&)\s+shares?\b|"
    rf"\b(?:since|after)\s+(?:{_YEAR})?\b|\bmore\s+or\s+less\b|\b(?:as\s+)?(?:a\s+)?"
    rf"(?:share|proportion|fraction|percentage)\s+of\s+(?:(?:all|the|each|that)\s+)?(?:year'?s?\s+)?"
    rf"(?:papers?|submissions?|works?|accepted\s+papers?)?\b|\b(?:in\s+)?(?:{_YEAR}|now|today|"
    rf"nowadays|these\s+days|this\s+year|back\s+then|then)\s*(?:,|\?|$)|\b(?:in\s+)?{_YEAR}\b|"
    rf"\b(?:vs\.?|versus|or|and|than|compared\s+(?:to|with))\s+(?:in\s+)?(?:now|today|"
    rf"nowadays|these\s+days|this\s+year|then)\b", re.I)
#: A parenthetical aside ("(in any area)", "(oral + poster together)").
_PAREN = re.compile(r"\([^)]*\)|\[[^\]]*\]")
#: A dash or colon between a topic and a question about it.
_DASH = re.compile(r"\s+[-–—:]+\s+|\s*[–—]\s*")
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
    spotlights rated all part bigger smaller larger big small hot hotter did die died dying dead
    out fade faded shrinking shrink declining rising falling booming fading taking off rise
    growing dropped declined increased decreased risen fallen changed shrunk with go going
    common popular please pls too give as""".split())


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
#: More field terms with their other spellings, for a per-year count's words only (the topic
#: keeps the spelling said): "GANs" are "generative adversarial networks", LLMs are language
#: models.
SPELLINGS = {"gan": ["generative adversarial networks"],
             "generative adversarial network": ["GAN"],
             "llm": ["large language models"], "large language model": ["LLM"],
             "language model": ["LLM", "large language models"],
             "vit": ["vision transformers"], "vision transformer": ["ViT"],
             "graph neural network": ["GNN"], "recurrent neural network": ["RNN"],
             "reinforcement learning": ["RL"], "variational autoencoder": ["VAE"],
             "convolutional neural network": ["CNN"], "neural radiance field": ["NeRF"],
             "neural architecture search": ["NAS"]}


def trend_topic(query: str) -> str:
    """The topic of a per-year question, its frame taken off ("how did interest in GANs change
    since" -> "GANs", "is meta-learning more or less popular now than in" -> "meta-learning",
    "share of papers on graph neural networks per year" -> "graph neural networks"; a topic
    that is a field acronym alone is spelled out: "RL" -> "reinforcement learning",
    :data:`ACRONYMS`); ``""`` when nothing is left (a count of the catalog per year)."""
    from rag.understand.topics import has_topic

    s = _ICLR.sub(" ", _PAREN.sub(" ", query))
    clauses = [c for c in _CLAUSE.split(s) if c and c.strip()]
    if len(clauses) > 1:
        # "Has LSTM / RNN research shrunk? Compare iclr18 and iclr26 counts and shares.": the
        # first sentence that names a topic
        for clause in clauses:
            topic = _clause_topic(clause)
            if topic and has_topic(topic):
                return topic
    return _clause_topic(s)


#: "ICLR", "ICLR-26", "iclr18": the conference's name, never a topic's word.
_ICLR = re.compile(r"\biclr(?:[-\s'’]*\d{2,4})?\b", re.I)
#: The end of a sentence or a question in a turn.
_CLAUSE = re.compile(r"[?!;]+|\.(?=\s|$)")


def _clause_topic(s: str) -> str:
    """:func:`trend_topic` of one sentence."""
    from rag.understand.topics import count_topic, has_topic

    head = _DASH.split(s)
    if len(head) > 1 and has_topic(head[0]):
        s = head[0]  # "RNN and LSTM papers per year - did they die out?"
    s = _FRAME.sub(" ", s)
    s = count_topic(s.strip()) or s
    words = s.replace("?", " ").replace("!", " ").split()
    def edge(word: str) -> bool:
        bare = word.lower().strip(",.;:'\"-–—<>→")
        return not bare or bare in _EDGE

    while words and edge(words[0]):
        words.pop(0)
    while words and edge(words[-1]):
        words.pop()
    topic = " ".join(words).strip(" ,.;:'\"")
    return ACRONYMS.get(topic.lower(), topic)


_ALT_SPLIT = re.compile(r"\s*(?:/|\bor\b|\bvs\.?|&|,)\s*", re.I)
_AND_SPLIT = re.compile(r"\s+and\s+", re.I)


def topic_alternatives(topic: str) -> list[str]:
    """The phrases a per-year count of ``topic`` matches by its words: the topic split at "/",
    "or", "&" and commas ("adversarial examples / adversarial robustness"; "w/" is "with"),
    and at "and" when every part is one word ("RNN and LSTM"), each field acronym with its
    spelled-out form beside it and the other spellings of a field term (:data:`ACRONYMS`,
    :data:`SPELLINGS`: "RNN" and "recurrent neural networks"); in order, once each."""
    topic = re.sub(r"\bw/o(?=\s)", "without", re.sub(r"\bw/(?=\s)", "with", topic))  # "X w/ Y"
    parts = [p for p in _ALT_SPLIT.split(topic) if p.strip()]
    out: list[str] = []
    for part in parts or [topic]:
        pieces = _AND_SPLIT.split(part)
        if len(pieces) > 1 and all(len(x.split()) == 1 for x in pieces):
            out += pieces
        else:
            out.append(part)
    spelled = [ACRONYMS[w.lower()] for w in out if w.lower() in ACRONYMS]
    other = [x for w in out for x in SPELLINGS.get(_plain(w), [])]
    other += [a.upper() for w in out for a, full in ACRONYMS.items()
              if _plain(full) == _plain(w) and _plain(a) != _plain(w)]
    seen: set[str] = set()
    kept = []
    for x in out + spelled + other:
        if x.strip() and _plain(x) not in seen:
            seen.add(_plain(x))
            kept.append(x.strip())
    return kept


def _plain(phrase: str) -> str:
    """A phrase lower-cased, its words singular ("Graph Neural Networks" -> "graph neural
    network"), hyphens as spaces."""
    words = phrase.lower().replace("-", " ").split()
    return " ".join(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                    for w in words)


#: "average reviewer rating", "mean score": a mean asked for, not an order.
_MEAN_RATING = re.compile(r"\b(?:average|mean|avg)\s+(?:reviewer\s+|review\s+)?(?:ratings?|"
                          r"scores?)\b", re.I)
def asks_mean(text: str) -> bool:
    """True when ``text`` asks for a mean reviewer rating ("average rating", "mean score")."""
    return bool(_MEAN_RATING.search(text))


#: "vs the rest", "compared to other papers", "than everything else": a topic's papers set
#: against the other papers of the list.
_VS_REST = re.compile(r"\b(?:vs\.?|versus|compared?\s+(?:to|with)|against|than)\s+(?:the\s+)?"
                      r"(?:rest|others|other\s+(?:papers|submissions|ones|topics|areas)|"
                      r"everything\s+else|everyone\s+else|all\s+(?:the\s+)?others?)\b"
                      r"(?:\s+of\s+(?:them|the\s+(?:list|papers|submissions)))?", re.I)
#: "do RL papers get higher ratings than the rest?", "are LLM papers rated higher than others?"
_RATED_MORE = re.compile(r"\b(?:higher|lower|better|worse)\s+(?:ratings?|scores?|rated|"
                         r"scored|reviews?)\b|\b(?:rated|scored|reviewed)\s+(?:higher|lower|"
                         r"better|worse)\b|\b(?:in|by|on|for)\s+(?:reviewer\s+)?(?:ratings?|"
                         r"scores?)\b", re.I)


def asks_mean_against_rest(text: str) -> bool:
    """True when ``text`` sets a topic's ratings against the other papers' ("mean rating of LLM
    papers vs the rest", "do RL papers get higher ratings than the rest?")."""
    return bool(_VS_REST.search(text)) and bool(_MEAN_RATING.search(text) or
                                                _RATED_MORE.search(text))


def without_rest(text: str) -> str:
    """``text`` without the words that set a topic against the rest and ask how it is rated."""
    return _RATED_MORE.sub(" ", _VS_REST.sub(" ", text))


#: "sorted by average reviewer rating": an order, not a mean asked for.
_ORDERED_BY = re.compile(r"\b(?:sort|sorted|rank|ranked|order|ordered)\s+(?:them\s+|it\s+)?by\b",
                         re.I)


#: The end of a clause, a comma's included: "how many orals, and what was their mean rating?"
_CLAUSE_OR_COMMA = re.compile(r"[,;?!]|\.(?=\s|$)")


def clauses(text: str) -> list[str]:
    """``text`` cut at sentence ends and commas: the clause that asks a thing names its topic."""
    return _CLAUSE_OR_COMMA.split(text)


def apply_rated(plan, text: str) -> bool:
    """Read a topic's ratings set against the rest into ``plan`` (a
    :class:`rag.understand.plan.Plan`, changed in place); True when it was. "what's the average
    rating of diffusion papers in 2026?", "mean rating of LLM papers vs the rest", "do RL papers
    get higher ratings than the rest?": a count of the papers on the topic (its words, an area's
    included) with their mean rating (``mean_rating``) beside the rest's. "how do orals compare
    to the rest in ratings?": every decision with its mean (``by_decision``). "with a mean
    rating of at least 7" is a filter and "sorted by average rating" an order: neither is
    this."""
    from rag.understand.topics import has_topic

    topic = ""
    if not plan.per_year and plan.op in ("count", "compare", "survey", "list", "lookup", "sort") \
            and not any(f.startswith(("rating", "author=")) for f in plan.filters) \
            and not _ORDERED_BY.search(text) \
            and (asks_mean_against_rest(text) or asks_mean(text) and not plan.ids
                 and plan.papers in ("catalog", "search")):
        # (from the clause that asks it: "how many workshop invites did iclr 2018 send out,
        # and what was their average rating?" names no topic)
        clause = next((c for c in clauses(text) if asks_mean(c) or _RATED_MORE.search(c)),
                      text)
        topic = " ".join(re.sub(r"\b(?:only|just)\b|[,;:]", " ", trend_topic(
            without_rest(without_mean(clause)))).split())
    if topic and has_topic(topic):
        plan.papers, plan.op, plan.topic, plan.query = "search", "count", topic, topic
        plan.mean_rating, plan.n, plan.order, plan.sides, plan.names = True, None, "", [], []
        plan.ids, plan.aspect = [], ""
        plan.filters = [f for f in plan.filters if not f.startswith("primary_area=")]
        return True
    if asks_mean_against_rest(text) and not plan.per_year and \
            any(f.startswith("status=") for f in plan.filters):
        plan.by_decision, plan.op, plan.papers, plan.n, plan.order = True, "count", "catalog", \
            None, ""
        plan.filters = [f for f in plan.filters if not f.startswith("status=")]
        plan.sides, plan.names, plan.ids, plan.aspect, plan.topic = [], [], [], "", ""
        return True
    return False


def asks_acceptance(text: str) -> bool:
    """True when ``text`` asks for an acceptance rate ("acceptance rate", "accept ratio")."""
    return bool(_ACCEPTANCE.search(text))


def without_acceptance(text: str) -> str:
    """``text`` without the words that ask for an acceptance rate."""
    return _ACCEPTANCE.sub(" ", text)


def without_mean(text: str) -> str:
    """``text`` without the words that ask for a mean rating."""
    return _MEAN_RATING.sub(" ", text)


#: A rating superlative: "the best rated paper of each year" is no mean.
_SUPERLATIVE = re.compile(r"\b(?:best|worst|highest|lowest|strongest|weakest)\b", re.I)
#: "acceptance rate", "accept ratio": the share of accepted papers.
_ACCEPTANCE = re.compile(r"\b(?:acceptance|acceptence|accept)\s+(?:rates?|ratios?|percentages?)\b",
                         re.I)


def apply_per_year(plan, text: str, found, context) -> None:
    """Make ``plan`` an answer per year (:attr:`rag.understand.plan.Plan.per_year`), in place:
    the years said leave the filters for :attr:`~rag.understand.plan.Plan.years`; a rating
    superlative ("the best-rated paper of each year") is the best-rated paper of each year, any
    other reading a count per year: of a topic's papers when the turn names a topic
    (:func:`rag.understand.years.trend_topic`), of the papers the filters admit when it names
    none, of the previous answer's topic when it points back ("how did that change since
    2018?")."""
    from rag.understand import topics

    plan.per_year = True
    plan.years = years_said(text)
    plan.filters = [f for f in plan.filters if not f.startswith("year=")]
    if _ACCEPTANCE.search(text) and not any(f.startswith("status=") for f in plan.filters):
        plan.filters = plan.filters + ["status=accepted"]  # "acceptance rate in 2018 vs 2026"
    topic = trend_topic(_ACCEPTANCE.sub(" ", _MEAN_RATING.sub(" ", plan.query)))
    on_topic = topics.has_topic(topic)
    if _MEAN_RATING.search(text) and not _SUPERLATIVE.search(text):
        # "average reviewer rating per year?": a count per year with its mean rating
        plan.op, plan.n, plan.order, plan.mean_rating = "count", None, "", True
    elif plan.op in ("extreme", "sort") and found.orders_by_rating:
        plan.op, plan.n = "extreme", plan.n or 1
        plan.order = plan.order or ("rating_asc" if found.ascending else "rating_desc")
    else:
        plan.op, plan.n, plan.order = "count", None, ""
    plan.positions, plan.names, plan.ids, plan.sides, plan.aspect = [], [], [], [], ""
    if on_topic:
        plan.papers, plan.topic, plan.query = "search", topic, topic
    elif context.has_previous and (found.refers_back or found.points_at_topic) and \
            plan.op == "count":
        plan.papers = "previous"  # (its topic: rag.chat.operations.select)
    else:
        plan.papers, plan.topic = "catalog", ""
