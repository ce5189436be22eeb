"""Prompt templates are files in ``prompts/`` (ARCHITECTURE.md, habit 6); variables are checked.

Templates use ``str.format`` fields (``{question}``). :func:`render` raises
:class:`TemplateError` for a missing variable *and* for an unknown one, so a renamed variable
fails loudly instead of silently leaving ``{papers}`` in a prompt.
"""

from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

from rag.errors import PaperchatError
from rag.settings import PROMPTS_DIR


class TemplateError(PaperchatError):
    """A template is missing, or its variables differ from the ones supplied."""


@lru_cache(maxsize=None)
def load(name: str, directory: str | None = None) -> str:
    """Text of ``prompts/<name>.txt`` (trailing newline stripped)."""
    path = Path(directory or PROMPTS_DIR) / f"{name}.txt"
    if not path.is_file():
        raise TemplateError(f"prompt template not found: {path}")
    return path.read_text(encoding="utf-8").rstrip("\n")


def variables(template: str) -> set[str]:
    """Names of the ``{fields}`` in a template."""
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def render(name: str, **values) -> str:
    """Render template ``name`` with exactly its variables.

    Raises:
        TemplateError: a variable is missing or unknown (names listed).
    """
    template = load(name)
    need = variables(template)
    missing, unknown = need - values.keys(), values.keys() - need
    if missing or unknown:
        raise TemplateError(f"template {name!r}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    # str.format does not re-read the values, so braces in user text stay literal
    return template.format(**{k: str(v) for k, v in values.items()})


def names() -> list[str]:
    """Every template in ``prompts/``."""
    return sorted(p.stem for p in Path(PROMPTS_DIR).glob("*.txt"))
