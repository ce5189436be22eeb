"""The word patterns of filters said in words, read by :func:`rag.understand.slots.read_filters`:
decisions ("oral papers", "papers that were rejected", "among the orals") and the questions
about a decision that are no filter ("is it an oral?"), rating thresholds ("rated 6 or higher",
"7+", "drop anything below 5"), years ("in 2018"), authors ("papers by Yoshua Bengio") and a
rating order ("highest-rated", "sorted by rating"). Area names are read by
:mod:`rag.understand.area_words`.
"""

from __future__ import annotations

import re


_PAPERS = r"(?:papers?|submissions?|works?|ones|articles)"
# "oral papers", "rejected submissions", "spotlight works"
_TIER_BEFORE = re.compile(rf"\b(orals?|spotlights?|posters?|rejected|withdrawn|accepted)\s+"
                          rf"(?:(?:iclr\s+)?(?:19|20)\d\d\s+|iclr\s+)?{_PAPERS}\b|"
                          # "rejected GAN papers": a decision adjective before a topic's papers
                          rf"\b(rejected|withdrawn|accepted)\s+(?:[\w-]+\s+){{1,2}}{_PAPERS}\b", re.I)
#: "was still rejected", "were eventually withdrawn": an adverb between the verb and the decision.
_ADVERB = r"(?:(?:still|eventually|ultimately|finally|nonetheless|nevertheless|actually|also|" \
          r"then|later)\s+)?"
#: "not counting workshop invites or withdrawals", "excluding withdrawn ones": the decisions
#: after it are left out, not asked for.
EXCLUDING = re.compile(r"\b(?:not\s+counting|not\s+including|excluding|exclude|except(?:\s+for)?|"
                       r"other\s+than|but\s+not|apart\s+from|leaving\s+out|minus|ignoring)\b", re.I)
# "papers that were rejected", "submissions withdrawn", "how many papers got accepted as orals"
_TIER_AFTER = re.compile(rf"\b{_PAPERS}\s+(?:(?:that|which)\s+)?(?:(?:were|was|got|are|is|have been|"
                         rf"has been)\s+{_ADVERB})?(rejected|withdrawn|accepted)(?:\s+as\s+(?:an?\s+)?"
                         r"(orals?|spotlights?|posters?))?\b", re.I)
# "How many papers by X were rejected?": the decision said at the end, after other words (or
# before the conference: "... were accepted at ICLR 2026")
_TIER_PASSIVE = re.compile(rf"\b(?:were|was|got|have been|has been)\s+{_ADVERB}(rejected|withdrawn|accepted)"
                           r"(?:\s+(?:at|to|in|by|into)\s+(?:the\s+)?(?:iclr|conference|main)\b"
                           r"[^?.!]*|\s+(?:at|in)\s+(?:iclr\s*)?(?:19|20)\d\d|\s+(?:that|this|the\s+same)"
                           r"\s+year|\s+then|\s+(?:each|every|per|by)\s+year|\s+(?:in\s+)?(?:both|the\s+two)"
                           r"\s+years|\s+over\s+the\s+years|\s+(?:in\s+)?(?:(?:19|20)\d\d|['’]\d\d)\s*(?:vs\.?|"
                           r"versus|and|or)\s*(?:(?:19|20)\d\d|['’]\d\d)|\s+(?:before|after|during)\s+"
                           r"(?:the\s+)?(?:decisions?|reviews?|rebuttals?|deadline|discussion))?"
                           r"\s*[?.!]*\s*$", re.I)
# "invited to the workshop track", "workshop papers": ICLR 2018's fourth decision
_WORKSHOP = re.compile(r"\b(?:(?:invited|moved|sent|relegated|demoted)\s+to\s+)?the\s+workshop\s+"
                       r"track\b|\bworkshop[-\s]+(?:track\s+)?(?:papers?|submissions?|posters?|"
                       r"decisions?|invit\w*)\b", re.I)
