"""Load test: N simulated users chat with a running ``paperchat serve`` through ``gradio_client``.

Each user has its own ``gradio_client.Client`` (its own session, so its own conversation state on
the server) and, until the time is up, asks a dev-set question and then a follow-up about it
(``/chat`` endpoint, the UI's own), then starts a new session. For every request it records the
time to the first streamed answer token (the first streamed chat update whose answer bubble has
text; refusals stream no token) and the total latency, and it checks that the conversation the
server returned holds exactly this session's own questions, in order: anything else is a
cross-session leak. It prints requests completed, errors, refusals, median/p95 of both latencies,
leaks, and (for processes it started or was given) the peak RSS and CPU time of each server
process during the run. Figures, never pass/fail: the numbers depend on the machine and its load.

The script can start the deployment itself, on loopback free ports, and stops what it started:

    # in-process model (paperchat serve alone), index 'default' (built on first use):
    .venv/bin/python bench/load.py --users 8 --seconds 60 --start inprocess
    # the three processes: chroma run + python -m llama_cpp.server + paperchat serve:
    .venv/bin/python bench/load.py --users 8 --seconds 60 --start servers --index accepted
    # an already running server:
    .venv/bin/python bench/load.py --url http://127.0.0.1:7860 --users 8 --seconds 60

With ``--start servers`` the named index must exist under ``$PAPERCHAT_HOME`` (embedded); its
chunks are copied once into the Chroma server (:func:`upload_index`, no re-embedding) and the
catalog/BM25/manifest into a temporary home that ``paperchat serve --chroma-url`` then uses.

The process helpers (:func:`free_port`, :class:`Proc`, :func:`start_chroma`,
:func:`start_llm_server`, :func:`start_paperchat`) are also what the server-mode and fault tests
use (tests/test_servers.py, tests/test_faults.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
DEV_SET = ROOT.parent / "shared" / "eval" / "dev_hard.jsonl"
#: Follow-ups asked after each first question (read against it by rag.understand.read).
FOLLOWUPS = ["What dataset does it evaluate on?", "How does it compare to prior methods?",
             "What are its main limitations?", "Which baseline does it beat?",
             "Does it need labelled data?", "What is the key idea in one sentence?"]
#: Seconds between two polls of a streaming job's outputs (time-to-first-token resolution).
POLL_S = 0.05
#: Bounded waits, seconds.
START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 15.0

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# --- processes ------------------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (bound and released; tiny race, fine for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_ok(url: str, timeout_s: float = 2.0) -> bool:
    """True when ``GET url`` answers 200 (no proxy: loopback stays loopback)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


@dataclass
class Proc:
    """A server process started by :func:`start` with its output in ``log``; ``url`` is where
    it answers. :meth:`stop` is idempotent (SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``)."""

    name: str
    popen: subprocess.Popen
    url: str
    log: Path
    port: int

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self, tail: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-tail:]
        except OSError:
            return ""

    def wait_ready(self, probe: str, timeout_s: float = START_TIMEOUT_S) -> "Proc":
        """Wait until ``GET probe`` answers 200.

        Raises:
            RuntimeError: the process exited or did not answer in time (with its log's tail).
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive():
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n"
                                   f"{self.log_text()}")
            if http_ok(probe):
                return self
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer {probe} within {timeout_s:.0f} s:\n"
                           f"{self.log_text()}")

    def kill(self) -> None:
        """SIGKILL, at once (a crash, for fault tests)."""
        if self.alive():
            self.popen.kill()
            self.popen.wait(STOP_TIMEOUT_S)

    def stop(self) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT_S)

    def __enter__(self) -> "Proc":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(name: str, cmd: list[str], *, url: str, port: int, probe: str, env: dict | None = None,
          log_dir: Path | None = None, wait: bool = True,
          timeout_s: float = START_TIMEOUT_S) -> Proc:
    """Start ``cmd`` (stdout+stderr to ``<log_dir>/<name>.log``) and wait for ``probe``."""
    log_dir = Path(log_dir or tempfile.mkdtemp(prefix="paperchat-bench-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}-{port}.log"
    full_env = {**os.environ, **(env or {})}
    with log.open("wb") as fh:
        popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=full_env,
                                 stdin=subprocess.DEVNULL, cwd=str(ROOT))
    proc = Proc(name, popen, url, log, port)
    if wait:
        try:
            proc.wait_ready(probe, timeout_s)
        except BaseException:
            proc.stop()
            raise
    return proc


def start_chroma(path: Path, *, port: int | None = None, log_dir: Path | None = None) -> Proc:
    """``chroma run --path PATH --port PORT`` on 127.0.0.1; ``url`` is ``http://127.0.0.1:PORT``."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    return start("chroma", [str(VENV_BIN / "chroma"), "run", "--path", str(path), "--host",
                            "127.0.0.1", "--port", str(port)],
                 url=url, port=port, probe=f"{url}/api/v2/heartbeat", log_dir=log_dir,
                 env={"ANONYMIZED_TELEMETRY": "False"}, timeout_s=120)


