"""Secrets: an API key never shows up anywhere rxturn writes (docs/reliability.md §4).

Two distinctive keys are used: one shaped like a real key (``sk-ant-…``, which the generic
redaction pattern would catch anyway) and one that matches no key pattern at all, so only
secret-aware handling can keep it out. Each is checked, across successful and failing turns on
both paths and all three wire formats, in:

- ``repr`` / ``str`` of every object a user holds: clients, transport, engine, handler,
  session, requests, results, observer records;
- every log record at DEBUG, from every logger (``caplog`` on the root logger), including the
  :class:`~rxturn.engine.observation.observers.LoggingObserver`'s lines;
- exception messages, ``args``, ``repr`` and attributes, along the whole cause chain;
- the audit trail JSON;
- ``rxturn chat --json`` output (stdout and stderr), served and failed.

The hostile part: the provider *echoes the key back* - in an HTTP error body, in an in-stream
error event, in a redirect ``Location`` - as misconfigured gateways and some real APIs do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from aiohttp import web
from cli._support import ThreadedFake
from slow_params import mostly_slow

from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.engine.observation.observers import LoggingObserver, RecordingObserver
from rxturn.errors import RxturnError
from rxturn.messages import Request, message_to_json
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing import FakeProvider

from .conftest import FORMAT_NAMES, make_client

pytestmark = pytest.mark.timeout(60)

KEYS = {
    "sk-shaped": "sk-ant-test-SECRET-123456",
    "opaque": "rxturn-SECRET-key-0x5EED1234",
}
ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def scenarios(key: str) -> dict[str, list[dict[str, Any]]]:
    """Replies that succeed, fail, and fail while quoting the key back."""
    return {
        **echo_scenarios(key),
        "served": [{"text": "All good here.", "thinking": "hmm", "chunk_chars": 5}],
        "served_after_retry": [
            {"status": 500, "error_message": f"upstream saw key {key}"},
            {"text": "Recovered.", "chunk_chars": 3},
        ],
        "unauthorized_echo": [
            {"status": 401, "error_message": f"Incorrect API key provided: {key}"}
        ],
        "rate_limited_echo": [{"status": 429, "error_message": f"quota for {key} exhausted"}],
        "malformed": [{"text": "Broken", "malformed_after_events": 3}],
    }


def echo_scenarios(key: str) -> dict[str, list[dict[str, Any]]]:
    """A provider that quotes the key inside the stream (see the in-stream test below)."""
    return {
        "in_stream_error_echo": [
            {
                "text": "Half an answer",
                "chunk_chars": 4,
                "error_event_after_events": 4,
                "error_type": "api_error",
                "error_message": f"key {key} was revoked mid-stream",
            }
        ],
    }


def sent_key(headers: dict[str, str]) -> str:
    """The credential headers a request carried (case-insensitive)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    return lowered.get("x-api-key", "") + lowered.get("authorization", "")


def leaks(key: str, *texts: object) -> list[str]:
    """The texts (or reprs) that contain ``key``."""
    found: list[str] = []
    for item in texts:
        for text in (str(item), repr(item)):
            if key in text:
                found.append(text[:200])
    return found


def error_texts(error: BaseException | None) -> list[object]:
    """Everything an exception exposes: message, args, repr, attributes, along its causes."""
    out: list[object] = []
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        out += [current, *current.args, *vars(current).values()]
        stack += [current.__cause__, current.__context__]
        stack += [v for v in vars(current).values() if isinstance(v, BaseException)]
    return out


def log_texts(records: list[logging.LogRecord]) -> list[object]:
    formatter = logging.Formatter()
    out: list[object] = []
    for record in records:
        out += [record.getMessage(), record.args]
        if record.exc_info:
            out.append(formatter.formatException(record.exc_info))
    return out


def resilient() -> StreamHandler:
    return StreamHandler(
        timeouts=TimeoutPolicy(first_event=2.0, per_event=2.0, total=5.0),
        retry=RetryPolicy(base_delay=0.001, max_delay=0.01),
        rate_limit=RateLimitPolicy(default_delay=0.01),
    )


