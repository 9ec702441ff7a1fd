"""Helpers shared by the reliability suite: the fixture corpus and chunked feeding.

Nothing here decides an expected value; it only finds inputs and drives the code under test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from rxturn.errors import RxturnError

__all__ = [
    "ANTHROPIC_FIXTURES",
    "FIXTURES",
    "OLLAMA_SAMPLES",
    "OPENAI_FIXTURES",
    "Feedable",
    "Outcome",
    "fixtures_root",
    "run_chunks",
    "split_at",
]

T = TypeVar("T")


from recorded import ANTHROPIC_FIXTURES, FIXTURES, OPENAI_FIXTURES, fixtures_root  # noqa: E402

# The corpus has no Ollama recordings: these follow Ollama's documented /api/chat stream
# (docs/api.md "Chat request (streaming)", tool calls and thinking as in ollama >= 0.9).
OLLAMA_SAMPLES: dict[str, bytes] = {
    "text": (
        b'{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00",'
        b'"message":{"role":"assistant","content":"The"},"done":false}\n'
        b'{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00",'
        b'"message":{"role":"assistant","content":" sky is"},"done":false}\n'
        b'{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00",'
        b'"message":{"role":"assistant","content":" blue."},"done":false}\n'
        b'{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z",'
        b'"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop",'
        b'"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,'
        b'"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}\n'
    ),
    "thinking_and_tools": (
        b'{"model":"qwen3","created_at":"2025-05-29T09:35:56.836222Z",'
        b'"message":{"role":"assistant","content":"","thinking":"Let me"},"done":false}\n'
        b'{"model":"qwen3","created_at":"2025-05-29T09:35:56.836222Z",'
        b'"message":{"role":"assistant","content":"","thinking":" check."},"done":false}\r\n'
        b'{"model":"qwen3","created_at":"2025-05-29T09:35:57.1Z","message":{"role":"assistant",'
        b'"content":"","tool_calls":[{"function":{"name":"get_weather",'
        b'"arguments":{"city":"Paris","unit":"C"}}}]},"done":false}\n'
        b"\n"
        b'{"model":"qwen3","created_at":"2025-05-29T09:35:57.2Z","message":{"role":"assistant",'
        b'"content":""},"done":true,"done_reason":"stop","prompt_eval_count":12,"eval_count":9}'
    ),
}


class Feedable(Protocol[T]):  # pyright: ignore[reportInvalidTypeVarUse]
    """A sans-IO parser or decoder: ``feed(bytes) -> list``, ``close() -> list``."""

    def feed(self, data: bytes) -> list[Any]: ...

    def close(self) -> list[Any]: ...


Outcome = tuple[list[Any], RxturnError | None]
"""What a parser made of some bytes: the items it returned, and the typed error that ended it."""


def run_chunks(make: Callable[[], Feedable[Any]], chunks: Iterable[bytes]) -> Outcome:
    """Feed ``chunks`` then ``close()``; collect items until a typed error ends the stream.

    Only :class:`~rxturn.errors.RxturnError` is caught: any other exception escapes and fails
    the calling test — that is the property under test.
    """
    parser = make()
    items: list[Any] = []
    try:
        for chunk in chunks:
            items.extend(parser.feed(chunk))
        items.extend(parser.close())
    except RxturnError as exc:
        return items, exc
    return items, None


def split_at(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets (clamped, sorted, duplicates give empty chunks)."""
    points = sorted(min(max(cut, 0), len(data)) for cut in cuts)
    chunks: list[bytes] = []
    start = 0
    for point in points:
        chunks.append(data[start:point])
        start = point
    chunks.append(data[start:])
    return chunks