def start_llm_server(model: Path | str | None = None, *, port: int | None = None,
                     n_ctx: int = 2048, n_threads: int = 2, log_dir: Path | None = None,
                     extra: list[str] = ()) -> Proc:
    """``python -m llama_cpp.server`` on 127.0.0.1 with ``model`` (default the bundled SmolLM2
    GGUF); ``url`` is ``http://127.0.0.1:PORT/v1``. ``--interrupt_requests False``: a second
    request waits instead of cutting the running answer short."""
    from rag import offline

    port = port or free_port()
    url = f"http://127.0.0.1:{port}/v1"
    model = model or offline.bundled_gguf()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
           "--n_threads", str(n_threads), "--n_threads_batch", str(n_threads),
           "--interrupt_requests", "False", "--verbose", "False", *extra]
    return start("llm-server", cmd, url=url, port=port, probe=f"{url}/models", log_dir=log_dir,
                 timeout_s=120)


def start_paperchat(home: Path, *, index: str | None = None, port: int | None = None,
                    chroma_url: str | None = None, llm_url: str | None = None,
                    log_dir: Path | None = None, extra: list[str] = (),
                    env: dict | None = None) -> Proc:
    """``paperchat serve`` on 127.0.0.1 with ``PAPERCHAT_HOME=home``."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [str(VENV_BIN / "paperchat"), "serve", "--host", "127.0.0.1", "--port", str(port),
           *(["--index", index] if index else []),
           *(["--chroma-url", chroma_url] if chroma_url else []),
           *(["--llm-url", llm_url] if llm_url else []), *extra]
    return start("paperchat-serve", cmd, url=url, port=port, probe=f"{url}/config",
                 env={"PAPERCHAT_HOME": str(home), **(env or {})}, log_dir=log_dir)


def upload_index(home: Path, name: str, chroma_url: str, new_home: Path) -> int:
    """Copy embedded index ``name`` under ``home`` to server mode: its chunks (ids, vectors,
    documents, metadata, collection metadata) into collection ``paperchat-<name>`` on the Chroma
    server, its catalog/BM25/manifest into ``new_home``. No re-embedding. Returns chunks copied."""
    import numpy as np

    from rag.backends.store import ChromaStore
    from rag.paths import CHROMA_DIR, LOCK_FILE, IndexPaths, collection_name
    from rag.settings import Settings

    src_dir = Settings(home=home).index_dir(name)
    dst_dir = Settings(home=new_home).index_dir(name)
    shutil.copytree(src_dir, dst_dir, ignore=shutil.ignore_patterns(CHROMA_DIR, LOCK_FILE),
                    dirs_exist_ok=True)
    src = ChromaStore(IndexPaths(src_dir).chroma, collection=collection_name(name, server=False),
                      create=False)
    dst = ChromaStore(None, url=chroma_url, collection=collection_name(name, server=True),
                      create=True, metadata=src.metadata)
    total = 0
    for got in src.pages(["embeddings", "documents", "metadatas"], page=2000):
        if got["ids"]:
            dst.upsert(got["ids"], np.asarray(got["embeddings"], dtype=np.float32),
                       got["documents"], got["metadatas"])
            total += len(got["ids"])
    return total


# --- resource sampling --------------------------------------------------------------------------
class Sampler:
    """Samples RSS (MB, the process and its children) and CPU time (s) of named pids every
    ``every`` seconds in a thread; :meth:`report` gives the peak RSS and the CPU used since
    :meth:`start` (and its share of one core)."""

    def __init__(self, pids: dict[str, int], every: float = 0.5):
        self.pids = pids
        self.every = every
        self.peak: dict[str, float] = {k: 0.0 for k in pids}
        self.cpu0: dict[str, float] = {}
        self.cpu1: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = self.t1 = 0.0

    @staticmethod
    def _measure(pid: int) -> tuple[float, float]:
        import psutil

        try:
            p = psutil.Process(pid)
            procs = [p] + p.children(recursive=True)
        except psutil.Error:
            return 0.0, 0.0
        rss = cpu = 0.0
        for q in procs:
            try:
                rss += q.memory_info().rss / 2**20
                t = q.cpu_times()
                cpu += t.user + t.system
            except psutil.Error:
                pass
        return rss, cpu

    def _run(self) -> None:
        while not self._stop.is_set():
            for k, pid in self.pids.items():
                rss, cpu = self._measure(pid)
                self.peak[k] = max(self.peak[k], rss)
                if cpu:
                    self.cpu1[k] = cpu
            self._stop.wait(self.every)

    def start(self) -> "Sampler":
        self.t0 = time.monotonic()
        for k, pid in self.pids.items():
            rss, cpu = self._measure(pid)
            self.cpu0[k], self.peak[k] = cpu, rss
        self._thread.start()
        return self

    def stop(self) -> dict[str, dict[str, float]]:
        self._stop.set()
        self._thread.join(5)
        self.t1 = time.monotonic()
        wall = max(self.t1 - self.t0, 1e-9)
        return self.report(wall)

    def report(self, wall: float) -> dict[str, dict[str, float]]:
        out = {}
        for k in self.pids:
            cpu = self.cpu1.get(k, self.cpu0.get(k, 0.0)) - self.cpu0.get(k, 0.0)
            out[k] = {"peak_rss_mb": round(self.peak[k], 1), "cpu_s": round(cpu, 1),
                      "cpu_percent_of_one_core": round(100 * cpu / wall, 1)}
        return out


# --- simulated users ----------------------------------------------------------------------------
@dataclass
class RequestResult:
    user: int
    turn: int               # 1 = first question, 2 = follow-up
    ok: bool
    total_s: float
    ttft_s: float | None    # None: no token streamed (refusal) or failed before one
    refused: bool = False
    leak: bool = False
    error: str = ""


@dataclass
class LoadReport:
    users: int
    seconds: float
    results: list[RequestResult] = field(default_factory=list)
    resources: dict[str, dict[str, float]] = field(default_factory=dict)
    wall_s: float = 0.0

    def summary(self) -> dict:
        ok = [r for r in self.results if r.ok]
        ttft = sorted(r.ttft_s for r in ok if r.ttft_s is not None)
        total = sorted(r.total_s for r in ok)
        errors: dict[str, int] = {}
        for r in self.results:
            if not r.ok:
                errors[r.error] = errors.get(r.error, 0) + 1
        return {
            "users": self.users, "seconds": self.seconds, "wall_s": round(self.wall_s, 1),
            "requests_completed": len(ok), "errors": sum(errors.values()),
            "error_kinds": errors, "refused": sum(r.refused for r in ok),
            "answered_with_tokens": len(ttft),
            "cross_session_leaks": sum(r.leak for r in self.results),
            "ttft_s": _stats(ttft), "total_s": _stats(total),
            "requests_per_min": round(60 * len(ok) / max(self.wall_s, 1e-9), 2),
            "resources": self.resources,
        }


def _stats(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"n": 0, "median": None, "p95": None, "max": None}
    p95 = xs[min(len(xs) - 1, max(0, round(0.95 * len(xs) + 0.5) - 1))]  # nearest rank
    return {"n": len(xs), "median": round(statistics.median(xs), 2), "p95": round(p95, 2),
            "max": round(xs[-1], 2)}


def load_questions(path: Path = DEV_SET) -> list[str]:
    """Dev-set questions to ask first (not the out-of-corpus ones, not the follow-up turns);
    a few fixed ones when the dev set is absent."""
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        qs = [r["question"] for r in rows if r.get("type") in ("specific", "comparative")]
        if qs:
            return qs
    except (OSError, ValueError, KeyError):
        pass
    return ["Which papers use large language models to design heuristics?",
            "Which paper studies reinforcement learning from offline data?",
            "Is there a paper about pruning models for phones?"]


def message_text(content) -> str:
    """Text of a Gradio chat message's content (a string or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or content.get("value") or "")
    if isinstance(content, (list, tuple)):
        return "".join(message_text(c) for c in content)
    return "" if content is None else str(content)


