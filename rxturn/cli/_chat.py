"""``rxturn chat``: one conversation against a real endpoint (or the fake server).

One-shot with a PROMPT (``-`` reads all of stdin as one prompt), interactive without one (a
prompt per stdin line; Ctrl-C cancels the running turn only, SIGTERM cancels it and ends the
chat; ``/model [NAME]``, ``/reset``, ``/stats``, ``/help``, ``/quit``; EOF ends with exit 0).
The stream handler always has the default policies (not passthrough) and ``--fallback`` adds a
fallback manager with the default policy plus same-turn failover (``--no-failover`` keeps the
breaker alone). ``--json`` prints one JSON object per turn instead of the reply text.
``--image`` and ``--file`` attach files to the (first) prompt; one that cannot be read, or that
the provider cannot take, is a bad argument.

Exit codes: 0 served, 1 the turn failed, 2 bad arguments or input (an empty prompt, a missing
key, a malformed URL: nothing is sent), 130 cancelled by Ctrl-C or SIGTERM, 141 stdout closed
early. Errors are one line on stderr, ``rxturn chat: error: …``, naming the URL for HTTP
and connection errors. Module-level imports are stdlib only (``--help`` imports every command).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._console import (
    CHAT_COMMANDS,
    KEY_VARIABLES,
    file_argument,
    hint_stdin,
    in_cli_words,
    number_argument,
    provider_argument,
)

__all__ = ["add_parser", "run"]

#: OpenAI's reasoning efforts (rxturn.clients._request.REASONING_EFFORTS, without importing it).
_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"]
_MIN_THINKING = 1024


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chat",
        help="chat with a model (one-shot with PROMPT, interactive without)",
        description="One conversation against a real endpoint, with the resilient handler. "
        "Reply text goes to stdout (on a pipe only text that was served), notices to stderr.",
        epilog="Without PROMPT, one prompt per line of stdin, and the commands "
        f"{CHAT_COMMANDS}; Ctrl-C cancels the running turn, not the chat. --json prints, "
        'for each turn, {"message", "model", "attempts", "rescued", "cost", "turns"}, or '
        '{"error": {"type", "message"}, "turns"} for a failed one. A PROMPT that starts with '
        "'-' goes after '--' (rxturn chat ... -- '-x'). Exit codes: 0 the reply was printed; 1 "
        "the turn failed; 2 bad arguments or input (nothing "
        "was sent); 130 interrupted; 141 stdout closed early.",
    )
    provider_argument(parser)
    parser.add_argument("--model", required=True, help="the model to ask")
    parser.add_argument("--base-url", default=None, help="endpoint (e.g. the fake server)")
    parser.add_argument(
        "--fallback",
        action="append",
        default=[],
        metavar="MODEL",
        help="backup model (repeatable; enables the model circuit breaker and same-turn "
        "failover to the next backup)",
    )
    parser.add_argument(
        "--no-failover",
        action="store_true",
        help="with --fallback: keep the breaker alone (a failed turn is not retried on a backup)",
    )
    parser.add_argument(
        "--hedge",
        action="append",
        default=[],
        metavar="MODEL",
        help="hedged first token: when the model has sent no content within the hedge delay, "
        "also ask MODEL (same endpoint; repeatable: targets in order) and keep whichever "
        "answers first (streaming only)",
    )
    parser.add_argument(
        "--hedge-delay",
        type=number_argument,
        default=None,
        metavar="S",
        help="with --hedge: seconds without content before the hedge (default: adaptive, "
        "from the observed time to first content, 0.5 to 10 s)",
    )
    parser.add_argument("--system", default=None, metavar="TEXT", help="system prompt")
    parser.add_argument("--no-stream", action="store_true", help="non-streaming requests")
    parser.add_argument("--json", action="store_true", help="one JSON object per turn")
    parser.add_argument(
        "--thinking",
        type=int,
        default=None,
        metavar="N",
        help="Anthropic extended thinking with a budget of N tokens (>= 1024, below max tokens);"
        " kept and sent back in tool loops (Ollama: think on)",
    )
    parser.add_argument(
        "--reasoning-effort",
        choices=_EFFORTS,
        default=None,
        metavar="E",
        help=f"OpenAI reasoning effort ({', '.join(_EFFORTS)}); with openai-responses the "
        "reasoning items are kept and sent back",
    )
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        type=file_argument,
        metavar="PATH",
        help="attach an image (PNG, JPEG, GIF, WebP) to the prompt (repeatable)",
    )
    parser.add_argument(
        "--file",
        action="append",
        default=[],
        type=file_argument,
        metavar="PATH",
        help="attach a file to the prompt: a PDF or text document, an image, or audio (WAV, "
        "MP3; OpenAI chat only) (repeatable)",
    )
    parser.add_argument(
        "prompt",
        nargs="?",
        default=None,
        metavar="PROMPT",
        help="the prompt ('-': read all of stdin as one prompt); without it, an interactive "
        "chat reads one prompt per line",
    )
    parser.set_defaults(run=run)
    # the words of an unquoted prompt: ``rxturn chat ... hello world``
    parser.unrecognized_hint = " (a prompt of several words goes in quotes: 'hello world')"
    parser.dash_hint = " (a PROMPT that starts with '-' goes after '--': rxturn chat ... -- '-x')"


def _fail(message: str) -> int:
    from ._console import one_line

    # one line, however long what it quotes (a number of 400 digits, a pasted file)
    sys.stderr.write(f"rxturn chat: error: {one_line(message, 500)}\n")
    sys.stderr.flush()
    return 2


def _base_url_problem(url: str, provider: str) -> str | None:
    """What the client would refuse in ``url``, said before stdin is read (never echoing a
    query string or credentials, where keys hide), in the CLI's words."""
    from rxturn.clients._connection import check_base_url
    from rxturn.errors import ConfigError

    try:
        check_base_url(url)
    except ConfigError as exc:
        return in_cli_words(str(exc), provider)
    return None


