"""What the CPU offers this process, for picking kernels and for printing beside benchmark figures.

The flags that matter for the int8 embedder are AVX2, AVX-512 and VNNI (the 8-bit dot-product
instructions): ONNX Runtime's int8 matrix kernels run about 2x faster with VNNI, and without it
their 8-bit x 8-bit products can saturate (see :mod:`rag.backends.onnx_embedder`). The features come from
numpy's runtime CPUID dispatch, so they are what this process sees: under the CPUID mask of
``bench/avx2only.c`` an AVX-512 machine reports AVX2 only, exactly as ONNX Runtime then behaves.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


def _proc_cpuinfo() -> tuple[str, set[str]]:
    """(model name, flags) of the first CPU in /proc/cpuinfo; ("unknown", set()) elsewhere."""
    model, flags = "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "flags" and not flags:
                    flags = set(value.split())
                elif key == "model name" and model == "unknown":
                    model = value.strip()
                if flags and model != "unknown":
                    break
    except OSError:
        pass
    return model, flags


@lru_cache(maxsize=1)
def cpu_features() -> dict[str, Any]:
    """The CPU as this process sees it.

    Returns:
        ``model`` (str, /proc/cpuinfo), ``avx2``, ``avx512f``, ``avx512_vnni`` (bool, from numpy's
        CPUID dispatch), ``avx_vnni`` (bool: the 256-bit VNNI of AVX2-only CPUs such as Alder Lake
        or Zen 5 laptops; numpy does not report it, so it is read from /proc/cpuinfo and counted
        only when the process is not masked), ``vnni`` (either VNNI) and ``masked`` (bool: True
        when /proc/cpuinfo lists AVX-512 but this process does not see it, i.e. a CPUID mask).
    """
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as seen
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as seen

    model, flags = _proc_cpuinfo()
    avx512f = bool(seen.get("AVX512F"))
    masked = "avx512f" in flags and not avx512f
    avx512_vnni = bool(seen.get("AVX512VNNI"))
    avx_vnni = "avx_vnni" in flags and not masked
    return {"model": model, "avx2": bool(seen.get("AVX2")), "avx512f": avx512f,
            "avx512_vnni": avx512_vnni, "avx_vnni": avx_vnni, "vnni": avx512_vnni or avx_vnni,
            "masked": masked}