def user_turns(chat) -> list[str]:
    """The user messages of a chat value, in order."""
    out = []
    for m in chat or []:
        if isinstance(m, dict) and m.get("role") == "user":
            out.append(message_text(m.get("content")).strip())
    return out


def is_leak(expected_questions: list[str], chat) -> bool:
    """True when the returned conversation is not exactly this session's own questions, in order
    (compared as the UI renders a question, ``ui.render.user_markdown``)."""
    from ui.render import user_markdown

    want = [user_markdown(q).strip() for q in expected_questions]
    return user_turns(chat) != want


def _assistant_has_text(chat) -> bool:
    from ui.render import CURSOR

    msgs = [m for m in chat or [] if isinstance(m, dict)]
    if not msgs or msgs[-1].get("role") != "assistant":
        return False
    return message_text(msgs[-1].get("content")).endswith(CURSOR.strip())


def ask_once(client, question: str, *, user: int, turn: int, history: list[str],
             timeout_s: float) -> RequestResult:
    """One ``/chat`` request, streamed; ``history`` is this session's questions so far."""
    t0 = time.monotonic()
    ttft = None
    try:
        job = client.submit(question, "any", "any", api_name="/chat")
        seen = 0
        while not job.done():
            outs = job.outputs()
            if ttft is None and len(outs) > seen:
                for o in outs[seen:]:
                    if _assistant_has_text(o[0] if isinstance(o, (list, tuple)) else o):
                        ttft = time.monotonic() - t0
                        break
                seen = len(outs)
            if time.monotonic() - t0 > timeout_s:
                job.cancel()
                raise TimeoutError(f"no result within {timeout_s:.0f} s")
            time.sleep(POLL_S)
        out = job.result(timeout=5)
        total = time.monotonic() - t0
        chat = out[0] if isinstance(out, (list, tuple)) else out
        if ttft is None and any(_assistant_has_text(o[0] if isinstance(o, (list, tuple)) else o)
                                for o in job.outputs()):
            ttft = total  # streamed so fast that no poll saw it before the end
        refused = ttft is None
        leak = is_leak(history + [question], chat)
        return RequestResult(user, turn, True, total, ttft, refused=refused, leak=leak)
    except Exception as exc:  # noqa: BLE001 - every failure is a counted error, not a crash
        kind = type(exc).__name__
        msg = " ".join(str(exc).split())[:160]
        return RequestResult(user, turn, False, time.monotonic() - t0, ttft,
                             error=f"{kind}: {msg}" if msg else kind)