async def leaks_of_one_run(
    fmt: str,
    key: str,
    replies: list[dict[str, Any]],
    handler: StreamHandler,
    mode: str,
    records: list[logging.LogRecord],
) -> list[str]:
    """Run one turn with ``key``; return every place the key shows up afterwards."""
    async with (
        FakeProvider({"models": {"*": replies}}) as fake,
        make_client(fmt, fake, api_key=key) as client,
    ):
        recorder = RecordingObserver()
        engine = TurnEngine(
            client,
            handler=handler,
            mode=mode,  # pyright: ignore[reportArgumentType]
            observers=[recorder, LoggingObserver(level=logging.DEBUG)],
        )
        error: RxturnError | None = None
        result: Any = None
        try:
            result = await asyncio.wait_for(engine.run("hello"), 20)
        except RxturnError as exc:
            error = exc
        # the key really was sent (else the test would prove nothing)
        assert key in sent_key(fake.received[0].headers)
        objects: list[object] = [
            client,
            getattr(client, "_transport", None),
            engine,
            engine.session,
            engine.handler,
            engine.build_request(),
            Request(messages=()),
            result,
            *(kwargs for _, kwargs in recorder.calls),
            engine.session.audit.to_jsonl(),
        ]
        if result is not None:
            objects.append(message_to_json(result.message))
        return (
            leaks(key, *objects) + leaks(key, *error_texts(error)) + leaks(key, *log_texts(records))
        )


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@pytest.mark.parametrize("key_kind", list(KEYS))
async def test_the_key_never_appears_in_reprs_logs_errors_or_the_audit(
    key_kind: str, fmt: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = KEYS[key_kind]
    caplog.set_level(logging.DEBUG)
    for name, replies in scenarios(key).items():
        if name in echo_scenarios(key):
            continue  # its own test below
        caplog.clear()
        found = await leaks_of_one_run(fmt, key, replies, resilient(), mode, caplog.records)
        assert not found, f"{name}: the key leaked into {found}"
        assert caplog.records, "nothing was logged at DEBUG: the log check would be vacuous"


@pytest.mark.parametrize("handler", ["passthrough", "resilient"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@pytest.mark.parametrize("key_kind", list(KEYS))
async def test_a_key_quoted_in_an_in_stream_error_event_is_redacted(
    key_kind: str, fmt: str, handler: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The provider quotes the key in an in-stream ``error`` event: the error that reaches the
    caller (passthrough) and the ``AttemptReset`` the observers see (resilient) must not carry
    it - exactly as HTTP error bodies are scrubbed with the client's own key."""
    key = KEYS[key_kind]
    caplog.set_level(logging.DEBUG)
    chosen = StreamHandler.passthrough() if handler == "passthrough" else resilient()
    found = await leaks_of_one_run(
        fmt, key, echo_scenarios(key)["in_stream_error_echo"], chosen, "streaming", caplog.records
    )
    assert not found, f"the key leaked into {found}"


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_a_redirect_that_quotes_the_key_does_not_leak_it(fmt: str) -> None:
    key = KEYS["opaque"]

    async def redirect(request: web.Request) -> web.StreamResponse:
        return web.Response(
            status=307, headers={"Location": f"http://127.0.0.2:9/steal?key={key}&also={key}"}
        )

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", redirect)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(runner.addresses[0][1])

    class Base:
        base_url = f"http://127.0.0.1:{port}"
        openai_base_url = base_url + "/v1"

    try:
        async with make_client(fmt, Base, api_key=key) as client:
            engine = TurnEngine(client, handler=StreamHandler.passthrough())
            with pytest.raises(RxturnError) as caught:
                await engine.run("hi")
            assert not leaks(key, *error_texts(caught.value))
    finally:
        await runner.cleanup()


# ------------------------------------------------------------------------------ rxturn chat


@pytest.fixture
def threaded_fake() -> Iterator[type[ThreadedFake]]:
    yield ThreadedFake


CHAT_CASES = [
    (case, key_kind, fmt, no_stream)
    for case in ("served", "unauthorized_echo", "in_stream_error_echo")
    for key_kind in KEYS
    for fmt in ("anthropic", "openai")
    for no_stream in (False, True)
]
CHAT_IDS = [
    f"{case}-{key_kind}-{fmt}-{'no-stream' if no_stream else 'stream'}"
    for case, key_kind, fmt, no_stream in CHAT_CASES
]
#: A streamed in-stream error is retried with the default handler's real back-off (0.75 s a
#: run): the inner loop keeps one key shape and format of it.
CHAT_SLOW = {
    "in_stream_error_echo-opaque-anthropic-stream",
    "in_stream_error_echo-sk-shaped-openai-stream",
    "in_stream_error_echo-opaque-openai-stream",
}


@pytest.mark.parametrize(
    ("case", "key_kind", "fmt", "no_stream"),
    mostly_slow(
        "case,key_kind,fmt,no_stream",
        CHAT_CASES,
        ids=CHAT_IDS,
        keep=set(CHAT_IDS) - CHAT_SLOW,
    ),
)
def test_chat_json_output_never_contains_the_key(
    case: str,
    key_kind: str,
    fmt: str,
    no_stream: bool,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    threaded_fake: type[ThreadedFake],
) -> None:
    from rxturn.cli import main

    key = KEYS[key_kind]
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(ENV[fmt], key)
    with threaded_fake({"models": {"*": {**scenarios(key)}[case]}}) as fake:
        base = fake.openai_base_url if fmt == "openai" else fake.base_url
        argv = [
            "chat",
            "--provider",
            fmt,
            "--model",
            "primary",
            "--base-url",
            base,
            "--json",
            "hello",
        ]
        code = main(argv[:-1] + (["--no-stream"] if no_stream else []) + ["hello"])
        sent = sent_key(fake.received[0].headers)
    out, err = capsys.readouterr()
    assert key in sent, "the key was not sent: the test would prove nothing"
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    record = msgspec.json.decode(lines[0])
    # the default handler retries the in-stream error, then its non-streaming rescue serves
    served = case in ("served", "in_stream_error_echo")
    if served:
        assert code == 0 and "message" in record, record
    else:
        assert code == 1 and set(record) == {"error", "turns"} and record["error"]["type"], record
    found = leaks(key, out, err, *log_texts(caplog.records))
    assert not found, f"the key leaked into {found}"
