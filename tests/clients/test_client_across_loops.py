"""A client, and an engine, made outside any event loop (at module level, in a script) and used
by one ``asyncio.run`` after another: each run is a new loop, and each gets its own pool.

The second run was a ConfigError on every client ("its connection pool belongs to another event
loop"), and the first run's pool was reported unclosed at exit. The fake provider runs on a loop
of its own, in a thread, as a real server would outlive the runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from _client_support import PROVIDER_IDS, PROVIDERS, Provider

from rxturn import TurnEngine
from rxturn.testing import FakeProvider
from rxturn.transport import AiohttpTransport


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout=10)

    server = FakeProvider({"models": {"*": [{"text": "hello there", "chunk_chars": 4}]}})
    run(server.start())
    try:
        yield server
    finally:
        run(server.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
def test_one_client_and_engine_serve_one_asyncio_run_after_another(
    fake: FakeProvider, provider: Provider
) -> None:
    client = provider.client(fake)
    engine = TurnEngine(client)
    for number in range(3):
        result = asyncio.run(asyncio.wait_for(engine.run(f"hi {number}"), 10))
        assert result.text == "hello there"
        pool = client._transport
        assert isinstance(pool, AiohttpTransport) and pool.closed  # closed as its loop shut down
    assert len(engine.session.runs) == 3