# "the lowest rated accepted poster", "worst 2026 oral", "number of 2018 rejects": a decision as
# the noun itself, after a year, a rating word or a superlative ("which area had the most posters?")
_TIER_NOUN = re.compile(r"\b(?:(?:19|20)\d\d|rated|scored|reviewed|accepted|best|worst|highest|"
                        r"lowest|top|bottom|strongest|weakest|most|fewest|more|fewer|\d{1,2})\s+(orals?|posters?|"
                        r"spotlights?|rejects?|rejections)\b(?!\s+(?:sessions?|tracks?|"
                        r"presentations?|papers?|submissions?|works?)\b)", re.I)
# "among the orals", "accepted as an oral", "oral presentations", "the orals"
_TIER_ALONE = re.compile(r"\b(?:(?:among|in|from|of)\s+(?:the\s+)?(orals|spotlights|posters)|"
                         r"accepted\s+as\s+(?:an?\s+)?(orals?|spotlights?|posters?)|"
                         r"(oral|spotlight)\s+presentations?|(?:the\s+)?(orals|spotlights)\b|"
                         # "got an oral", "were given a spotlight", "are posters"
                         r"(?:got|get|gets|received?|given|awarded|as|were|are|be|been)\s+"
                         r"(?:an?\s+)?(orals?|spotlights?|posters?)\b(?!\s+(?!only|papers?|ones?"
                         r"|too|and|or)[a-z])|"
                         # "every spotlight in optimization", "any oral on X"
                         r"(?:every|each|any|one)\s+(oral|spotlight|poster)\b|"
                         # "posters?", "orals only?": the whole turn
                         r"^\s*(?:and\s+|what\s+about\s+|now\s+)?(?:the\s+)?"
                         r"(orals?|spotlights?|posters?|rejected|withdrawn)\s*(?:ones\s*)?[?.!]*\s*$|"
                         # "count withdrawn", "list the rejected ones"
                         r"\b(?:count|list|show)\s+(?:me\s+)?(?:all\s+)?(?:the\s+)?"
                         r"(withdrawn|rejected|rejects|orals|posters|spotlights)\b|"
                         # "withdrawn '18 vs '26?", "orals iclr18": the tier heads the turn, a year next
                         r"^\s*(orals|posters|spotlights|rejected|withdrawn|rejects|accepted)\s+"
                         r"(?=['’]\d\d|(?:19|20)\d\d|iclr)|"
                         # "# rejects '26", "2026 withdrawals in the X area"
                         r"\b(rejects|withdrawals)\b|"
                         # "how many papers did ICLR 2026 end up accepting", "did ICLR 2018 accept"
                         r"\b(?:iclr(?:[-\s]*['’]?\d{2,4})?|it|they|the\s+conference)\s+(?:end(?:ed)?\s+up\s+)?"
                         r"(accept|reject)(?:ed|ing|s)?\b|\bend(?:ed)?\s+up\s+(accepting|rejecting)\b|"
                         # "got a Reject decision", "received an accept", "not accepted"
                         r"\b(?:got|get|gets|received?|given|had)\s+an?\s+(reject|accept)(?:ed|ion|ance)?"
                         r"(?:\s+decision)?\b|\b(?:was|were|got|is|are|up)\s+(not\s+accepted)\b|"
                         # "papers that got in", "how many of those made it in"
                         r"\b(?:got|get|gets|made\s+it)\s+(in)\b(?!\s+\w)|"
                         # "which ones are plain posters"
                         r"(?:are|were)\s+(?:plain|just|only|all|also|regular)\s+(orals?|spotlights?|"
                         r"posters?)\b|"
                         # "only orals", "just the posters", "posters only"
                         r"(?:only|just)\s+(?:the\s+)?(orals?|spotlights?|posters?)\b|"
                         r"(orals?|spotlights?|posters?)\s+only\b|"
                         # "were any of them rejected?", "which of those got accepted"
                         r"(?:them|these|those)\s+(?:\w+\s+)?(?:ultimately\s+|eventually\s+|finally\s+)?"
                         r"(rejected|withdrawn|accepted)\b|"
                         # "filter to posters", "restrict it to the orals"
                         r"(?:filter|restrict|limit|narrow)\w*\s+(?:it\s+|them\s+|this\s+|down\s+)?"
                         r"to\s+(?:the\s+)?(orals?|spotlights?|posters?)\b|"
                         # "the lowest-rated poster", "best reviewed orals"
                         r"(?:rated|scored|reviewed|ranked)\s+(orals?|spotlights?|posters?)\b|"
                         # "posters about X", "orals in RL", "the poster with the best rating"
                         r"(orals|posters|spotlights)(?=\s+(?:are|were|about|on|in|with|that|which|"
                         r"from|sorted|by|ranked|ordered|best|worst|highest|lowest|first|among|"
                         r"amongst|rated|scored|then|count|w/?)(?!\w))|"
                         # "same but posters", "and then the posters?": the tier ends the turn
                         r"\b(?:but|and|then|now|just|only|the|for)\s+(posters)\s*[?.!]*\s*$|"
                         # "spotlight count?", "oral total": the tier counted; "which learning
                         # theory oral has the lowest rating": the tier, then what it has
                         r"\b(oral|spotlight|poster|withdrawn|rejected|accepted|rejects)\s+"
                         r"(?:count|total|number)\b|"
                         # "posters: 2018 vs 2026?": the tier heads the turn
                         r"^\s*(orals|posters|spotlights|rejected|withdrawn|rejects)\s*[:,–—-]\s|"
                         r"\b(oral|spotlight)(?=\s+(?:has|had|is|was|got|gets|received|with)\b)|"
                         r"(?<=\bthe\s)(oral|poster|spotlight)(?=\s+(?:with|that|which|among)\b)|"
                         # "oral?" "the spotlight ones"
                         r"(oral|spotlight)\b(?=\s*(?:[?.!,;]|$|ones?\b))|"
                         # "which oral has the lowest rating", "got an oral slot", "the least liked
                         # oral at the conference": the tier word as a noun after a determiner,
                         # unless it qualifies a topic ("the oral health of ...", "an oral exam")
                         r"\b(?:which|what|the|an|any|this|that|liked|rated|reviewed|scored)\s+"
                         r"(oral|spotlight)\b(?![\w-])(?!\s*(?:/|or\b|and\b))(?!\s+(?:health|"
                         r"cavit|cancer|lesion|disease|hygiene|microbio|dental|care|exam|histor|"
                         r"language|speech|reading|communication|tradition|proficien|mucos|surg|"
                         r"drug|vaccin|admin|dos|tablet|squamous|image|scan|presentations?\s+"
                         r"generat)))",
                         re.I)
