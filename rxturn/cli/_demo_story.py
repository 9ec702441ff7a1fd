"""``rxturn demo``: the whole resilience story, offline, in a few seconds.

The embedded fake provider plays a script whose entries are consumed in request order
(docs/fake-provider.md), so the story below is exactly reproducible. Eight chapters, one run
each (chapter 4 has three), the first seven on one engine with the default stream handler
(docs/behaviour.md §2.1) and a fallback manager:

1. a 529 *overloaded* absorbed by the rate-limit ladder (it honours ``Retry-After``);
2. a stream dropped mid-reply: on a terminal the shown text is erased at ``AttemptReset`` and
   streamed again; piped, only the served reply is written;
3. a stream that keeps getting truncated: the transport ladder spends its budget and the
   non-streaming rescue serves the reply;
4. a primary outage (HTTP 500s): three failed runs trip the breaker;
5. the backup model serves (``on_fallback``, ``on_model_switched``);
6. the cooldown passes — the breaker's clock is advanced by 60 s instead of waiting — and two
   successful probes route back to the primary;
7. a tool call: the model asks for the weather, the tool runs, the model answers;
8. a hedged first token: the primary sends its headers and ``message_start`` at once but no
   text for seconds; after the hedge delay a second request goes to another model, which
   answers first, and the primary's connection is closed before any of the reply is shown
   (an engine of its own, with ``hedge=HedgePolicy(...)``: docs/engine.md).

The demo checks its own story (attempts, rescues, models) and exits 1 if anything went
differently, so ``rxturn demo`` doubles as an end-to-end smoke test. The story (headings,
replies, tool lines, the summary) goes to stdout, notices (retries, rescue, failures, breaker,
model switches) to stderr, as for every command (:mod:`rxturn.cli._console`).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from ..engine import TurnEngine
from ..engine.handler._handler import StreamHandler
from ..errors import RxturnError
from ..resilience.fallback import FallbackManager, FallbackPolicy
from ..resilience.hedge import HedgePolicy, HedgeTarget
from ._console import PIPE_CLOSED, STATE, Notices, is_terminal, paint, wants_color, write
from ._view import TurnView

__all__ = ["DEMO_SCENARIO", "play"]

PRIMARY = "rx-primary"
BACKUP = "rx-backup"
HEDGE = "rx-hedge"
HEDGE_DELAY = 0.4
COOLDOWN = 60.0

_T1 = "The 529 was absorbed: one short wait, then this reply."
_T2 = "A dropped stream is retracted and streamed again, cleanly."
_T3 = "Truncated four times; the non-streaming rescue saved this turn."
_T5 = "Backup model here: the breaker routed this turn to me."
_T6A = "Primary again: probe one of two succeeded."
_T6B = "Probe two succeeded too: the breaker is closed."
_T7 = "It is 21 °C and sunny in Lisbon, according to the tool."
_T8 = "Hedge model here: I answered first, the slow primary was cut."

_SLOW = {"chunk_chars": 4, "delay_ms": 12}

DEMO_SCENARIO: dict[str, Any] = {
    "models": {
        PRIMARY: [
            # 1. overloaded once, then fine
            {"status": 529, "retry_after": 0.25},
            {"text": _T1, **_SLOW},
            # 2. dropped mid-stream, then fine
            {"text": _T2, "drop_after_events": 9, **_SLOW},
            {"text": _T2, **_SLOW},
            # 3. four truncated attempts (1 + 3 retries), then the rescue's non-streaming reply
            *[{"text": _T3, "drop_after_events": 4, "chunk_chars": 6} for _ in range(4)],
            {"text": _T3},
            # 4. three runs of (4 streaming attempts + 1 rescue), every one an HTTP 500
            *[{"status": 500} for _ in range(15)],
            # 6. two successful probes after the cooldown
            {"text": _T6A, **_SLOW},
            {"text": _T6B, **_SLOW},
            # 7. a tool call, then the answer
            {
                "tool_calls": [
                    {"id": "call_weather", "name": "get_weather", "input": {"city": "Lisbon"}}
                ]
            },
            {"text": _T7, **_SLOW},
            # 8. a slow first token: preamble at once, then 30 s of silence (it is cut first)
            {"text": "The primary, much too late.", "first_content_delay_ms": 30_000},
        ],
        BACKUP: [{"text": _T5, **_SLOW}],
        HEDGE: [{"text": _T8, **_SLOW}],
    }
}


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city (the demo's tool)."""
    return {"city": city, "celsius": 21, "sky": "sunny"}


