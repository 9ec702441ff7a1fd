"""Shared helpers for the client loopback tests (imported by the test modules beside it)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from reactivex import Observable

from rxturn.clients import AnthropicClient, OllamaClient, OpenAIClient, OpenAIResponsesClient
from rxturn.clients._http import HttpClient
from rxturn.messages import Message, Request
from rxturn.testing import FakeProvider

WAIT = 10.0  # bound on every wait (seconds)

#: Keys that do not look like real keys, so only the client's own scrubbing can hide them.
ANTHROPIC_KEY = "test-anthropic-key-Q8v7ZK2mX4"
OPENAI_KEY = "test-openai-key-P3n9LcW5tR1"

REQUEST = Request(messages=(Message.user("What is the weather in Paris?"),))


@dataclass(frozen=True)
class Provider:
    """How to point one client flavour at the fake provider, and what it can report."""

    name: str
    make: Callable[..., HttpClient]
    key: str | None
    request_id_header: str | None  # the header the fake sends the request id in
    streams_usage: bool  # does a streamed reply carry usage?

    def client(self, fake: FakeProvider, model: str = "primary", **kwargs: Any) -> HttpClient:
        return self.make(fake, model, **kwargs)


def _anthropic(fake: FakeProvider, model: str, **kw: Any) -> HttpClient:
    kw.setdefault("api_key", ANTHROPIC_KEY)
    return AnthropicClient(model, base_url=fake.base_url, **kw)


def _openai(fake: FakeProvider, model: str, **kw: Any) -> HttpClient:
    kw.setdefault("api_key", OPENAI_KEY)
    return OpenAIClient(model, base_url=fake.openai_base_url, **kw)


def _openai_ollama_profile(fake: FakeProvider, model: str, **kw: Any) -> HttpClient:
    return OpenAIClient.ollama(model, base_url=fake.openai_base_url, **kw)


def _openai_responses(fake: FakeProvider, model: str, **kw: Any) -> HttpClient:
    kw.setdefault("api_key", OPENAI_KEY)
    return OpenAIResponsesClient(model, base_url=fake.openai_base_url, **kw)


def _ollama(fake: FakeProvider, model: str, **kw: Any) -> HttpClient:
    return OllamaClient(model, base_url=fake.base_url, **kw)


PROVIDERS = [
    Provider("anthropic", _anthropic, ANTHROPIC_KEY, "request-id", streams_usage=True),
    Provider("openai", _openai, OPENAI_KEY, "x-request-id", streams_usage=True),
    # stream_usage off: no stream_options, so the stream reports no usage (rxturn/clients/openai.py)
    Provider(
        "openai-ollama-profile", _openai_ollama_profile, None, "x-request-id", streams_usage=False
    ),
    Provider("ollama", _ollama, None, None, streams_usage=True),
    Provider("openai-responses", _openai_responses, OPENAI_KEY, "x-request-id", streams_usage=True),
]
PROVIDER_IDS = [p.name for p in PROVIDERS]


_T = TypeVar("_T")


async def run_stream(source: Observable[_T]) -> tuple[list[_T], BaseException | None]:
    """Subscribe, wait (bounded) for the end, return the items (events, or batches of them)
    and the error (if any)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[BaseException | None] = loop.create_future()
    events: list[_T] = []

    def finish(error: BaseException | None) -> None:
        if not done.done():
            done.set_result(error)

    source.subscribe(events.append, finish, lambda: finish(None))
    error = await asyncio.wait_for(done, WAIT)
    return events, error


async def wait_until(predicate: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), WAIT)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)
