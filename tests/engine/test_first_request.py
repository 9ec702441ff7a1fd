"""Nothing first-use sits between a process's first turn and its first request.

The tokenizer's load is made observable: it cannot finish until the fake provider has
received the turn's request (or a bounded wait runs out). An engine that loaded the tokenizer
before sending would let the wait run out and see no request when the load completed.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from rxturn import AnthropicClient, TurnEngine
from rxturn.engine.context import tokens
from rxturn.engine.context.window import ContextWindow
from rxturn.testing import FakeProvider


@pytest.fixture
def cold_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process where no encoding has been loaded yet."""
    monkeypatch.setattr(tokens, "_encodings", {})
    monkeypatch.setattr(tokens, "_prefetched", set())


def _gated_loader(
    monkeypatch: pytest.MonkeyPatch, fake: FakeProvider, seen: list[int], tries: int = 500
) -> threading.Event:
    """Make the encoding's load wait (at most ``tries`` x 10 ms) for the fake's first request;
    record how many requests had arrived when the load completed."""
    load = tokens._load_encoding_offline
    done = threading.Event()

    def gated(name: str) -> Any:
        for _ in range(tries):
            if fake.requests:
                break
            threading.Event().wait(0.01)
        encoding = load(name)
        seen.append(len(fake.requests))
        done.set()
        return encoding

    monkeypatch.setattr(tokens, "_load_encoding_offline", gated)
    return done


@pytest.mark.usefixtures("cold_tokenizer")
async def test_the_first_request_goes_out_before_the_tokenizer_has_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with (
        FakeProvider({"models": {"*": [{"text": "hi"}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        seen: list[int] = []
        _gated_loader(monkeypatch, fake, seen)
        engine = TurnEngine(client)  # starts the load in the background
        result = await engine.run("hello")
    assert result.text == "hi"
    assert seen == [1], "the tokenizer finished loading before the request arrived"
    # the estimate is still made, after the request: the turn's audit and calibration keep it
    assert engine.last_estimate is not None and engine.last_estimate.total > 0


@pytest.mark.usefixtures("cold_tokenizer")
async def test_a_context_window_waits_for_the_estimate_it_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With compaction configured the estimate decides the request: it comes first."""
    async with (
        FakeProvider({"models": {"*": [{"text": "hi"}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        seen: list[int] = []
        monkeypatch.setattr(tokens, "_prefetched", {tokens.DEFAULT_ENCODING})  # no head start
        _gated_loader(monkeypatch, fake, seen, tries=30)
        engine = TurnEngine(client, context_window=ContextWindow(max_tokens=100_000))
        await engine.run("hello")
    assert seen == [0]