# "is it an oral?", "[3] is an oral, right?", "2 and 4 are both orals?": a question about the
# decision of papers already named, not a filter on them
_STATUS_ASKED = re.compile(r"(?<!\w)(?:(?:is|was|are|were)\s+(?:it|that|this|they|those\s+two|"
                           r"both|(?:that|this|the\s+\w+)\s+(?:one|paper))|"
                           r"(?:it|that\s+one|this\s+one|that\s+paper|this\s+paper|one|"
                           r"\[\d{1,2}\]|#\d{1,2}|\d{1,2})\s+(?:is|was|are|were|got|get))"
                           r"\s+(?:both\s+|all\s+|also\s+|really\s+|even\s+)?(?:an?\s+)?"
                           r"(?:orals?|spotlights?|posters?)\b", re.I)
# "orals + posters", "orals and spotlights", "oral/poster": two tiers named together
# (not a breakdown by decision: "oral / poster counts per area", "orals vs posters")
_TIERS_LISTED = re.compile(r"\b(orals?|spotlights?|posters?)\s*(?:\+|&|,|\band\b|\bor\b|"
                           r"\bplus\b)\s*(?:the\s+)?(orals?|spotlights?|posters?)\b(?!\s+(?:counts?|"
                           r"breakdown|split|ratio|numbers?|per|each|vs|versus)\b)", re.I)
#: A decision word of a breakdown ("orals, posters, rejects, workshop").
_DECISION_ITEM = (r"(?:orals?|spotlights?|posters?|rejects?|rejected|rejections?|withdrawn|"
                  r"withdrawals?|workshop(?:\s+(?:track|invit\w*|papers?))?|accepted|accepts?)")
