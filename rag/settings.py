"""The one settings object (ARCHITECTURE.md, habit 5).

Every field can be set from the environment with the ``PAPERCHAT_`` prefix (``PAPERCHAT_HOME``,
``PAPERCHAT_MODEL``, ``PAPERCHAT_K`` ...). The CLI and the UI build one :class:`Settings` and pass
it down; tests build their own pointing ``home`` at ``tmp_path``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

#: Index built from the bundled corpus on first use.
DEFAULT_INDEX = "default"

#: The bundled corpus: 19 accepted ICLR 2026 papers (the owner's list).
SEED_CORPUS = Path(__file__).resolve().parent.parent / "data" / "seed_papers.jsonl"

#: The prompt templates (ARCHITECTURE.md, habit 6).
PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


def _default_home() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "paperchat"


class Settings(BaseSettings):
    """Everything that can be tuned, with units. Unknown ``PAPERCHAT_*`` keys are ignored,
    unknown keyword arguments are an error (``extra="forbid"``)."""

    model_config = SettingsConfigDict(env_prefix="PAPERCHAT_", extra="forbid")

    home: Path = Field(default_factory=_default_home,
                       description="Directory holding the indexes (one sub-directory each).")
    index: str = Field(DEFAULT_INDEX, description="Name of the index to query.")

    # --- embedding and chunking -------------------------------------------------------------
    embedder: str = Field("all-MiniLM-L6-v2", description="Embedding model id (bundled).")
    embed_backend: str = Field(
        "onnx-int8",
        description="How the embedder runs: 'torch' (sentence-transformers fp32) or 'onnx-int8' "
        "(the same model exported once to ONNX and dynamically quantised; see rag.backends.embedder).")
    embed_variant: str | None = Field(
        None, description="ONNX int8 quantisation recipe for new indexes: 'int8' (8-bit weights; "
        "fastest with VNNI) or 'int8-avx2' (7-bit weights, first layer fp32; no saturation on "
        "CPUs without VNNI). None picks by the CPU; an existing index keeps its own "
        "(rag.backends.onnx_embedder).")
    embed_batch_size: int = Field(32, description="Texts per embedding batch.")
    chunk_tokens: int = Field(256, description="Chunk window in embedder tokens, special tokens "
                              "included; all-MiniLM-L6-v2 reads at most 256.")
    chunk_overlap: int = Field(48, description="Tokens shared by consecutive chunks of a paper.")
    fill_nice: int = Field(
        10, ge=0, le=19, description="Nice levels (Unix scheduling priority, 0-19) by which "
        "'paperchat index' lowers itself for its dense fill, once the index answers: questions "
        "asked beside the running build (ask, chat, the UI) then take the CPU first. Only "
        "matters when the CPU is busy, where it also slows the fill beside other work; 0 keeps "
        "the build's own priority. A build inside the app (the default index) is never lowered.")

    # --- retrieval -----------------------------------------------------------------------------
    k: int = Field(5, ge=1, le=50, description="Papers returned to the model and shown as cards.")
    dense_candidates: int = Field(200, description="Chunks fetched from Chroma per query.")
    lexical_candidates: int = Field(200, description="Papers kept from BM25 per query.")
    rrf_k: float = Field(60.0, description="Reciprocal rank fusion constant (Cormack et al. 2009).")
    lexical_weight: float = Field(0.8, description="Weight of the z-scored BM25 score against the "
                                  "z-scored dense score in fusion (see rag.retrieve.combine.zfusion).")
    fusion: Literal["learned", "fixed"] = Field(
        "learned", description="How the channels are fused (rag.retrieve.retriever.Retriever.search): "
        "'learned' scores candidates with the weights of rag/retrieve/fusion_weights.json (rag.retrieve.fusion, "
        "trained by bench/train_fusion.py); 'fixed' is z(dense) + lexical_weight * z(bm25).")
    topic_membership: bool = Field(True, description="Topic membership by meaning "
                                   "(rag.retrieve.membership): counts of a topic, a survey's "
                                   "order and cut, and the fallback of a filter that leaves none "
                                   "use the relevance model; off: the phrase rule and fused order.")
    query_adapter: bool = Field(True, description="Move the question's embedding with the trained "
                                "linear query adapter (rag.retrieve.query_adapter) for the dense "
                                "search that feeds the fusion; refusal keeps the plain cosine.")
    feedback_papers: int = Field(2, ge=0, le=20, description="Pseudo-relevance feedback: the "
                                 "top fused papers whose vectors move the query (0 = off; see "
                                 "rag.retrieve.retriever.Retriever.search).")
    feedback_weight: float = Field(0.5, ge=0.0, description="Rocchio beta: weight of the feedback "
                                   "papers' mean vector added to the query vector (alpha = 1).")
    max_question_chars: int = Field(4000, description="Longest question accepted, in chars.")

    # --- generation ----------------------------------------------------------------------------
    model: Path | None = Field(None, description="GGUF file for llama-cpp; default the bundled "
                               "SmolLM2-135M-Instruct.")
    llm_url: str | None = Field(None, description="OpenAI-compatible server base URL (…/v1).")
    chroma_url: str | None = Field(None, description="Chroma server URL (http://host:port).")
    n_ctx: int = Field(2048, description="Context window given to llama-cpp, in tokens.")
    n_threads: int = Field(2, description="CPU threads for llama-cpp.")
    max_answer_tokens: int = Field(256, description="Most tokens generated per answer.")
    temperature: float = Field(0.0, description="Sampling temperature (0 = greedy).")
    evidence_sentences: int = Field(3, description="Abstract sentences per paper in the prompt "
                                    "when the context window is small.")
    answer_mode: Literal["auto", "constrained", "extractive", "generative"] = Field(
        "auto", description="How the answer text is made (see rag.chat.answer): 'extractive' quotes "
        "abstract sentences chosen by the evidence scores; 'constrained' lets the model pick and "
        "order those sentences under a GBNF grammar; 'generative' lets it write, then checks "
        "every sentence; 'auto' picks by the model's size (small_model_params).")
    small_model_params: int = Field(
        1_000_000_000, description="Models with fewer parameters than this (read from the GGUF) "
        "get small_model_mode under answer_mode=auto; bigger ones and LLM servers get "
        "'generative'.")
    small_model_mode: Literal["constrained", "extractive"] = Field(
        "extractive", description="The mode auto picks for a small model; chosen by "
        "'paperchat eval --answers' (see rag.chat.answer.AUTO_SMALL_MODE).")
    requantize: str = Field(
        "Q4_0", description="The bundled GGUF (shipped as Q4_1) is re-quantised once to this type "
        "and cached under home/models (faster prompt processing on CPUs without a fast Q4_1 "
        "kernel); '' uses the shipped file. A --model file is never re-quantised.")
    repeat_ngram: int = Field(4, ge=2, description="Repetition guard: generation stops when a "
                              "word n-gram of this length occurs a third time.")

    # --- map ------------------------------------------------------------------------------------
    map_layout: bool = Field(
        True, description="Compute the 2-D map of every paper (index.layout: t-SNE positions and "
        "topic labels, saved as layout.npz beside the manifest) when a build changed papers; "
        "adds about 16 s at 5,358 papers and 50-66 s at 19,630 on 2 cores (README.md, 'Map'). "
        "Off: no map at index time; it is computed on its first use instead "
        "(index.layout.ensure_layout).")

    # --- grounding ------------------------------------------------------------------------------
    support_threshold: float = Field(
        0.5, description="Grounding score at or above which a sentence counts as supported by a "
        "cited abstract (see rag.compose.grounding for how the score is made and calibrated).")

    def index_dir(self, name: str | None = None) -> Path:
        """Directory of index ``name`` (default :attr:`index`) under :attr:`home`.

        Raises:
            PaperchatError: a name that is not letters, digits, ``.``, ``_`` and ``-`` (starting
                with a letter or digit, at most 100 chars): ``../evil`` must not leave the
                indexes directory.
        """
        name = name or self.index
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name):
            from rag.errors import PaperchatError

            raise PaperchatError(f"not a usable index name {name!r}: use letters, digits, '.', "
                                 "'_' and '-', starting with a letter or digit")
        return Path(self.home) / "indexes" / name