def user_loop(uid: int, url: str, questions: list[str], deadline: float, out: list,
              lock: threading.Lock, auth=None, timeout_s: float = 600.0) -> None:
    """One simulated user: question + follow-up per session until ``deadline``."""
    from gradio_client import Client

    rng = random.Random(uid)
    i = uid
    client = None
    try:
        client = Client(url, verbose=False, auth=auth, analytics_enabled=False,
                        download_files=False)
        while time.monotonic() < deadline:
            client.reset_session()  # a new conversation, as a new browser tab would start
            q1 = questions[i % len(questions)]
            q2 = FOLLOWUPS[rng.randrange(len(FOLLOWUPS))]
            i += 7
            history: list[str] = []
            for turn, q in ((1, q1), (2, q2)):
                r = ask_once(client, q, user=uid, turn=turn, history=history,
                             timeout_s=timeout_s)
                with lock:
                    out.append(r)
                if not r.ok:
                    break
                history.append(q)
                if time.monotonic() >= deadline:
                    break
    except Exception as exc:  # noqa: BLE001 - the client could not even connect
        with lock:
            out.append(RequestResult(uid, 0, False, 0.0, None,
                                     error=f"{type(exc).__name__}: {exc}"[:200]))
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001
                pass


def run_load(url: str, *, users: int, seconds: float, questions: list[str] | None = None,
             auth=None, pids: dict[str, int] | None = None,
             timeout_s: float = 600.0) -> LoadReport:
    """Drive ``url`` with ``users`` concurrent users for ``seconds`` seconds (no new question
    is started after that; the ones running finish, each bounded by ``timeout_s``)."""
    from rag import offline

    offline.enforce()
    questions = questions or load_questions()
    report = LoadReport(users, seconds)
    sampler = Sampler(pids or {}).start()
    lock = threading.Lock()
    t0 = time.monotonic()
    deadline = t0 + seconds
    threads = [threading.Thread(target=user_loop, daemon=True,
                                args=(u, url, questions, deadline, report.results, lock, auth,
                                      timeout_s)) for u in range(users)]
    for t in threads:
        t.start()
        time.sleep(0.05)  # users arrive over a few hundred ms, not in one instant
    for t in threads:
        t.join(seconds + timeout_s + 30)
    report.wall_s = time.monotonic() - t0
    report.resources = sampler.stop()
    return report