#: A count asked per decision: "break 2018 down by decision", "how many papers per decision?",
#: "decision breakdown", "orals, posters, rejects and withdrawn in 2018?" (three or more
#: decisions named together: a breakdown; two are a filter, :data:`_TIERS_LISTED`).
_BY_DECISION = re.compile(
    r"\b(?:by|per|each|every|for\s+each|across|split\s+(?:up\s+)?by|grouped\s+by)\s+"
    r"(?:the\s+)?(?:decision|status|outcome|tier|verdict)(?:\s+(?:type|category|kind))?s?\b|"
    r"\b(?:decision|status|outcome)[-\s]+(?:breakdown|split|distribution|counts?|totals?|"
    r"numbers?|mix|tally|shares?)\b|"
    r"\b(?:breakdown|distribution|split|tally)\s+of\s+(?:the\s+)?(?:decisions|statuses|"
    r"outcomes)\b|"
    rf"\b{_DECISION_ITEM}(?:\s*(?:,|/|&|\+|\band\b|\bvs\.?|\bversus\b)\s*(?:the\s+|and\s+)?"
    rf"{_DECISION_ITEM}\b){{2,}}|"
    # "how many list RL as their area, and how many of those got an oral?": the total and its
    # decisions
    rf"\bhow\s+many\b.+\band\s+how\s+many\s+of\s+(?:those|them|these|which)\b.*\b"
    rf"{_DECISION_ITEM}", re.I)


def asks_by_decision(text: str) -> bool:
    """True when ``text`` asks for counts per decision (:data:`_BY_DECISION`): the answer is a
    table of the decisions and their counts, not one count of the decisions merged."""
    return bool(_BY_DECISION.search(text))


#: A count asked per primary area: "which primary area had the most orals?", "orals per area",
#: "what areas are there?", "breakdown by track".
_BY_AREA = re.compile(
    r"\b(?:by|per|each|every|for\s+each|across|split\s+(?:up\s+)?by|grouped\s+by|over)\s+"
    r"(?:the\s+)?(?:primary\s+)?(?:area|track|categor(?:y|ies)|subfield)s?\b(?!\s+(?:of|chair))|"
    r"\b(?:which|what)\s+(?:primary\s+)?(?:areas?|tracks?|categor(?:y|ies))\s+(?:ha[sd]|have|got|"
    r"gets?|received?|are\s+there|exist|is\s+the\s+(?:largest|biggest|most)|(?:is|are|was|were)"
    r"\s+(?:the\s+)?(?:most|largest|biggest|popular|common)|does\s+(?:the\s+)?(?:list|index|"
    r"conference|iclr)\s+have|do\s+(?:the\s+)?(?:papers|submissions)\s+(?:fall|come)|(?:the\s+)?"
    r"most)\b|"
    r"\b(?:list|show|name)\s+(?:me\s+)?(?:all\s+)?(?:the\s+)?(?:primary\s+)?areas\b|"
    r"\b(?:primary\s+)?areas\s+(?:breakdown|distribution|counts?|split|sizes?)\b|"
    r"\b(?:primary\s+)?area\s+(?:breakdown|distribution|split)\b|"
    # "what's the most common primary area among 2026 orals?", "the top areas"
    r"\b(?:most|least)\s+(?:common|popular|frequent|represented)\s+(?:primary\s+)?(?:areas?|"
    r"tracks?|categor(?:y|ies))\b|\btop\s+(?:\d+\s+)?(?:primary\s+)?areas\b", re.I)


def asks_by_area(text: str) -> bool:
    """True when ``text`` asks for counts per primary area (:data:`_BY_AREA`)."""
    return bool(_BY_AREA.search(text))


_BREAK_DOWN = re.compile(r"\bbreak(?:ing)?\s+(?:\w+\s+){0,3}?down\b|\bbreakdown\b|\bsplit\b|"
                         r"\b(?:counts?|numbers?|totals?|vs|versus|compared?|of|the|what|how|"
                         r"many|and)\b|\bwhat['’]?s\b", re.I)


