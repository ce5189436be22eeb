"""Time to the first right answer while an index builds (issue 22's goal): start ``paperchat index
LIST --name all_t`` in a new ``PAPERCHAT_HOME``, then ask ``paperchat ask QUESTION --index all_t
--json`` again and again (a pause of :data:`PAUSE_S` between two asks) until the first hit is
the expected paper, and print the seconds from the start of ``paperchat index``.

    .venv/bin/python bench/first_answer.py                    # 3 runs, this CPU's own path
    .venv/bin/python bench/first_answer.py --avx2             # as an AVX2-only CPU (bench/avx2)
    .venv/bin/python bench/first_answer.py --runs 1 --full    # then the whole build, by stage

Every run gets an empty temporary home, so it pays what a first index on a new machine pays
(the ONNX export of the embedder, the re-quantised GGUF) unless ``--models DIR`` copies a
``models/`` directory into it first. Each run prints: the seconds to the right answer, when
the index said it answers (its own ``answers now (N s)`` line, from its start), how many asks
it took and how long the last one ran, and the load average (``/proc/loadavg``) at the start
and at the answer: the machine may be shared, so the figures are noisy. With ``--full`` the
build then runs to its end and its summary and stage line are printed too; otherwise it is
stopped (its process group, which this script started) once the answer came. The build runs
in this script's session, as a script that starts it in the background and then asks would;
``--own-session`` starts it in a session of its own, as from another terminal (Linux shares the
CPU between sessions first: ``index.dense_fill.lower_priority``).

The commands run from this checkout (``python -m rag`` with ``PYTHONPATH`` set to it), with
``--avx2`` through ``bench/avx2`` (the CPUID mask, or QEMU, which is far too slow to time).
Figures, never pass or fail.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT.parent / "shared" / "data" / "iclr2026_all.jsonl"
QUESTION = "Which paper proposes StepORLM?"
EXPECT = "ZrgxU8WMmG"
INDEX = "all_t"
#: Seconds between the end of one ask and the start of the next.
PAUSE_S = 1.0
#: Give up on a run after this many seconds without the right answer.
TIMEOUT_S = 900.0


def loadavg() -> str:
    """The 1-, 5- and 15-minute load averages, as ``/proc/loadavg`` gives them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def command(avx2: bool, *args: str) -> list[str]:
    """``python -m rag ARGS`` of this checkout, through ``bench/avx2`` with ``avx2``."""
    prefix = [str(ROOT / "bench" / "avx2")] if avx2 else []
    return [*prefix, sys.executable, "-m", "rag", *args]


def run_once(args, n: int) -> dict:
    home = Path(tempfile.mkdtemp(prefix=f"first-answer-{n}-"))
    if args.models:
        shutil.copytree(args.models, home / "models")
    env = {**os.environ, "PAPERCHAT_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    log_path = home / "index.log"
    out = {"run": n, "home": str(home), "load_start": loadavg()}
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        # a process group of its own (so that it can be stopped with its workers), in this
        # session unless --own-session: Linux's autogroups share the CPU between sessions
        group = {"start_new_session": True} if args.own_session else {"process_group": 0}
        build = subprocess.Popen(command(args.avx2, "index", str(args.list), "--name", INDEX),
                                 stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                 **group)
        asks = []
        try:
            while time.perf_counter() - t0 < args.timeout:
                a0 = time.perf_counter()
                done = subprocess.run(command(args.avx2, "ask", args.question, "--index", INDEX,
                                              "--json"),
                                      capture_output=True, text=True, env=env, cwd=ROOT)
                a1 = time.perf_counter()
                first = None
                if done.returncode == 0:
                    try:
                        hits = json.loads(done.stdout).get("hits") or []
                        first = hits[0]["id"] if hits else None
                    except (ValueError, KeyError, IndexError, TypeError):
                        first = None
                asks.append({"start_s": round(a0 - t0, 1), "seconds": round(a1 - a0, 1),
                             "rc": done.returncode, "first": first})
                if first == args.expect:
                    out["answer_s"] = round(a1 - t0, 1)
                    out["load_answer"] = loadavg()
                    break
                if build.poll() is not None and build.returncode != 0:
                    break
                time.sleep(PAUSE_S)
            out["asks"] = asks
            if args.full and build.poll() is None:
                build.wait()
                out["full_s"] = round(time.perf_counter() - t0, 1)
                out["load_end"] = loadavg()
        finally:
            if build.poll() is None:
                os.killpg(build.pid, signal.SIGTERM)  # the build and its workers: started here
                try:
                    build.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(build.pid, signal.SIGKILL)
                    build.wait()
    text = log_path.read_text(errors="replace")
    ready = re.search(r"answers now \(([\d.]+) s(?:: ([^)]*))?\)", text)
    out["ready_s"] = float(ready.group(1)) if ready else None
    out["ready_stages"] = ready.group(2) if ready else None
    if args.full:
        out["summary"] = "\n".join(line for line in text.splitlines()
                                   if line.startswith(("index '", "time by stage")))
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--avx2", action="store_true", help="run every command through bench/avx2")
    p.add_argument("--list", type=Path, default=LIST, help=f"paper list (default {LIST})")
    p.add_argument("--question", default=QUESTION)
    p.add_argument("--expect", default=EXPECT, help="paper id the first hit must have")
    p.add_argument("--models", type=Path, default=None,
                   help="a models/ directory copied into each new home (skips the exports)")
    p.add_argument("--full", action="store_true", help="let each build finish; print its stages")
    p.add_argument("--keep", action="store_true", help="keep the temporary homes")
    p.add_argument("--own-session", action="store_true",
                   help="start the build in a session of its own (as from another terminal)")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S)
    p.add_argument("--json", action="store_true", help="one JSON object per run, then the median")
    args = p.parse_args(argv)
    path = subprocess.run([str(ROOT / "bench" / "avx2"), "--how"], capture_output=True,
                          text=True).stdout.strip() if args.avx2 else "native"
    print(f"CPU path: {path}; list {args.list}; question {args.question!r}", flush=True)
    results = []
    for n in range(1, args.runs + 1):
        r = run_once(args, n)
        results.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            last = r["asks"][-1] if r.get("asks") else {}
            print(f"run {n}: right answer after {r.get('answer_s', 'none')} s (index answering "
                  f"after {r['ready_s']} s: {r['ready_stages']}; {len(r.get('asks', []))} asks, "
                  f"the last {last.get('seconds')} s); load {r['load_start']} -> "
                  f"{r.get('load_answer', '?')}", flush=True)
            if args.full:
                print(f"  full build {r.get('full_s')} s (load at the end {r.get('load_end')})\n  "
                      + r.get("summary", "").replace("\n", "\n  "), flush=True)
    got = [r["answer_s"] for r in results if "answer_s" in r]
    if got:
        print(f"median of {len(got)}: {statistics.median(got):.1f} s to the right answer "
              f"(runs: {', '.join(f'{x:.1f}' for x in got)})")
    return 0 if len(got) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