def format_summary(s: dict) -> str:
    def st(d):
        return "-" if d["n"] == 0 else f"median {d['median']:.2f} s, p95 {d['p95']:.2f} s, " \
            f"max {d['max']:.2f} s (n={d['n']})"

    lines = [f"{s['users']} users for {s['seconds']:.0f} s (wall {s['wall_s']:.0f} s incl. "
             f"draining): {s['requests_completed']} requests completed "
             f"({s['requests_per_min']}/min), {s['errors']} errors, {s['refused']} refused, "
             f"{s['cross_session_leaks']} cross-session leaks",
             f"  time to first token: {st(s['ttft_s'])}",
             f"  total latency:       {st(s['total_s'])}"]
    for kind, n in s["error_kinds"].items():
        lines.append(f"  error x{n}: {kind}")
    for name, r in s["resources"].items():
        lines.append(f"  {name}: peak RSS {r['peak_rss_mb']:.0f} MB, CPU {r['cpu_s']:.0f} s "
                     f"({r['cpu_percent_of_one_core']:.0f}% of one core)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", help="a running paperchat serve (else --start)")
    p.add_argument("--start", choices=["inprocess", "servers"],
                   help="start paperchat serve alone (in-process model) or with chroma run and "
                   "llama_cpp.server, on free loopback ports; stopped at the end")
    p.add_argument("--users", type=int, default=8)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--index", default=None, help="index name (default: default)")
    p.add_argument("--home", default=os.environ.get("PAPERCHAT_HOME"),
                   help="PAPERCHAT_HOME holding the index (default: $PAPERCHAT_HOME)")
    p.add_argument("--auth", default=None, help="USER:PASS of the server")
    p.add_argument("--timeout", type=float, default=600, help="seconds per request at most")
    p.add_argument("--llm-threads", type=int, default=2,
                   help="--n_threads of llama_cpp.server with --start servers (the in-process "
                   "model takes PAPERCHAT_N_THREADS)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not args.url and not args.start:
        p.error("give --url or --start")
    auth = tuple(args.auth.split(":", 1)) if args.auth else None

    procs: list[Proc] = []
    scratch = Path(tempfile.mkdtemp(prefix="paperchat-load-"))
    try:
        url, pids = args.url, {}
        if args.start:
            home = Path(args.home) if args.home else scratch / "home"
            if args.start == "inprocess":
                serve = start_paperchat(home, index=args.index, log_dir=scratch)
                procs.append(serve)
            else:
                name = args.index or "default"
                chroma = start_chroma(scratch / "chroma", log_dir=scratch)
                procs.append(chroma)
                llm = start_llm_server(log_dir=scratch, n_threads=args.llm_threads)
                procs.append(llm)
                server_home = scratch / "server-home"
                if (home / "indexes" / name).exists():
                    n = upload_index(home, name, chroma.url, server_home)
                    print(f"copied {n} chunks of index {name!r} to {chroma.url}", file=sys.stderr)
                serve = start_paperchat(server_home, index=args.index, chroma_url=chroma.url,
                                        llm_url=llm.url, log_dir=scratch)
                procs.append(serve)
                pids["chroma run"] = chroma.pid
                pids["llama_cpp.server"] = llm.pid
            pids["paperchat serve"] = serve.pid
            url = serve.url
            print(f"started {', '.join(f'{p.name} (pid {p.pid}) {p.url}' for p in procs)}; "
                  f"logs in {scratch}", file=sys.stderr)
        idle = Sampler(pids).start()
        time.sleep(2)
        idle_res = idle.stop()
        report = run_load(url, users=args.users, seconds=args.seconds, auth=auth, pids=pids,
                          timeout_s=args.timeout)
        summary = report.summary()
        summary["idle_rss_mb"] = {k: v["peak_rss_mb"] for k, v in idle_res.items()}
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            print(format_summary(summary))
            if summary["idle_rss_mb"]:
                print("  idle RSS before the run: " + ", ".join(
                    f"{k} {v:.0f} MB" for k, v in summary["idle_rss_mb"].items()))
        return 0
    finally:
        for proc in reversed(procs):
            proc.stop()
        for proc in procs:
            if proc.popen.returncode not in (0, -signal.SIGTERM, None) and not args.json:
                print(f"{proc.name} exited with {proc.popen.returncode}; log: {proc.log}",
                      file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
