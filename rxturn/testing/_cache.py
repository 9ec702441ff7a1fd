"""The fake provider's prompt cache: Anthropic ``cache_control`` breakpoints, remembered.

A request's cacheable prefix is read in the API's order — tools, then the system prompt, then
each message's blocks — as a list of items (each tool, each system block, each content block).
A breakpoint is an item that carries ``cache_control``; a top-level ``cache_control`` (automatic
caching) is a breakpoint on the last item. The prefix up to a breakpoint is identified by the
canonical JSON of its items (``cache_control`` itself left out, so moving a breakpoint forward
still reads the prefix an earlier one wrote).

Per request: the longest prefix seen before is a cache *read* — a prefix ending at a
breakpoint or at one of the 20 block boundaries before one, as the API looks back for hits —
and the items from there to the last breakpoint are a cache *write* (each breakpoint's prefix
is then remembered). So a rolling breakpoint (automatic caching) reads the previous round. Sizes
are in the fake's token unit, whitespace-separated words (``prompt_words``), so
``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens`` is the
request's ``prompt_words``. Unlike the real API there is no minimum cacheable length and
no expiry (a server's cache lives until :meth:`~rxturn.testing.FakeProvider.reset`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, cast

import msgspec

from ._emit_base import count_words

__all__ = ["LOOKBACK", "PromptCache"]

_encoder = msgspec.json.Encoder(order="sorted")

#: How many block boundaries before a breakpoint the API also checks for a cache hit.
LOOKBACK = 20


def _items(body: Mapping[str, Any]) -> tuple[list[tuple[Any, Any]], list[int]]:
    """The prefix items in the API's order, each as hashed and as sent (its size is counted
    from that, and only when the request has breakpoints), and the indices of those that
    carry ``cache_control``."""
    items: list[tuple[Any, Any]] = []
    marks: list[int] = []

    def add(item: object, role: object = None) -> None:
        sent: object = item
        stored: object = item
        if isinstance(item, dict) and "cache_control" in item:
            marks.append(len(items))
            fields = cast("dict[str, Any]", item)
            stored = {key: value for key, value in fields.items() if key != "cache_control"}
        if role is not None:
            stored = {"role": role, "block": stored}
        items.append((stored, sent))

    tools: Any = body.get("tools")
    if isinstance(tools, list):
        for tool in cast("list[Any]", tools):
            add(tool)
    system: Any = body.get("system")
    if isinstance(system, list):
        for block in cast("list[Any]", system):
            add(block)
    elif isinstance(system, str):
        add({"type": "text", "text": system})
    messages: Any = body.get("messages")
    if isinstance(messages, list):
        for message in cast("list[Any]", messages):
            if not isinstance(message, dict):
                continue
            fields = cast("dict[str, Any]", message)
            content: Any = fields.get("content")
            role: Any = fields.get("role")
            if isinstance(content, str):
                add({"type": "text", "text": content}, role)
            elif isinstance(content, list):
                for block in cast("list[Any]", content):
                    add(block, role)
    automatic = isinstance(body.get("cache_control"), dict)
    if automatic and items and (not marks or marks[-1] != len(items) - 1):
        marks.append(len(items) - 1)
    return items, marks


class PromptCache:
    """What one fake server has cached: prefix digests."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: set[bytes] = set()

    def clear(self) -> None:
        self._seen.clear()

    def account(self, body: Mapping[str, Any]) -> tuple[int, int]:
        """``(cache_read, cache_write)`` tokens of an Anthropic request, remembering its
        breakpoints' prefixes (``(0, 0)`` when it has none)."""
        items, marks = _items(body)
        if not marks:
            return 0, 0
        digests: list[bytes] = []
        sizes: list[int] = []
        running = hashlib.sha256()
        size = 0
        for item, sent in items[: marks[-1] + 1]:
            running.update(_encoder.encode(item))
            size += count_words(sent)
            digests.append(running.copy().digest())
            sizes.append(size)
        # a read: the longest prefix seen before that ends at a breakpoint or at one of the
        # LOOKBACK blocks before one (the API checks those boundaries too)
        read = 0
        for mark in marks:
            for index in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                if digests[index] in self._seen:
                    read = max(read, sizes[index])
                    break
        write = sizes[-1] - read
        self._seen.update(digests[mark] for mark in marks)
        return read, write
