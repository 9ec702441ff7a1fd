"""Decode + fold cost per event: rxturn's ``replay`` pipeline against a bare hand-written loop.

Run: ``python benchmarks/bench_replay.py [--events 100000] [--repeat 5]``

The stream is a synthetic Anthropic Messages SSE body of N events (message_start, one text block of
N - 5 deltas, block stop, message_delta, message_stop) — the shape of every long reply.

Measured (best of ``--repeat`` runs, µs per event):

- ``bare``: the floor — ``bytes.split`` into lines, one typed ``msgspec`` decode per ``data:`` line
  into a tagged union, and a minimal *mutable* fold (a list of text pieces joined at the end).
  No SSE rules (CR / CRLF, multi-line data, limits), no validation, no immutability;
- ``decode``: rxturn's decoder alone, fed 64 KiB chunks;
- ``decode+fold``: the decoder plus :func:`rxturn.fold.fold` over every event;
- ``replay+fold``: ``replay(body)`` subscribed with an observer that folds each event;
- ``replay+scan``: the Rx pipeline,
  ``replay(body).pipe(ops.scan(fold, INITIAL_STATE), ops.last())`` then ``message()``;
- ``decode+fold_batch``: the decoder plus :func:`rxturn.fold.fold_batch` over each chunk's list;
- ``batches+scan``: the batched Rx pipeline,
  ``replay_batches(body).pipe(ops.scan(fold_batch, INITIAL_STATE), ops.last())``.

The bound on rxturn's decode+fold is 1.5x the bare loop. Times are CPU seconds of this process
(``time.process_time``), so other load on the machine disturbs them less than wall time would.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

import msgspec
from reactivex import operators as ops

from rxturn import replay, replay_batches
from rxturn.fold import INITIAL_STATE, fold, fold_batch, fold_events
from rxturn.wire import decoder_for

__all__ = ["main"]


def synthetic_stream(events: int) -> bytes:
    deltas = events - 5

    def event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()

    head = event(
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": "bench",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 1000, "output_tokens": 1},
            },
        },
    )
    head += event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    body = [
        event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": f" word{i % 997}"},
            },
        )
        for i in range(deltas)
    ]
    tail = event("content_block_stop", {"type": "content_block_stop", "index": 0})
    tail += event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": deltas},
        },
    )
    tail += event("message_stop", {"type": "message_stop"})
    return head + b"".join(body) + tail


# -- the bare baseline -----------------------------------------------------------------------


class _TextDelta(msgspec.Struct, tag="text_delta"):
    text: str


class _OtherDelta(msgspec.Struct, tag="input_json_delta"):
    partial_json: str


class _MessageStart(msgspec.Struct, tag="message_start"):
    message: dict[str, Any]


class _BlockStart(msgspec.Struct, tag="content_block_start"):
    index: int
    content_block: dict[str, Any]


class _BlockDelta(msgspec.Struct, tag="content_block_delta"):
    index: int
    delta: _TextDelta | _OtherDelta


class _BlockStop(msgspec.Struct, tag="content_block_stop"):
    index: int


class _MessageDelta(msgspec.Struct, tag="message_delta"):
    delta: dict[str, Any]
    usage: dict[str, Any]


class _MessageStop(msgspec.Struct, tag="message_stop"):
    pass


_Wire = _MessageStart | _BlockStart | _BlockDelta | _BlockStop | _MessageDelta | _MessageStop
_bare_decoder = msgspec.json.Decoder(_Wire)


def bare(body: bytes) -> str:
    pieces: list[str] = []
    stop = None
    for line in body.split(b"\n"):
        if line[:6] == b"data: ":
            event = _bare_decoder.decode(line[6:])
            if type(event) is _BlockDelta:
                delta = event.delta
                if type(delta) is _TextDelta:
                    pieces.append(delta.text)
            elif type(event) is _MessageDelta:
                stop = event.delta.get("stop_reason")
    assert stop == "end_turn"
    return "".join(pieces)


# -- rxturn ----------------------------------------------------------------------------------


def _decode(body: bytes) -> list[Any]:
    decoder = decoder_for("anthropic")
    out: list[Any] = []
    for start in range(0, len(body), 64 * 1024):
        out.extend(decoder.feed(body[start : start + 64 * 1024]))
    out.extend(decoder.close())
    return out


def decode_only(body: bytes) -> str:
    return str(len(_decode(body)))


def decode_fold(body: bytes) -> str:
    decoder = decoder_for("anthropic")
    state = INITIAL_STATE
    for start in range(0, len(body), 64 * 1024):
        for event in decoder.feed(body[start : start + 64 * 1024]):
            state = fold(state, event)
    state = fold_events(decoder.close(), state)
    return state.message().text


def replay_fold(body: bytes) -> str:
    state = INITIAL_STATE

    def on_next(event: Any) -> None:
        nonlocal state
        state = fold(state, event)

    replay(body).subscribe(on_next)
    return state.message().text


def replay_scan(body: bytes) -> str:
    state = replay(body).pipe(ops.scan(fold, INITIAL_STATE), ops.last()).run()
    return state.message().text


def decode_fold_batch(body: bytes) -> str:
    decoder = decoder_for("anthropic")
    state = INITIAL_STATE
    for start in range(0, len(body), 64 * 1024):
        state = fold_batch(state, decoder.feed(body[start : start + 64 * 1024]))
    state = fold_batch(state, decoder.close())
    return state.message().text


def batches_scan(body: bytes) -> str:
    state = replay_batches(body).pipe(ops.scan(fold_batch, INITIAL_STATE), ops.last()).run()
    return state.message().text


def best_of(run: Callable[[bytes], str], body: bytes, repeat: int) -> tuple[float, str]:
    best = float("inf")
    result = ""
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        result = run(body)
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    body = synthetic_stream(args.events)
    print(f"stream: {args.events} events, {len(body) / 1e6:.1f} MB (Anthropic SSE)")
    bare_seconds, expected = best_of(bare, body, args.repeat)
    rows = [("bare", bare_seconds)]
    for name, run in (
        ("decode", decode_only),
        ("decode+fold", decode_fold),
        ("replay+fold", replay_fold),
        ("replay+scan", replay_scan),
        ("decode+fold_batch", decode_fold_batch),
        ("batches+scan", batches_scan),
    ):
        seconds, result = best_of(run, body, args.repeat)
        if name != "decode":
            assert result == expected, f"{name} folded a different text"
        rows.append((name, seconds))
    for name, seconds in rows:
        per_event = seconds / args.events * 1e6
        print(
            f"{name:>17}: {per_event:6.2f} µs/event  ({seconds * 1e3:7.1f} ms, "
            f"{seconds / bare_seconds:4.2f}x bare)"
        )
    times = dict(rows)
    for name in ("decode+fold", "replay+fold", "replay+scan", "decode+fold_batch", "batches+scan"):
        print(f"ratio {name} / bare = {times[name] / bare_seconds:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
