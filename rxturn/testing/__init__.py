"""rxturn's test kit: a scripted fake provider that speaks the real wire formats.

:class:`FakeProvider` is a real aiohttp server on 127.0.0.1. Point the official ``anthropic``
or ``openai`` SDK, rxturn's own clients, or plain HTTP at its :attr:`~FakeProvider.base_url`,
and each request is answered by the next entry of a :class:`Scenario`: a reply (text,
thinking, tool calls, usage, streamed in deltas) or a fault (an HTTP error with
``Retry-After``, a dropped connection, a stall, broken JSON, an in-stream error event).
The demo, the notebooks, the benchmarks and the loopback tests all run against it, offline.
docs/fake-provider.md documents the scenario format, with an example per fault.

Importing this package imports aiohttp; ``import rxturn`` never imports it.

Examples:
    >>> async def main() -> None:
    ...     async with FakeProvider({"models": {"*": [{"text": "Hello"}]}}) as fake:
    ...         ...  # AnthropicClient(base_url=fake.base_url, ...)
"""

from __future__ import annotations

from ._scenario import (
    DEFAULT_CHUNK_CHARS,
    DEFAULT_SCENARIO,
    Entry,
    Scenario,
    ScenarioToolCall,
    ScenarioUsage,
    load_scenario,
)
from ._server import FakeProvider, ReceivedRequest

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_SCENARIO",
    "Entry",
    "FakeProvider",
    "ReceivedRequest",
    "Scenario",
    "ScenarioToolCall",
    "ScenarioUsage",
    "load_scenario",
]
