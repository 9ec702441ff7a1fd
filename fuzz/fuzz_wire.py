"""Coverage-guided fuzzing of rxturn's wire layer with atheris (long local runs, not CI).

The property is the one ``tests/reliability/test_fuzz_wire.py`` checks with hypothesis, run for
hours instead of seconds: whatever bytes arrive, cut into whatever chunks, the SSE parser, the
NDJSON splitter, the three stream decoders, the fold and the non-streaming parsers either return
canonical results or raise an :class:`rxturn.errors.RxturnError`. Any other exception is a crash
that atheris reports (with the input that caused it saved as ``crash-*``). A second property:
for a stream that decodes without error, feeding it whole and in the fuzzed chunks gives the same
events.

Run it (atheris needs CPython with a clang-built libFuzzer; ``pip install atheris``)::

    python fuzz/fuzz_wire.py --seed-corpus fuzz/corpus      # copy tests/fixtures in once
    python fuzz/fuzz_wire.py fuzz/corpus -max_total_time=3600 -rss_limit_mb=2048
    python fuzz/fuzz_wire.py crash-<hash>                   # replay one crashing input

The first byte of an input picks the target, the next few the chunk cuts; the rest is the
stream. This file is not collected by pytest (it lives outside ``tests/``) and imports atheris
only when run, so the rest of the project never depends on it.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["TARGETS", "one_input", "seed_corpus"]

_FORMATS = ("anthropic", "openai", "ollama")


def _run(make: Callable[[], Any], chunks: list[bytes]) -> tuple[list[Any], BaseException | None]:
    from rxturn.errors import RxturnError

    parser = make()
    items: list[Any] = []
    try:
        for chunk in chunks:
            items.extend(parser.feed(chunk))
        items.extend(parser.close())
    except RxturnError as exc:
        return items, exc
    return items, None


def _decode(fmt: str, data: bytes, chunks: list[bytes]) -> None:
    from rxturn.errors import RxturnError
    from rxturn.fold import fold_events
    from rxturn.messages import message_to_json
    from rxturn.wire import decoder_for

    small_caps = len(data) % 2 == 1  # odd lengths also exercise the size limits
    caps = {"max_line_bytes": 64, "max_event_bytes": 256} if small_caps else {}
    events, error = _run(lambda: decoder_for(fmt, **caps), chunks)
    whole, whole_error = _run(lambda: decoder_for(fmt, **caps), [data])
    if error is None and whole_error is None and events != whole:
        raise AssertionError(f"{fmt}: chunking changed the events")
    with contextlib.suppress(RxturnError):
        message_to_json(fold_events(events).message())


def _sse(data: bytes, chunks: list[bytes]) -> None:
    from rxturn.wire.sse import SSEParser

    events, error = _run(SSEParser, chunks)
    whole, whole_error = _run(SSEParser, [data])
    if (error is None) != (whole_error is None) or (error is None and events != whole):
        raise AssertionError("SSEParser: chunking changed the outcome")


def _ndjson(data: bytes, chunks: list[bytes]) -> None:
    from rxturn.wire.ndjson import NDJSONSplitter

    lines, error = _run(NDJSONSplitter, chunks)
    whole, whole_error = _run(NDJSONSplitter, [data])
    if (error is None) != (whole_error is None) or (error is None and lines != whole):
        raise AssertionError("NDJSONSplitter: chunking changed the outcome")


def _bodies(data: bytes, _chunks: list[bytes]) -> None:
    from rxturn import replay_message
    from rxturn.errors import RxturnError, StreamProtocolError
    from rxturn.messages import message_to_json
    from rxturn.wire import (
        parse_anthropic_message,
        parse_error_body,
        parse_ollama_chat,
        parse_openai_completion,
        sniff_format,
    )

    for parse in (parse_anthropic_message, parse_openai_completion, parse_ollama_chat):
        with contextlib.suppress(RxturnError):
            message_to_json(parse(data))
    parse_error_body(data)
    with contextlib.suppress(StreamProtocolError):
        sniff_format(data)
    with contextlib.suppress(RxturnError):
        replay_message(data, "auto")


TARGETS: list[Callable[[bytes, list[bytes]], None]] = [
    *(lambda d, c, f=fmt: _decode(f, d, c) for fmt in _FORMATS),
    _sse,
    _ndjson,
    _bodies,
]


def one_input(raw: bytes) -> None:
    """One fuzz iteration: byte 0 picks the target, bytes 1..4 the cuts, the rest the stream."""
    if len(raw) < 5:
        return
    target = TARGETS[raw[0] % len(TARGETS)]
    data = raw[5:]
    cuts = sorted({(b * len(data)) // 255 for b in raw[1:5]})
    chunks: list[bytes] = []
    start = 0
    for cut in cuts:
        chunks.append(data[start:cut])
        start = cut
    chunks.append(data[start:])
    target(data, chunks)


def seed_corpus(into: Path) -> int:
    """Copy the recorded streams (``tests/fixtures``, vendored in the repository; else the
    shared corpus beside it, ``../shared/fixtures``) into ``into``, once per target."""
    repo = Path(__file__).resolve().parent.parent
    root = repo / "tests" / "fixtures"
    if not (root / "anthropic").is_dir():
        root = repo.parent / "shared" / "fixtures"
    into.mkdir(parents=True, exist_ok=True)
    count = 0
    for path in sorted(root.glob("*/*.sse")):
        fmt = path.parent.name
        for index, _ in enumerate(TARGETS):
            if index < len(_FORMATS) and _FORMATS[index] != fmt:
                continue
            (into / f"{fmt}-{path.stem}-{index}").write_bytes(
                bytes([index, 0, 64, 128, 255]) + path.read_bytes()
            )
            count += 1
    return count


def main(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "--seed-corpus":
        target = Path(argv[2])
        if target.exists() and not target.is_dir():
            raise SystemExit(f"{target} is not a directory")
        print(f"seeded {seed_corpus(target)} inputs into {target}")
        return
    import atheris  # pyright: ignore[reportMissingImports]

    with atheris.instrument_imports():  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        import rxturn._replay  # pyright: ignore[reportUnusedImport]
        import rxturn.fold  # pyright: ignore[reportUnusedImport]
        import rxturn.wire  # noqa: F401  # pyright: ignore[reportUnusedImport]

    atheris.Setup(argv, one_input)  # pyright: ignore[reportUnknownMemberType]
    atheris.Fuzz()  # pyright: ignore[reportUnknownMemberType]


if __name__ == "__main__":
    main(sys.argv)