class _Clock:
    """Monotonic time plus a skip offset: how the demo 'waits' 60 s in no time."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


@dataclass
class _Row:
    chapter: str
    outcome: str = ""
    attempts: int = 0
    rescued: bool = False
    model: str = ""
    tokens: str = ""
    seconds: float = 0.0


_GLYPHS = {"retry": "↻", "wait": "⏳", "rescue": "↻", "failure": "✗", "breaker": "⚡"}
_GLYPHS["model"] = _GLYPHS["hedge"] = "⇄"
_CODES = {"retry": "33", "wait": "33", "rescue": "33", "failure": "31", "breaker": "35"}
_CODES["model"] = _CODES["hedge"] = "36"


def _notice(kind: str, text: str, color: bool) -> str:
    return paint(f"  {_GLYPHS.get(kind, '·')} {text}", _CODES.get(kind, "2"), color)


@dataclass
class _Painter:
    """The story on stdout: headings, served replies (when not live), tool lines, the table."""

    out: TextIO
    color: bool

    def line(self, text: str = "", code: str = "") -> None:
        write(self.out, paint(text, code, self.color) + "\n")

    def reply(self, text: str) -> None:
        write(self.out, f"  {text}\n")

    def flush(self) -> None:
        write(self.out, "")


class _Narrator(TurnView):
    """The turn view, plus the story's notes (for its self-check) and its tool lines."""

    def __init__(self, painter: _Painter, notices: Notices, *, live: bool) -> None:
        super().__init__(
            painter.out,
            notices,
            live=live,
            prefix="  ",
            commit=painter.reply,
            report_failures=True,
        )
        self.painter = painter
        self.notes: list[str] = []

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        self.notes.append("fallback")
        super().on_fallback(from_model=from_model, to_model=to_model)

    def on_model_switched(self, *, from_model: str, to_model: str) -> None:
        self.notes.append(f"switch:{to_model}")
        super().on_model_switched(from_model=from_model, to_model=to_model)

    def on_hedge_won(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str, after: float
    ) -> None:
        self.notes.append(f"hedge_won:{hedge_model}")
        super().on_hedge_won(
            turn=turn, turn_id=turn_id, model=model, hedge_model=hedge_model, after=after
        )

    def on_tool_call(self, *, turn: int, call: Any) -> None:
        self.painter.line(f"  🔧 tool call {call.name}({call.input})", "34")

    def on_tool_result(self, *, turn: int, result: Any) -> None:
        self.painter.line(f"  🔧 tool result {result.content}", "34")


_CHAPTERS = [
    ("1 rate limit", "Hello! (the provider answers 529 first)"),
    ("2 dropped stream", "Tell me about dropped streams."),
    ("3 rescue", "And truncated ones?"),
    ("4a outage", "Are you there?"),
    ("4b outage", "Still there?"),
    ("4c outage", "Anyone?"),
    ("5 backup", "Who is answering now?"),
    ("6a probe", "Is the primary back?"),
    ("6b probe", "Once more?"),
    ("7 tool call", "What's the weather in Lisbon?"),
    ("8 hedge", "Quick, anyone? (the primary's first token is slow)"),
]

# What each run must show: (ok, attempts, rescued, model)
_EXPECTED = [
    (True, 2, False, PRIMARY),
    (True, 2, False, PRIMARY),
    (True, 4, True, PRIMARY),
    (False, 0, False, PRIMARY),
    (False, 0, False, PRIMARY),
    (False, 0, False, PRIMARY),
    (True, 1, False, BACKUP),
    (True, 1, False, PRIMARY),
    (True, 1, False, PRIMARY),
    (True, 2, False, PRIMARY),
    (True, 2, False, HEDGE),  # two requests: the primary (cut, billed) and the hedge that served
]


