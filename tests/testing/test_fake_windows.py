"""``rate_limit_windows`` (docs/fake-provider.md, "Load"): in a window every request is refused,
whatever its model, and takes no entry; windows count from the first request the server got.

The server's clock is moved by shifting the first arrival back (what the windows count from),
so no test waits for a window to pass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

SCENARIO = {
    "models": {"a": [{"text": "first of a"}, {"text": "second of a"}], "*": [{"text": "any"}]},
    "rate_limit_windows": [
        {"seconds": 100, "status": 529, "retry_after": 0.25},
        {"after_s": 300, "seconds": 10},
    ],
}


async def _ask(http: aiohttp.ClientSession, fake: FakeProvider, model: str) -> tuple[int, Any]:
    body = {"model": model, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    async with http.post(f"{fake.base_url}/v1/messages", json=body) as response:
        return response.status, (dict(response.headers), await response.json())


def _elapse(fake: FakeProvider, seconds: float) -> None:
    first = fake._first_arrival  # (set by the first request)
    assert first is not None
    fake._first_arrival = first - seconds


async def test_a_window_refuses_every_model_and_takes_no_entry(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve(SCENARIO)
    for model in ("a", "b"):  # the first request opens the first window (after_s 0)
        status, (headers, body) = await _ask(http, fake, model)
        assert status == 529
        assert body["error"]["type"] == "overloaded_error"
        assert (headers["Retry-After"], headers["retry-after-ms"]) == ("0.25", "250")
    _elapse(fake, 200)  # between the windows: served, from the first entry
    assert (await _ask(http, fake, "a"))[1][1]["content"][0]["text"] == "first of a"
    _elapse(fake, 100)  # in the second window: its default status, no Retry-After
    status, (headers, body) = await _ask(http, fake, "a")
    assert status == 429 and body["error"]["type"] == "rate_limit_error"
    assert "Retry-After" not in headers
    _elapse(fake, 10)  # its end is not in it
    assert (await _ask(http, fake, "a"))[1][1]["content"][0]["text"] == "second of a"
    assert len(fake.records) == 5  # the refused requests are recorded too
    fake.reset()  # the windows count again, from the next request
    assert (await _ask(http, fake, "b"))[0] == 529


async def test_where_windows_overlap_the_first_listed_answers(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve(
        {
            "models": {"*": [{"text": "served"}]},
            "rate_limit_windows": [
                {"after_s": 50, "seconds": 10, "status": 503},
                {"seconds": 100, "status": 429},
            ],
        }
    )
    assert (await _ask(http, fake, "a"))[0] == 429  # the second window alone
    _elapse(fake, 55)  # in both: the first listed
    assert (await _ask(http, fake, "a"))[0] == 503
    _elapse(fake, 10)  # past the first, still in the second
    assert (await _ask(http, fake, "a"))[0] == 429
