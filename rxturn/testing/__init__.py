"""rxturn's test kit: a scripted fake provider that speaks the real wire formats, and a
virtual-time kit (:mod:`rxturn.testing.virtual`) with pytest fixtures
(:mod:`rxturn.testing.pytest_plugin`; docs/testing.md).

:class:`FakeProvider` is a real aiohttp server on 127.0.0.1. Point the official ``anthropic``
or ``openai`` SDK, rxturn's own clients, or plain HTTP at its :attr:`~FakeProvider.base_url`,
and each request is answered by the next entry of a :class:`Scenario`: a reply (text,
thinking, tool calls, usage, streamed in deltas) or a fault (an HTTP error with
``Retry-After``, a dropped connection, a stall, broken JSON, an in-stream error event).
The demo, the notebooks, the benchmarks and the loopback tests all run against it, offline.
docs/fake-provider.md documents the scenario format, with an example per fault.

:func:`assert_no_secret` walks any object graph (an exception with its chain, exported spans)
and fails naming the path where an API key is still reachable.

:class:`MockTransport` is the lighter tool, one level lower: the transport a client sends
through, answering each request with a :class:`MockResponse` you wrote (status, headers, the
body as exact chunks, optionally a mid-body error) — no server, no sockets, like httpx's.

Importing this package imports aiohttp; ``import rxturn`` never imports it.

Examples:
    >>> async def main() -> None:
    ...     async with FakeProvider({"models": {"*": [{"text": "Hello"}]}}) as fake:
    ...         ...  # AnthropicClient(base_url=fake.base_url, ...)
"""

from __future__ import annotations

from ._mock import MockHttpResponse, MockRequest, MockResponse, MockTransport
from ._scenario import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_SCENARIO,
    Entry,
    Scenario,
    ScenarioToolCall,
    ScenarioUsage,
    load_scenario,
)
from ._secrets import assert_no_secret, find_secret
from ._server import FakeProvider, ReceivedRequest, RequestRecord
from .virtual import (
    HANG,
    Later,
    Run,
    ScriptedClient,
    StillRunning,
    drive,
    reply,
    run_virtual,
    timeline,
)

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_SCENARIO",
    "HANG",
    "Entry",
    "FakeProvider",
    "Later",
    "MockHttpResponse",
    "MockRequest",
    "MockResponse",
    "MockTransport",
    "ReceivedRequest",
    "RequestRecord",
    "Run",
    "Scenario",
    "ScenarioToolCall",
    "ScenarioUsage",
    "ScriptedClient",
    "StillRunning",
    "assert_no_secret",
    "drive",
    "find_secret",
    "load_scenario",
    "reply",
    "run_virtual",
    "timeline",
]