def without_decisions(text: str) -> str:
    """``text`` without the words of a breakdown by decision (:data:`_BY_DECISION`, decision
    words, "break down", "counts"): what is left names a topic or nothing."""
    text = _BY_DECISION.sub(" ", text)
    return re.sub(r"\s+", " ", _BREAK_DOWN.sub(" ", re.sub(rf"\b{_DECISION_ITEM}\b", " ", text,
                                                             flags=re.I))).strip()


#: A year said by its last two digits ("in '18", "ICLR ’26", "iclr18"): group 1 or 2.
SHORT_YEAR = re.compile(r"(?<![\w'’])['’]([0-3]\d)\b(?!['’])|\biclr[-_'’]?([0-3]\d)\b", re.I)
_TIER_WORD = {"not accepted": "rejected", "in": "accepted", "accept": "accepted",
              "withdrawals": "withdrawn", "accepting": "accepted", "rejecting": "rejected",
              "oral": "oral", "orals": "oral", "spotlight": "spotlight", "spotlights": "spotlight",
              "poster": "poster", "posters": "poster", "rejected": "rejected",
              "withdrawn": "withdrawn", "accepted": "accepted", "reject": "rejected",
              "rejects": "rejected", "rejection": "rejected", "rejections": "rejected"}
# "rated 6 or higher", "rating >= 6", "with a mean rating above 5.5", "scored at least 8"
_RATING = re.compile(
    r"\b(?:(?:with\s+)?(?:an?\s+)?(?:(?:mean|average|avg|reviewer|review|overall)\s+){0,2}"
    r"(?:rating|score)s?|rated|scored|averag(?:ed|ing)|got\s+an?\s+average\s+of)"
    r"(?:\s*,?\s*(?:like|um|uh|say)\s*,)?"
    r"\s*(?:(?:is|are|was|were|of)\s+)?(?:strictly\s+)?(>=|<=|>|<|=|≥|≤|at least|at most|at or above|at or below|above|over|below|under|greater than|"
    r"more than|higher than|less than|lower than|of at least|no less than|no more than)?\s*"
    r"(\d{1,2}(?:\.\d{1,2})?)(?!\d|\.\d)(?!\s+(?:papers?|pprs?|works?|ones|orals|posters|submissions)\b)"
    r"(?:\s*(?:/|out of)\s*10)?(\s+(?:or|and)\s+(?:higher|more|above|better|"
    r"greater|over|up|lower|less|below|worse|under|down))?", re.I)
_OPS = {">=": ">=", "≥": ">=", "at least": ">=", "at or above": ">=", "at or below": "<=", "of at least": ">=", "no less than": ">=",
        "<=": "<=", "≤": "<=", "at most": "<=", "no more than": "<=", ">": ">", "above": ">",
        "over": ">", "greater than": ">", "more than": ">", "higher than": ">", "<": "<",
        "below": "<", "under": "<", "less than": "<", "lower than": "<", "=": "="}
# "in 2018", "from ICLR 2018", "ICLR 2018 papers"
_YEAR = re.compile(r"(?<![\w.@/-])((?:19|20)\d\d)(?![\w.@/-]*\d)(?!\s*(?:tokens?|"
                   r"samples?|images?|examples?|problems?)\b)(?<!\b(?:19\d\d|200\d)(?=\s+papers))",
                   re.I)
# "papers by Yoshua Bengio", "work from Sergey Levine", "authored by Chelsea Finn"
#: A venue said after "papers from": "meta-learning papers from ICLR 2018" names no author.
_VENUE_NAME = (r"(?i:iclr|neurips|nips|icml|cvpr|iccv|eccv|acl|emnlp|naacl|aaai|ijcai|colt|"
               r"aistats|uai|kdd|openreview|arxiv)(?![a-z])")
_AUTHOR = re.compile(rf"\b(?i:(?:{_PAPERS}|anything|everything|something|stuff|these|those|them|"
                     r"any)\s+(?:written\s+|authored\s+)?(?:by|from)|authored\s+by|written\s+by)"
                     rf"\s+(?!{_VENUE_NAME})((?:[A-Z][\w'.\-]*\.?\s+){{0,3}}[A-Z][\w'\-]+)", re.U)