async def play(
    out: TextIO | None = None, *, color: bool | None = None, err: TextIO | None = None
) -> int:
    """Play the story; return the exit code (0 when everything went as scripted).

    The story goes to ``out`` (stdout), notices to ``err`` (stderr). On a terminal replies
    stream live and failed attempts are erased; elsewhere only served replies are written.
    ``color`` forces colour on or off (default: only on a terminal, never with ``NO_COLOR``).
    """
    from ..clients import AnthropicClient
    from ..testing import FakeProvider
    from ..transport import AiohttpTransport

    stream: TextIO = out or sys.stdout
    errors: TextIO = err or sys.stderr
    painter = _Painter(stream, wants_color(stream, color))
    notices = Notices(
        errors, format=_notice, color=wants_color(errors, color), before=painter.flush
    )
    live = is_terminal(stream)
    narrator = _Narrator(painter, notices, live=live)
    clock = _Clock()
    fallback = FallbackManager(
        PRIMARY, [BACKUP], policy=FallbackPolicy(recovery_timeout=COOLDOWN), clock=clock
    )
    rows: list[_Row] = []
    started = time.monotonic()
    painter.line("rxturn demo — one LLM turn as a ReactiveX pipeline (offline fake provider)", "1")
    # the environment's proxies are not for the demo: its provider is in this process, on
    # loopback (an HTTP_PROXY without 127.0.0.1 in NO_PROXY sent every request to the proxy)
    async with (
        FakeProvider(DEMO_SCENARIO) as fake,
        AiohttpTransport(trust_env=False) as transport,
    ):
        client = AnthropicClient(
            PRIMARY, api_key="demo-key-not-secret", base_url=fake.base_url, transport=transport
        )
        async with client:
            engine = TurnEngine(
                client,
                system="You are the rxturn demo.",
                tools=[get_weather],
                handler=StreamHandler(on_wait=narrator.on_wait),  # the default policies
                fallback=fallback,
                observers=[narrator],
                text_streamer=narrator.text if live else None,
            )
            engine.events.subscribe(narrator.handler_event)  # the rescue's Fallback
            hedged = TurnEngine(
                client,
                system="You are the rxturn demo.",
                handler=StreamHandler(on_wait=narrator.on_wait),
                hedge=HedgePolicy((HedgeTarget(HEDGE),), delay=HEDGE_DELAY),
                observers=[narrator],
                text_streamer=narrator.text if live else None,
            )
            for chapter, prompt in _CHAPTERS:
                if STATE.closed:  # the reader went away (``rxturn demo | head``)
                    return PIPE_CLOSED
                if chapter.startswith("6a"):
                    clock.offset += COOLDOWN
                    painter.line(f"⏩ {COOLDOWN:.0f} s later (breaker clock advanced)", "2")
                painter.line(f"▶ {chapter}: {prompt}", "1")
                playing = hedged if chapter.startswith("8") else engine
                row = _Row(chapter, model=playing.served_model())
                t0 = time.monotonic()
                try:
                    result = await playing.run(prompt)
                except RxturnError as exc:
                    row.outcome = f"failed: {type(exc).__name__}"
                else:
                    last = result.turns[-1]
                    row.outcome = "ok"
                    row.attempts = sum(t.attempts for t in result.turns)
                    row.rescued = any(t.rescued for t in result.turns)
                    row.model = last.model
                    used_in = sum(t.usage.input_tokens for t in result.turns if t.usage)
                    used_out = sum(t.usage.output_tokens for t in result.turns if t.usage)
                    row.tokens = f"{used_in}/{used_out}"
                row.seconds = time.monotonic() - t0
                rows.append(row)
    _summary(painter, rows, time.monotonic() - started)
    problems = _check(rows, narrator.notes)
    for problem in problems:
        painter.line(f"demo check failed: {problem}", "31")
    if STATE.closed:
        return PIPE_CLOSED
    return 1 if problems else 0


def _summary(painter: _Painter, rows: list[_Row], total: float) -> None:
    painter.line()
    header = f"{'run':<18}{'outcome':<26}{'attempts':>9}{'rescued':>9}  {'model':<12}"
    header += f"{'tokens':>9}{'time':>8}"
    painter.line(header, "1")
    for row in rows:
        painter.line(
            f"{row.chapter:<18}{row.outcome:<26}{row.attempts or '-':>9}"
            f"{'yes' if row.rescued else '-':>9}  {row.model:<12}{row.tokens or '-':>9}"
            f"{row.seconds:>7.2f}s"
        )
    painter.line(f"total {total:.1f}s, no network, no API key", "2")


def _check(rows: list[_Row], notes: list[str]) -> list[str]:
    problems: list[str] = []
    for row, (ok, attempts, rescued, model) in zip(rows, _EXPECTED, strict=True):
        if (row.outcome == "ok") != ok:
            problems.append(f"{row.chapter}: expected {'success' if ok else 'failure'}")
        elif ok and (row.attempts, row.rescued, row.model) != (attempts, rescued, model):
            problems.append(
                f"{row.chapter}: got attempts={row.attempts} rescued={row.rescued} "
                f"model={row.model}, expected {attempts}/{rescued}/{model}"
            )
    if "fallback" not in notes:
        problems.append("the breaker never tripped")
    if f"switch:{BACKUP}" not in notes or f"switch:{PRIMARY}" not in notes:
        problems.append("the serving model did not switch to the backup and back")
    if f"hedge_won:{HEDGE}" not in notes:
        problems.append("the hedge did not win the slow primary's race")
    return problems
