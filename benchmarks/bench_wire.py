"""Benchmark: rxturn's wire decoders against a bare "split lines + msgspec decode" loop.

Run: ``python benchmarks/bench_wire.py [--events N] [--repeat R]``

For a synthetic Anthropic stream and a synthetic OpenAI stream of N text-delta events each, it
prints µs/event for

- ``bare``: ``body.split(b"\\n")``, keep ``data:`` lines, decode each payload with the same typed
  msgspec decoder rxturn uses (no framing rules, no canonical events) — the floor;
- ``rxturn``: the real decoder (SSE framing per WHATWG + wire → canonical events), fed the body
  in 64 KiB chunks as a transport would,

and their ratio. Best of R interleaved runs each, in CPU time (less sensitive to other load
on the machine); not a test (timings never gate CI).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import msgspec

from rxturn.wire import AnthropicDecoder, OpenAIDecoder
from rxturn.wire.anthropic import _decoder as anthropic_wire
from rxturn.wire.openai import _decoder as openai_wire

__all__ = ["main"]

CHUNK = 64 * 1024
WORDS = ["Hello", " world", ",", " this", " is", " a", " streamed", " reply", " ✓", "\n"]


def anthropic_stream(events: int) -> bytes:
    def sse(kind: str, payload: dict[str, object]) -> str:
        return f"event: {kind}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n"

    parts = [
        sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-bench",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    parts += [
        sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": WORDS[i % len(WORDS)]},
            },
        )
        for i in range(events)
    ]
    parts += [
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": events},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    return "".join(parts).encode()


def openai_stream(events: int) -> bytes:
    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        payload = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-bench",
            "system_fingerprint": "fp_bench",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"

    parts = [chunk({"role": "assistant", "content": ""})]
    parts += [chunk({"content": WORDS[i % len(WORDS)]}) for i in range(events)]
    parts.append(chunk({}, "stop"))
    usage: dict[str, object] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-bench",
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": events, "total_tokens": 10 + events},
    }
    parts.append(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n")
    return "".join(parts).encode()


def bare(decoder: msgspec.json.Decoder[object]) -> Callable[[bytes], int]:
    def run(body: bytes) -> int:
        n = 0
        decode = decoder.decode
        for line in body.split(b"\n"):
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                decode(line[6:])
                n += 1
        return n

    return run


def rxturn(factory: Callable[[], AnthropicDecoder | OpenAIDecoder]) -> Callable[[bytes], int]:
    def run(body: bytes) -> int:
        decoder = factory()
        n = 0
        for start in range(0, len(body), CHUNK):
            n += len(decoder.feed(body[start : start + CHUNK]))
        n += len(decoder.close())
        assert decoder.saw_terminal
        return n

    return run


def best_of(runs: list[Callable[[bytes], int]], body: bytes, repeat: int) -> list[float]:
    """Minimum time of each run; runs are interleaved so machine noise hits them alike."""
    times = [float("inf")] * len(runs)
    for _ in range(repeat):
        for i, run in enumerate(runs):
            start = time.process_time()
            run(body)
            times[i] = min(times[i], time.process_time() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    cases = [
        (
            "anthropic",
            anthropic_stream(args.events),
            bare(anthropic_wire),  # pyright: ignore[reportArgumentType]
            rxturn(AnthropicDecoder),
        ),
        (
            "openai",
            openai_stream(args.events),
            bare(openai_wire),  # pyright: ignore[reportArgumentType]
            rxturn(OpenAIDecoder),
        ),
    ]
    print(f"{args.events} text-delta events per stream, best of {args.repeat}, 64 KiB chunks")
    print(f"{'format':<10} {'MB':>6} {'bare µs/ev':>11} {'rxturn µs/ev':>13} {'ratio':>6}")
    for name, body, bare_run, rx_run in cases:
        t_bare, t_rx = best_of([bare_run, rx_run], body, args.repeat)
        per = 1e6 / args.events
        print(
            f"{name:<10} {len(body) / 1e6:>6.1f} {t_bare * per:>11.3f} {t_rx * per:>13.3f} "
            f"{t_rx / t_bare:>6.2f}"
        )


if __name__ == "__main__":
    main()