#: Words after "by" that say an order, not an author ("sorted by rating", "by reviewer score").
_ORDER_WORDS = (r"(?:rat\w*|scor\w*|review\w*|relevan\w*|mean|average|avg|date|year|area|topic|"
                r"how|their|its|the|a|him|her|them|me|us|you|it|this|that|these|those)\b")
# "papers by yoshua bengio" (in lower case: the two words after "papers by"), "Sergey Levine's
# papers"
_AUTHOR_LOWER = re.compile(rf"\b{_PAPERS}\s+(?:written\s+|authored\s+)?by\s+(?!{_ORDER_WORDS})"
                           r"([a-z][\w'\-]+\s+"
                           r"[a-z][\w'\-]+)\b(?<!\bet al)")
_AUTHOR_OWNER = re.compile(r"\b((?:[A-Z][\w'.\-]*\.?\s+){0,2}[A-Z][\w'\-]+)['’]s\s+(?:\d{4}\s+)?"
                           rf"{_PAPERS}\b")
# "highest-rated papers on X", "top rated", "best-scored", "sorted by rating"
_SORT = re.compile(r"\b(?:(?:highest|best|top|most\s+highly)[-\s]+"
                   r"(?:rated|scored|scoring|reviewed)|"
                   r"highest\s+(?:mean\s+|average\s+)?(?:ratings?|scores?)|"
                   r"(?:sorted|ranked|ordered)\s+by\s+(?:(?:mean|average|reviewer)\s+)?"
                   r"(?:ratings?|scores?))\b", re.I)


#: After a number: it counts something else ("above 6%", "over 7 layers", "under 8B"), so it is no
#: rating threshold.
_NOT_A_RATING = r"(?![\d.]*\s*(?:%|x\b|times|points|pp|layers|billion|[bBmMkK]\b))"
#: "+", "or more", "or lower", ...: the side of a threshold said after its number.
_OR_SIDE = (r"(\+|or\s+(?:more|higher|above|better|over|less|lower|below|worse|under)|"
            r"and\s+(?:up|above|higher|over|below|under|lower|down))")
# "7+", "(6.5+)": a rating threshold when the turn talks about ratings
# "which ones are above 6", "the ones averaging above 6": a threshold said of the papers
_BARE_RATING = re.compile(r"\b(?:ones|papers|those|these|them|they|are|averag\w*|anything|everything|any|all)\s+(?:that\s+are\s+)?"
                          r"(above|over|below|under|at least|at most)\s+(\d(?:\.\d{1,2})?)"
                          + _NOT_A_RATING, re.I)
# "6 or more on average", "7+ on average", "5.5 or lower on average"
_RATING_AVERAGE = re.compile(r"(?<![\w.])(\d(?:\.\d{1,2})?)\s*" + _OR_SIDE
                             + r"\s+(?:on\s+)?(?:average|avg|mean)\b", re.I)
# "drop anything below 5", "remove those under 6", "get rid of the ones above 7", "nothing
# under 5.5 please": a threshold said of what to leave out, so the filter keeps the other side
_DROP_RATING = re.compile(r"\b(?:drop|remove|exclude|filter\s+out|get\s+rid\s+of|cut|skip|hide|"
                          r"lose|throw\s+out|ignore|leave\s+out|discard|no|nothing|none|without)"
                          r"\b(?:\s+(?:\w+|[\w-]+)){0,4}?\s+(below|under|less\s+than|"
                          r"lower\s+than|above|over|more\s+than|higher\s+than)\s+"
                          r"(\d(?:\.\d{1,2})?|10)" + _NOT_A_RATING, re.I)
_DROP_OPS = {"below": ">=", "under": ">=", "less than": ">=", "lower than": ">=", "above": "<=",
             "over": "<=", "more than": "<=", "higher than": "<="}