def _attachments(args: argparse.Namespace) -> tuple[Any, ...]:
    """``--image`` and ``--file`` read into media parts, in that order (a ConfigError names the
    path of a file that cannot be used)."""
    from rxturn.errors import ConfigError
    from rxturn.messages import ImagePart, media_from_path

    parts: list[Any] = []
    for path in args.image:
        try:
            parts.append(ImagePart.from_path(path))
        except ConfigError as exc:
            raise ConfigError(f"--image: {exc}") from None
    for path in args.file:
        try:
            parts.append(media_from_path(path))
        except ConfigError as exc:
            raise ConfigError(f"--file: {exc}") from None
    return tuple(parts)


class _TooLarge(Exception):
    pass


def _read_stdin() -> str | None:
    """All of stdin as text (``None`` if it is not UTF-8).

    Raises:
        _TooLarge: more than :data:`~rxturn.cli._console.MAX_PROMPT_BYTES`.
    """
    from ._console import MAX_PROMPT_BYTES

    limit = MAX_PROMPT_BYTES
    buffer = getattr(sys.stdin, "buffer", None)
    data: str | bytes = buffer.read(limit + 1) if buffer is not None else sys.stdin.read(limit + 1)
    if len(data) > limit:
        raise _TooLarge
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _not_utf8(args: argparse.Namespace) -> str | None:
    """The error line for the first text argument that is not UTF-8, as the user named it."""
    from ._console import not_utf8_problem

    return not_utf8_problem(
        (
            ("--model", [args.model]),
            ("--system", [args.system]),
            ("--fallback", args.fallback),
            ("--hedge", args.hedge),
            ("--base-url", [args.base_url]),
            ("PROMPT", [args.prompt]),
        )
    )


def run(args: argparse.Namespace) -> int:
    if (problem := _not_utf8(args)) is not None:
        return _fail(problem)
    from ._console import model_names_problem

    named = (("--model", [args.model]), ("--fallback", args.fallback), ("--hedge", args.hedge))
    if (problem := model_names_problem(named)) is not None:
        return _fail(problem)
    if args.no_failover and not args.fallback:
        return _fail("--no-failover needs --fallback MODEL (there is no backup to fail over to)")
    chain = [args.model.strip()]
    for name in (name.strip() for name in args.fallback):
        if name == chain[0]:
            return _fail(f"--fallback {name} is the model itself")
        if name in chain:
            return _fail(f"--fallback {name} is given twice")
        chain.append(name)
    hedges: list[str] = []
    for name in (name.strip() for name in args.hedge):
        if name == chain[0]:  # the same model on the same endpoint: never sent
            return _fail(f"--hedge {name} is the model itself")
        if name in hedges:
            return _fail(f"--hedge {name} is given twice")
        hedges.append(name)
    # the names as checked are the names sent: a padded one (' m ', a pasted '$MODEL ') went
    # out padded, for the provider to answer 404, while the checks above read it stripped
    args.model, args.fallback, args.hedge = chain[0], chain[1:], hedges
    if args.hedge_delay is not None and not args.hedge:
        return _fail("--hedge-delay needs --hedge MODEL")
    if args.hedge and args.no_stream:
        return _fail("--hedge races streams for their first token: it cannot act with --no-stream")
    if args.base_url is not None and (problem := _base_url_problem(args.base_url, args.provider)):
        return _fail(problem)  # as the client (and batch run) says it
    if args.thinking is not None and args.thinking < _MIN_THINKING:
        shown = str(args.thinking)
        shown = shown if len(shown) <= 20 else f"{shown[:17]}..."
        return _fail(f"--thinking must be at least {_MIN_THINKING} tokens, got {shown}")
    variable = KEY_VARIABLES.get(args.provider)
    # Surrounding whitespace (a key file's trailing newline) is not part of a key, and a blank
    # variable is an unset one, as ``batch run`` reads it.
    key = (os.environ.get(variable) or "").strip() or None if variable else None
    if variable and not key and args.base_url is None:
        return _fail(f"{variable} is not set (needed for the {args.provider} API)")
    if key is not None and any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in key):
        return _fail(f"{variable} holds whitespace or control characters")  # never the value
    if args.prompt == "-":
        hint_stdin("the prompt")
        try:
            text = _read_stdin()
        except _TooLarge:
            from .._media import describe_bound
            from ._console import MAX_PROMPT_BYTES

            limit = describe_bound(MAX_PROMPT_BYTES)
            return _fail(f"the prompt on stdin is larger than {limit}; nothing was sent")
        if text is None:
            return _fail("stdin is not valid UTF-8; nothing was sent")
        args.prompt = text.strip("\r\n")
    if args.prompt is not None and not args.prompt.strip():
        return _fail("the prompt is empty; nothing was sent")

    import asyncio

    from rxturn.cli._chat_session import ChatSession, check_options
    from rxturn.errors import ConfigError

    try:
        args.attachments = _attachments(args)
    except ConfigError as exc:  # unreadable, empty, or of no known type: nothing was sent
        return _fail(in_cli_words(str(exc), args.provider))
    if args.thinking is not None or args.reasoning_effort is not None or args.attachments:
        try:
            check_options(args)
        except ConfigError as exc:  # a knob this provider cannot take: bad arguments
            return _fail(in_cli_words(str(exc), args.provider))

    session = ChatSession(args, api_key=key)
    try:
        return asyncio.run(session.main())
    except ConfigError as exc:  # e.g. a base URL the client rejects: nothing was sent
        return _fail(in_cli_words(str(exc), args.provider))
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before the loop took the signals over
        return 130
