"""The network side of ``paperchat fetch`` (:mod:`index.fetch`): openreview-py's client for
OpenReview and a requests session for Paper Copilot, both with openreview-py's retry policy
(:data:`RETRY_POLICY`) and a timeout on every request (:data:`TIMEOUT`), and the one-line
:class:`rag.errors.FetchError` that a network failure becomes."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rag.errors import FetchError

if TYPE_CHECKING:
    from index.fetch_source import Source


#: openreview-py 2.9's retry policy (``OpenReviewClient.__init__``): ``total`` tries in all,
#: ``backoff_factor * 2 ** (n - 1)`` seconds between them (plus up to 1 s of jitter), capped at
#: ``backoff_max``; 429 and 5xx retried, ``Retry-After`` honoured. Paper Copilot downloads use
#: the same numbers.
RETRY_POLICY = dict(total=8, connect=1, backoff_factor=1, backoff_max=120, backoff_jitter=1,
                    status_forcelist=[429, 500, 502, 503, 504], raise_on_status=False,
                    respect_retry_after_header=True)
#: (connect, read) timeout of every request, seconds.
TIMEOUT = (10.0, 120.0)


class _ToStderr(io.TextIOBase):
    """A stdout stand-in for openreview-py's retry messages (it prints them): they go to stderr
    above the progress bar, so stdout keeps only paperchat's own summary."""

    def write(self, text: str) -> int:
        if text.strip():
            from tqdm import tqdm

            tqdm.write(f"openreview-py: {text.strip()}", file=sys.stderr)
        return len(text)


def _saved(count: int, what: str, where: Path) -> str:
    """The resume hint of an error: ``300 papers are saved in X: run the same command again to
    resume``, or ``nothing was saved``."""
    return (f"{count:,} {what} are saved in {where}: run the same command again to resume"
            if count else "nothing was saved")


def _http_error(source: Source, url: str, exc: BaseException, saved: str) -> FetchError:
    """A one-line FetchError for a network failure; ``saved`` is :func:`_saved`'s hint."""
    import requests

    text = str(exc)
    if isinstance(exc, requests.exceptions.Timeout):
        cause = f"no answer within {TIMEOUT[1]:.0f} s"
    elif re.search(r"Name or service not known|Temporary failure in name resolution|"
                   r"nodename nor servname|getaddrinfo failed|No address associated", text):
        cause = "the host name does not resolve (offline?)"
    elif "Connection refused" in text:
        cause = "connection refused"
    elif re.search(r"RemoteDisconnected|Connection aborted|reset by peer|IncompleteRead|"
                   r"ProtocolError|ChunkedEncodingError", text):
        cause = "the connection dropped"
    elif isinstance(exc, requests.exceptions.ConnectionError):
        cause = "the network is unreachable"
    else:
        cause = re.sub(r"\s+", " ", text)[:200]
    return FetchError(f"cannot fetch {source.spec} from {url}: {cause}. paperchat fetch needs "
                      f"the network (the only paperchat command that uses it); {saved}")


def _with_timeout(adapter_cls):
    """An HTTPAdapter subclass whose requests get :data:`TIMEOUT` unless given one."""

    class TimeoutAdapter(adapter_cls):
        def send(self, request, **kwargs):
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = TIMEOUT
            return super().send(request, **kwargs)

    return TimeoutAdapter


def openreview_client(api: str, retries: int | None = None):
    """openreview-py's ``OpenReviewClient`` for ``api``, as a guest (public notes need no login;
    openreview-py logs in only when ``OPENREVIEW_USERNAME``/``OPENREVIEW_PASSWORD`` are set),
    with its own retry policy kept and :data:`TIMEOUT` added; ``retries`` replaces
    the policy's ``total`` (0: fail at the first error; tests use it to interrupt a download).

    Raises:
        FetchError: openreview-py is not installed (the message gives the pip command).
    """
    try:
        import openreview
        from requests.adapters import HTTPAdapter
    except ImportError:
        raise FetchError("paperchat fetch openreview:... needs openreview-py: "
                         "pip install openreview-py") from None
    client = openreview.api.OpenReviewClient(baseurl=api)
    adapter_cls = _with_timeout(HTTPAdapter)
    for prefix, adapter in list(client.session.adapters.items()):
        retry = adapter.max_retries
        if retries is not None:
            retry = retry.new(total=retries, connect=min(retry.connect or 0, retries))
        client.session.mount(prefix, adapter_cls(max_retries=retry, pool_maxsize=8))
    return client


def _session(retries: int | None = None):
    """A requests Session with :data:`RETRY_POLICY` (``retries`` replacing its ``total``) and
    :data:`TIMEOUT` on every request."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    policy = dict(RETRY_POLICY)
    if retries is not None:
        policy.update(total=retries, connect=min(policy["connect"], retries))
    session = requests.Session()
    adapter = _with_timeout(HTTPAdapter)(max_retries=Retry(**policy))
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = "paperchat-fetch"
    return session
