"""``rxturn replay FILE [--format anthropic|openai|openai-responses|ollama|auto] [--json]
[--keep-thinking]`` (``FILE`` ``-``: stdin).

Decodes and folds a recorded provider stream and prints the reply: by default readable text
(the text parts, one ``[tool_call NAME] {input}`` line per tool call, ``[refusal] TEXT`` for a
refusal, ``[thinking] TEXT`` / ``[redacted_thinking]`` for kept thinking, then a stop-reason /
usage line); with ``--json`` exactly one JSON object, the Message JSON (``rxturn.messages``).
``--keep-thinking`` keeps thinking blocks in the message (docs/wire-formats.md).

Any failure — a missing or empty file, garbage, bad UTF-8, bad JSON, a truncated stream, invalid
tool JSON in a closed block, an in-stream error, an oversized line, input beyond 512 MiB —
exits with code 2 after writing exactly one line to stderr,
``rxturn replay: error: <what> (<where>)``, and nothing to stdout. A closed stdout
(``| head``) ends it quietly (see :mod:`rxturn.cli.__init__`).
Only the standard library is imported at module level: the dispatcher imports every command
module to build ``--help``.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ._console import file_argument, hint_stdin, json_line

if TYPE_CHECKING:
    from ..messages import Usage

__all__ = ["add_parser", "run"]

_FORMATS = ("auto", "anthropic", "openai", "openai-responses", "ollama")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``replay`` on the ``rxturn`` command's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="decode and fold a recorded provider stream",
        description="Decode and fold a recorded provider stream (SSE or NDJSON) and print the "
        "reply. Exit code 2 and one line on stderr if the stream is unusable.",
    )
    parser.add_argument(
        "file",
        type=file_argument,
        metavar="FILE",
        help="the recorded stream (.sse / .ndjson); '-' reads stdin",
    )
    parser.add_argument(
        "--format",
        choices=_FORMATS,
        default="auto",
        help="wire format of FILE (default: auto, sniffed from its first bytes)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the folded message as one JSON object"
    )
    parser.add_argument(
        "--keep-thinking",
        action="store_true",
        help="keep thinking blocks (with their signatures) in the message, as a tool loop "
        "with extended thinking needs",
    )
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Replay ``args.file``; returns the exit code (0 ok, 2 unusable stream or file)."""
    from .._replay import MAX_STREAM_BYTES, replay_message, too_large
    from ..errors import RxturnError
    from ..messages import message_to_json
    from ._console import failed, for_terminal, is_terminal, write_bytes

    source: str | bytes = args.file
    if args.file == "-":
        hint_stdin("the stream")
        limit = MAX_STREAM_BYTES
        stdin = getattr(sys.stdin, "buffer", None)
        source = stdin.read(limit + 1) if stdin is not None else sys.stdin.read().encode("utf-8")
        if len(source) > limit:
            return _fail(str(too_large("stdin")))
    where = "stdin" if args.file == "-" else args.file
    try:
        message = replay_message(source, args.format, keep_thinking=args.keep_thinking)
    except RxturnError as exc:
        text = _describe(exc)
        if args.file == "-" and not text.endswith(")"):
            text += " (stdin)"
        return _fail(text)
    except Exception as exc:
        return _fail(f"internal error: {type(exc).__name__}: {_describe(exc)} ({where})")
    if args.json:
        data = json_line(message_to_json(message))
    else:  # a recorded reply is untrusted: on a terminal, none of its escape sequences
        text = _render(message)
        data = (for_terminal(text) if is_terminal(sys.stdout) else text).encode("utf-8")
    try:
        write_bytes(sys.stdout, data)
    except BrokenPipeError:
        raise  # the reader went away: the dispatcher ends quietly
    except OSError as exc:  # a full disk: the dispatcher says so, exit 1
        failed(sys.stdout, exc)
    return 0


def _describe(exc: BaseException) -> str:
    """``str(exc)`` plus any place recorded as a note, on one line."""
    text = str(exc) or type(exc).__name__
    notes: list[str] = getattr(exc, "__notes__", [])
    if notes:
        text = f"{text} ({', '.join(notes)})"
    from ._console import one_line

    return one_line(text, 2000)


def _fail(text: str) -> int:
    sys.stderr.write(f"rxturn replay: error: {text}\n")
    sys.stderr.flush()
    return 2


def _render(message: Any) -> str:
    from ..messages import (
        RedactedThinkingPart,
        RefusalPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        describe_part,
    )

    lines: list[str] = []
    for part in message.content:
        if isinstance(part, TextPart):
            lines.append(part.text)
        elif isinstance(part, ToolCallPart):
            import msgspec

            lines.append(f"[tool_call {part.name}] {msgspec.json.encode(part.input).decode()}")
        elif isinstance(part, RefusalPart):
            lines.append(f"[refusal] {part.text}")
        elif isinstance(part, ThinkingPart):
            lines.append(f"[thinking] {part.thinking}")
        elif isinstance(part, RedactedThinkingPart):
            lines.append("[redacted_thinking]")
        elif describe_part(part):  # media: a placeholder, never the bytes
            lines.append(describe_part(part))
    spent = _spent(message.usage)
    reason = message.stop_reason.value if message.stop_reason is not None else "none"
    lines.append(f"-- stop: {reason}, {spent}")
    return "\n".join(lines) + "\n"


def _spent(usage: Usage | None) -> str:
    """``usage: 5020 in (4000 cache read, 1000 cache write), 90 out (60 reasoning)``: the
    parts in brackets only when the provider reported them above zero."""
    if usage is None:
        return "usage: none"
    inside = [
        f"{count} {label}"
        for count, label in (
            (usage.cache_read_tokens, "cache read"),
            (usage.cache_write_tokens, "cache write"),
            (usage.input_audio_tokens, "audio"),
        )
        if count
    ]
    outside = [
        f"{count} {label}"
        for count, label in (
            (usage.output_reasoning_tokens, "reasoning"),
            (usage.output_audio_tokens, "audio"),
        )
        if count
    ]
    inp = f"{usage.input_tokens} in" + (f" ({', '.join(inside)})" if inside else "")
    out = f"{usage.output_tokens} out" + (f" ({', '.join(outside)})" if outside else "")
    return f"usage: {inp}, {out}"