# "got 6+", "how many of these got 6 or more", "scoring 7 or above": a threshold a paper got
_GOT_RATING = re.compile(r"\b(?:got|get|getting|gets|scoring|averaging|averaged|with|w/?|are|were|is)\s+"
                         r"(?:a\s+|an\s+|rated\s+)?"
                         r"(\d(?:\.\d{1,2})?)\s*" + _OR_SIDE + r"(?![\w%])", re.I)
# "and above 6 only", "above 6 pls", "only under 5": a threshold that is the whole request
_ONLY_RATING = re.compile(r"^\W*(?:(?:and|but|ok|okay|now|only|just)\W+){0,2}(above|over|below|under|"
                          r"at least|at most)\s+(\d(?:\.\d{1,2})?)\W*(?:(?:only|pls|please|then)"
                          r"\W*)*$", re.I)
#: Words that may follow a bare threshold ("got 6+ only", "6+ ones"): any other word is what
#: was counted ("7 or more GPUs"), not a rating.
_AFTER_THRESHOLD = re.compile(r"\s*(?:[^\w\s]|$|(?:only|pls|please|ones?|papers?|pprs?|works?|"
                              r"submissions?|on|average|avg|mean|and|or|rating|ratings|score|"
                              r"scores|then|just|in|from|at|sorted|ranked|first|right)\b)", re.I)


def _side(tail: str) -> str:
    """The comparison of an :data:`_OR_SIDE` tail: ``"<="`` for "or less/lower/below/worse/under",
    ``">="`` for "+" and "or more/higher/above/better/over"."""
    return "<=" if re.search(r"less|lower|below|worse|under|down", tail, re.I) else ">="


#: A threshold with its side said after it ("6 and up", "5.5 or lower"): a rating threshold
#: when the turn talks about ratings (see read_filters).
_SIDED = re.compile(r"(?<![\w.])(\d{1,2}(?:\.\d{1,2})?)\s*" + _OR_SIDE + r"(?![\w%])", re.I)
_PLUS = re.compile(r"(?<![\w.])(\d{1,2}(?:\.\d{1,2})?)\s?\+(?!\w)")
_RATING_WORD = re.compile(r"\b(?:rat\w*|scor\w*|review\w*|average|mean)\b", re.I)
#: Longest author name read from a question (the longest in ICLR 2018's list is 31 chars).
MAX_AUTHOR_CHARS = 80


#: Decision words a misspelling is read as ("rejectd", "acepted", "withdrawen", "spotlgihts").
_DECISIONS = ("rejected", "accepted", "withdrawn", "orals", "posters", "spotlights", "spotlight")
#: Real words near a decision word that are no misspelling of one.
_NOT_MISSPELT = frozenset("reject rejects rejection rejections rejecting accept accepts acceptance "
                          "accepting acceptable accepter accessed accepter access withdraw "
                          "withdraws withdrawal withdrawing oral orally poster spotlit "
                          "postures posterior posteriors postures".split())
_DECISION_LIKE = re.compile(r"\b(?:rej|reg|acc|acep|aspe|wit|wtih|ora|oar|pos|spo|spt)[a-z]{2,9}\b",
                            re.I)


def respell_decisions(text: str) -> str:
    """``text`` with misspelt decision words written right ("how many were rejectd" -> "...
    rejected"): a word beginning like one of :data:`_DECISIONS`, not a real word near one
    (:data:`_NOT_MISSPELT`), whose :class:`difflib.SequenceMatcher` ratio to it is at least
    0.84 (measured: "withdrawed" 0.84, "rejectd" 0.93; "accessed" 0.75 and "projected" are
    kept)."""
    from difflib import SequenceMatcher

    def fix(m: re.Match) -> str:
        word = m.group(0)
        low = word.lower()
        if low in _NOT_MISSPELT or low in _DECISIONS or low[:-1] in _DECISIONS:
            return word
        best = max(_DECISIONS, key=lambda d: SequenceMatcher(None, low, d).ratio())
        if low[0] != best[0] or SequenceMatcher(None, low, best).ratio() < 0.84:
            return word
        return best

    return _DECISION_LIKE.sub(fix, text)
