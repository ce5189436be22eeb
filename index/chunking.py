"""Split a paper into chunks that fit the embedder's window, title on every chunk.

all-MiniLM-L6-v2 reads 256 tokens ([CLS] and [SEP] included) and silently drops the rest; 78% of
ICLR 2026 title+abstract texts are longer (shared/data/README.md). Each chunk is the normalised
title, then a window of the normalised abstract, cut on word boundaries of the embedder's own
tokenizer, consecutive windows sharing ``overlap`` tokens, so every abstract token is inside some
chunk's window. Chunk ids are ``<paper id>#<n>`` (:func:`rag.types.chunk_id`).
"""

from __future__ import annotations

from typing import Protocol, Sequence

from rag.text import normalise
from rag.types import Chunk, Paper, chunk_id, is_accepted, status_tier

#: Titles longer than this many tokens are cut on chunks (rare; keeps room for the abstract).
MAX_TITLE_TOKENS = 64
#: Tokens of the separator between title and window (". " is one token for WordPiece).
SEPARATOR = ". "


class Tokenizer(Protocol):
    """The slice of a Hugging Face fast tokenizer chunking needs."""

    def __call__(self, text: str, *, add_special_tokens: bool, return_offsets_mapping: bool): ...


def _word_starts(offsets: Sequence[tuple[int, int]], text: str) -> list[bool]:
    starts = []
    prev_end = -1
    for start, end in offsets:
        # a token starts a word when whitespace (or the text start) precedes it, or it is
        # punctuation; WordPiece continuation pieces ("##ing") touch the previous token.
        starts.append(prev_end < 0 or start > prev_end or not text[start:end].isalnum())
        prev_end = end
    return starts


def chunk_paper(paper_id: str, title: str, abstract: str, tokenizer, *, max_tokens: int = 256,
                overlap: int = 48, special_tokens: int = 2) -> list[Chunk]:
    """Chunks of one paper; ``title`` and ``abstract`` are already normalised.

    Args:
        tokenizer: a Hugging Face fast tokenizer (offsets are needed to cut the original text).
        max_tokens: the embedder's window in tokens, special tokens included.
        overlap: tokens shared by consecutive windows; must be < the window's abstract budget.
        special_tokens: tokens the embedder adds around a text ([CLS], [SEP] = 2).

    Returns:
        Chunks ``<paper_id>#0``, ``#1`` ... (numbered without gaps); at least one, even for an
        empty abstract. Each chunk's ``n_tokens`` (special tokens included) is at most
        ``max_tokens``. A window whose text repeats an earlier window of the paper is left out:
        it adds nothing to retrieval, and thousands of identical vectors (a 1 MB abstract of one
        repeated phrase) broke Chroma's HNSW graph so that queries missed other papers.
    Raises:
        ValueError: when the window leaves no room for the abstract (max_tokens too small).
    """
    title_enc = tokenizer(title, add_special_tokens=False, return_offsets_mapping=True)
    title_ids = title_enc["input_ids"]
    if len(title_ids) > MAX_TITLE_TOKENS:
        title = title[: title_enc["offset_mapping"][MAX_TITLE_TOKENS - 1][1]]
        title_ids = title_ids[:MAX_TITLE_TOKENS]
    sep = 1 if title else 0
    budget = max_tokens - special_tokens - len(title_ids) - sep
    if budget <= overlap:
        raise ValueError(f"chunk window of {max_tokens} tokens leaves {budget} for the abstract "
                         f"(overlap {overlap}): raise chunk_tokens or lower chunk_overlap")
    prefix = f"{title}{SEPARATOR}" if title else ""

    enc = tokenizer(abstract, add_special_tokens=False, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]]
    n = len(offsets)
    if n == 0:
        text = title or abstract
        return [Chunk(chunk_id(paper_id, 0), paper_id, 0, text, len(title_ids) + special_tokens)]
    starts = _word_starts(offsets, abstract)
    chunks: list[Chunk] = []
    seen: set[str] = set()
    begin = 0
    while True:
        end = min(begin + budget, n)
        if end < n:  # cut before a word start so no word is split between windows
            cut = end
            while cut > begin + 1 and not starts[cut]:
                cut -= 1
            end = cut
        body = abstract[offsets[begin][0]: offsets[end - 1][1]]
        if body not in seen:  # a repeated window adds nothing, and identical vectors degrade HNSW
            seen.add(body)
            chunks.append(Chunk(chunk_id(paper_id, len(chunks)), paper_id, len(chunks), prefix + body,
                                len(title_ids) + sep + (end - begin) + special_tokens))
        if end >= n:
            return chunks
        nxt = max(end - overlap, begin + 1)
        while nxt > begin + 1 and not starts[nxt]:
            nxt -= 1
        begin = nxt


def search_text(paper: Paper) -> tuple[str, str, str]:
    """Normalised (title, abstract, BM25 text) of a paper: the BM25 text is the title, the
    keywords and the abstract (:mod:`rag.text`)."""
    title = normalise(paper.title)
    abstract = normalise(paper.abstract)
    keywords = "; ".join(normalise(k) for k in paper.keywords)
    text = f"{title}. {keywords}. {abstract}" if keywords else f"{title}. {abstract}"
    return title, abstract, text


def chunk_metadata(paper: Paper, chunk: Chunk, n_chunks: int) -> dict:
    """Chroma metadata of a chunk: ids and the filterable paper fields (no None values).

    ``rating`` is the paper's mean reviewer rating (float, rounded to 2 decimals, the
    conference's scale; :attr:`rag.types.Paper.rating`) and is absent when the paper is unrated,
    since Chroma metadata cannot hold None; ``n_ratings`` is the number of reviews (0 when
    unrated). ``year`` is -1 when unknown."""
    meta = {"paper_id": paper.id, "n": chunk.n, "n_chunks": n_chunks, "title": paper.title,
            "status": paper.status, "tier": status_tier(paper.status),
            "accepted": is_accepted(paper.status), "primary_area": paper.primary_area,
            "venue": paper.venue, "year": paper.year if paper.year is not None else -1,
            "n_ratings": len(paper.ratings)}
    rating = paper.rating
    if rating is not None:
        meta["rating"] = float(rating["mean"])
    return meta


def paper_chunks(paper: Paper, tokenizer: Tokenizer, *, max_tokens: int = 256,
                 overlap: int = 48, normalised: tuple[str, str] | None = None) -> list[Chunk]:
    """The chunks of ``paper`` as a build embeds them (:func:`chunk_paper` of its normalised
    title and abstract; ``normalised`` gives them when already at hand)."""
    title, abstract = normalised or search_text(paper)[:2]
    return chunk_paper(paper.id, title, abstract, tokenizer, max_tokens=max_tokens,
                       overlap=overlap)
