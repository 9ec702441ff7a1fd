"""rxturn.notebook: the recorder, the live display, the timeline and the breaker plot.

Expected values come from the callback sequences the tests script themselves (order, times,
counts), from the observer contract (``engine/observation/observers.py``), from a
``RecordingObserver`` watching the same engine turn (an independent count of every delta and
reset), and, for the breaker, from the breaker's documented transitions worked out by hand:
trip on the 3rd consecutive failure, a 60 s cooldown measured from the trip, and 2 probe
successes to close.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import subprocess
import sys
from typing import Any, cast

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxturn.errors import ConfigError, ReadError
from rxturn.events import (
    AttemptReset,
    Delta,
    Fallback,
    HandlerEvent,
    MessageDelta,
    MessageStart,
    MessageStop,
    PartStart,
    PartStop,
)
from rxturn.messages import Message, StopReason, Usage
from rxturn.notebook import (
    AttemptSpan,
    BreakerSample,
    IPythonSink,
    LiveText,
    LiveView,
    ManualClock,
    PrintSink,
    Record,
    Retracted,
    TurnRecorder,
    attempt_spans,
    breaker_timeline,
    sample_breaker,
    simulate_breaker,
    summarize_turns,
    timeline,
)
from rxturn.notebook._timeline import BrokenTimeScale, TimeBreak, time_breaks
from rxturn.operators._scheduling import clock as scheduler_clock
from rxturn.resilience.fallback import BreakerState, FallbackManager, FallbackPolicy

matplotlib = pytest.importorskip("matplotlib")


class ListSink:
    """A display sink that keeps every view it is shown (the live display's test double)."""

    def __init__(self) -> None:
        self.views: list[LiveView] = []

    def show(self, view: LiveView) -> None:
        self.views.append(view)


def reset(attempt: int, reason: str = "connection reset", error_type: str = "ReadError") -> Any:
    return AttemptReset(attempt=attempt, reason=reason, error_type=error_type)


def artists(fig: Any, gid: str) -> list[Any]:
    ax = fig.axes[0]
    found = [
        a
        for a in (*ax.collections, *ax.lines, *ax.patches, *ax.containers)
        if getattr(a, "get_gid", lambda: None)() == gid
    ]
    return found


def scatter_points(fig: Any, gid: str) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = []
    for collection in artists(fig, gid):
        points.extend((float(x), float(y)) for x, y in collection.get_offsets())
    return points


def render(fig: Any) -> bytes:
    """Draw the figure for real (missing glyphs, bad artists fail here under -W error)."""
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()


# ------------------------------------------------------------------------------- import


def test_import_needs_neither_matplotlib_nor_ipython() -> None:
    code = (
        "import sys, rxturn.notebook\n"
        "bad = [m for m in ('matplotlib', 'IPython', 'aiohttp', 'tiktoken') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# ------------------------------------------------------------------------------- recorder


def drive_turn_with_one_reset(rec: TurnRecorder, clock: ManualClock) -> None:
    """The observer order of a streamed turn with a retry (the docstring of
    rxturn.engine.observation.observers)."""
    clock.advance_to(1.0)
    rec.on_turn_start(turn=0, query="hi")
    clock.advance_to(1.5)
    rec.on_text_delta(turn=0, delta="Hel")
    clock.advance_to(2.0)
    rec.on_attempt_reset(turn=0, reset=reset(2))
    clock.advance_to(2.5)
    rec.on_text_delta(turn=0, delta="Hello")
    rec.on_text_delta(turn=0, delta=" world")
    clock.advance_to(3.0)
    rec.on_stream_success(turn=0, model="big", input_tokens=5, output_tokens=2)
    rec.on_response(turn=0, text="Hello world", usage=Usage(input_tokens=5, output_tokens=2))
    clock.advance_to(3.5)
    rec.on_turn_end(
        turn=0, success=True, error=None, duration_ms=2500.0, input_tokens=5, output_tokens=2
    )


def test_records_follow_callback_order_with_clock_times() -> None:
    clock = ManualClock()
    rec = TurnRecorder(clock=clock)
    rec.on_run_start(session_id="s1")
    drive_turn_with_one_reset(rec, clock)
    rec.on_run_end(success=True, error=None, total_turns=1, duration_ms=3500.0)

    got = [(r.kind, r.time, r.seq, r.turn, r.attempt) for r in rec.records]
    assert got == [
        ("run_start", 0.0, -1, None, 0),
        ("turn_start", 1.0, 0, 0, 1),
        ("attempt_reset", 2.0, 0, 0, 2),
        ("stream_success", 3.0, 0, 0, 2),
        ("response", 3.0, 0, 0, 2),
        ("turn_end", 3.5, 0, 0, 2),
        ("run_end", 3.5, 0, None, 0),
    ]
    assert rec.of_kind("turn_end")[0].ok is True
    assert rec.of_kind("stream_success")[0].model == "big"
    assert "ReadError: connection reset" in rec.of_kind("attempt_reset")[0].detail
    assert rec.replies == [(0, "Hello world")]


def test_reset_clears_the_current_text_and_keeps_the_discarded_tail() -> None:
    rec = TurnRecorder(clock=ManualClock(), keep_retracted_chars=4)
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="abc")
    rec.on_text_delta(turn=0, delta="defg")
    assert rec.text == "abcdefg"
    rec.on_attempt_reset(turn=0, reset=reset(2, "dropped"))
    assert rec.text == ""
    assert rec.retracted == [
        Retracted(attempt=1, text="defg", reason="ReadError: dropped", dropped_chars=3)
    ]
    rec.on_text_delta(turn=0, delta="new")
    assert rec.text == "new"
    assert rec.view().attempt == 2
    # the next turn starts clean
    rec.on_turn_start(turn=1, query="again")
    assert (rec.text, rec.retracted, rec.view().attempt) == ("", [], 1)


def test_thinking_is_counted_but_never_enters_the_text() -> None:
    rec = TurnRecorder(clock=ManualClock())
    rec.on_turn_start(turn=0, query="q")
    rec.on_thinking_delta(turn=0, delta="let me think")
    rec.on_text_delta(turn=0, delta="answer")
    assert rec.text == "answer"
    (density,) = rec.densities
    assert (density.deltas, density.chars, density.thinking) == (1, 6, 1)


def test_deltas_aggregate_into_bounded_bins() -> None:
    clock = ManualClock()
    rec = TurnRecorder(clock=clock, density_bin=0.01)
    rec.on_turn_start(turn=0, query="q")
    for i in range(100_000):
        clock.now = i * 0.01  # 1000 s of stream, 100k deltas
        rec.on_text_delta(turn=0, delta="ab")
    (density,) = rec.densities
    assert density.deltas == 100_000
    assert density.chars == 200_000
    assert len(density.bins) <= density.max_bins
    assert sum(count for _, count in density.series()) == 100_000
    assert len(rec.records) == 1  # only turn_start: deltas are not records
    assert len(rec.text) == 200_000


def test_the_log_keeps_only_the_newest_records() -> None:
    rec = TurnRecorder(clock=ManualClock(), max_records=3)
    for turn in range(5):
        rec.on_turn_start(turn=turn, query=str(turn))
    assert [r.detail for r in rec.records] == ["2", "3", "4"]


@pytest.mark.parametrize("field", ["max_records", "max_replies"])
def test_a_bound_past_any_size_keeps_everything(field: str) -> None:
    # an int bound is not a C size: ten to the 400th means "keep all", not an OverflowError
    rec = TurnRecorder(clock=ManualClock(), **{field: 10**400})
    for turn in range(5):
        rec.on_turn_start(turn=turn, query=str(turn))
    assert [r.detail for r in rec.records] == ["0", "1", "2", "3", "4"]


def test_rescue_replaces_the_streamed_text() -> None:
    rec = TurnRecorder(clock=ManualClock())
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="partial")
    rec.observe(Fallback(Message.assistant("saved by the rescue")))
    assert rec.text == "saved by the rescue"
    assert [r.text for r in rec.retracted] == ["partial"]
    assert rec.view().status == "rescued"
    assert rec.count("rescue") == 1
    rec.on_turn_end(
        turn=0, success=True, error=None, duration_ms=1.0, input_tokens=0, output_tokens=0
    )
    assert rec.view().status == "rescued"  # a rescued turn stays marked as such


REPLY: list[HandlerEvent] = [
    MessageStart(id="m1", model="big"),
    PartStart(0),
    Delta(0, "Hel"),
    AttemptReset(attempt=2, reason="dropped", error_type="ReadError"),
    MessageStart(id="m2", model="big"),
    PartStart(0),
    Delta(0, "Hello"),
    Delta(0, "", kind="thinking"),
    PartStop(0),
    MessageDelta(stop_reason="end_turn"),
    MessageStop(),
]


def test_tap_records_a_bare_handler_stream_as_one_turn() -> None:
    rec = TurnRecorder(clock=ManualClock())
    seen: list[HandlerEvent] = []
    reactivex.from_iterable(REPLY).pipe(rec.tap()).subscribe(on_next=seen.append)
    assert seen == REPLY  # the tap passes everything through unchanged
    assert [r.kind for r in rec.records] == [
        "turn_start",
        "message_start",
        "attempt_reset",
        "message_start",
        "message_stop",
        "turn_end",
    ]
    assert rec.text == "Hello"
    assert rec.of_kind("turn_end")[0].ok is True
    assert [(d.attempt, d.deltas, d.thinking) for d in rec.densities] == [(1, 1, 0), (2, 1, 1)]


def test_tap_records_a_failed_stream() -> None:
    rec = TurnRecorder(clock=ManualClock())
    errors: list[Exception] = []
    reactivex.concat(reactivex.from_iterable(REPLY[:3]), reactivex.throw(ReadError("gone"))).pipe(
        rec.tap()
    ).subscribe(on_error=errors.append)
    assert len(errors) == 1
    assert [r.kind for r in rec.records][-2:] == ["stream_failure", "turn_end"]
    end = rec.of_kind("turn_end")[0]
    assert end.ok is False
    assert "ReadError: gone" in end.detail
    assert rec.view().status == "failed"


def offline_engine() -> Any:
    """A real engine whose client is never called (no request is made)."""
    from rxturn.clients import AnthropicClient
    from rxturn.engine import TurnEngine

    return TurnEngine(AnthropicClient("m", api_key="test-key", base_url="http://127.0.0.1:9"))


def test_attach_and_detach_an_engine() -> None:
    engine = offline_engine()
    rec = TurnRecorder().attach(engine)
    assert rec in engine.observers
    assert engine.events.observers  # subscribed to the live event stream
    with pytest.raises(ConfigError, match="already attached"):
        rec.attach(engine)
    rec.detach()
    assert rec not in engine.observers
    assert not engine.events.observers
    rec.attach(engine)  # re-attaching after a detach is fine
    assert len(engine.observers) == 1


@pytest.mark.parametrize(
    "kwargs",
    [{"density_bin": 0.0}, {"max_records": 0}, {"keep_retracted_chars": -1}],
    ids=["bin", "records", "keep"],
)
def test_recorder_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="TurnRecorder"):
        TurnRecorder(**kwargs)


# -------------------------------------------------------------------- with a real engine


async def run_engine(scenario: dict[str, Any], **handler: Any) -> tuple[Any, Any, Any, Any]:
    """One engine run on the fake provider; returns (result, recorder, oracle, live sink)."""
    from rxturn.clients import AnthropicClient
    from rxturn.engine import TurnEngine
    from rxturn.engine.handler import StreamHandler
    from rxturn.engine.observation.observers import RecordingObserver
    from rxturn.resilience.policies import RetryPolicy
    from rxturn.testing import FakeProvider

    async with (
        FakeProvider(scenario) as fake,
        AnthropicClient("primary", api_key="test-key", base_url=fake.base_url) as client,
    ):
        oracle = RecordingObserver()
        engine = TurnEngine(
            client,
            handler=StreamHandler(retry=RetryPolicy(base_delay=0.001, max_delay=0.002, **handler)),
            observers=[oracle],
        )
        rec = TurnRecorder().attach(engine)
        sink = ListSink()
        LiveText(sink=sink, min_interval=0.0).attach(engine)
        result = await engine.run("hi")
        return result, rec, oracle, sink


async def test_attached_recorder_sees_each_delta_and_reset_once() -> None:
    result, rec, oracle, sink = await run_engine(
        {
            "models": {
                "*": [
                    {"text": "Hello there, general", "chunk_chars": 4, "drop_after_events": 4},
                    {"text": "Hello world", "chunk_chars": 3},
                ]
            }
        }
    )
    assert result.text == "Hello world"
    assert rec.count("attempt_reset") == len(oracle.calls_of("on_attempt_reset")) == 1
    assert rec.count("message_start") == 2  # one per attempt, from engine.events
    assert sum(d.deltas for d in rec.densities) == len(oracle.calls_of("on_text_delta"))
    assert rec.text == "Hello world"
    assert rec.replies == [(0, "Hello world")]
    assert rec.of_kind("turn_start")[0].model == "primary"
    # the live display (min_interval 0) saw the retraction, then the final text
    retracting = [v for v in sink.views if v.retracted]
    assert retracting and retracting[0].text == ""
    assert sink.views[-1].text == "Hello world"
    assert sink.views[-1].status == "done"


async def test_attached_recorder_sees_the_rescue() -> None:
    result, rec, _, _ = await run_engine(
        {
            "models": {
                "*": [
                    {"text": "one", "drop_after_events": 2},
                    {"text": "two", "drop_after_events": 2},
                    {"text": "rescued reply"},
                ]
            }
        },
        max_retries=1,
    )
    assert result.turns[-1].rescued
    assert rec.count("rescue") == 1
    assert rec.text == "rescued reply"
    spans = attempt_spans(rec.records)
    assert [(s.attempt, s.outcome) for s in spans] == [(1, "reset"), (2, "rescued")]


# ----------------------------------------------------------------------------- live text


def test_live_text_catches_up_when_attached_mid_turn_then_follows() -> None:
    now = ManualClock()
    rec = TurnRecorder(clock=now)
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="Hel")
    rec.on_text_delta(turn=0, delta="lo")

    sink = ListSink()
    scheduler = TestScheduler()
    live = LiveText(sink=sink, min_interval=1.0, scheduler=scheduler).attach(rec)
    assert [v.text for v in sink.views] == ["Hello"]  # caught up at once

    rec.on_text_delta(turn=0, delta=" wor")  # within the throttle window: not shown yet
    rec.on_text_delta(turn=0, delta="ld")
    assert len(sink.views) == 1
    scheduler.advance_to(1.0)  # the one trailing flush
    assert [v.text for v in sink.views] == ["Hello", "Hello world"]

    rec.on_attempt_reset(turn=0, reset=reset(2))  # retractions render immediately
    assert sink.views[-1].text == ""
    assert [r.text for r in sink.views[-1].retracted] == ["Hello world"]
    rec.on_turn_end(
        turn=0, success=True, error=None, duration_ms=1.0, input_tokens=0, output_tokens=0
    )
    assert sink.views[-1].status == "done"
    assert live.renders == len(sink.views) == 4


def test_live_text_throttles_a_flood_to_one_pending_flush() -> None:
    scheduler = TestScheduler()
    rec = TurnRecorder(clock=scheduler_clock(scheduler))
    sink = ListSink()
    LiveText(sink=sink, min_interval=0.5, scheduler=scheduler).attach(rec)
    rec.on_turn_start(turn=0, query="q")  # renders (not a text change)
    for _ in range(10_000):
        rec.on_text_delta(turn=0, delta="x")
    assert len(sink.views) == 2  # attach + turn start; 10k deltas rendered nothing yet
    scheduler.advance_to(10.0)
    assert len(sink.views) == 3  # exactly one trailing flush
    assert sink.views[-1].text == "x" * 10_000


def test_a_sink_that_breaks_in_the_trailing_flush_breaks_nothing_else(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class BreaksOnce(ListSink):
        def show(self, view: LiveView) -> None:
            if len(self.views) == 2 and not getattr(self, "broke", False):  # the flush
                self.broke = True
                raise BrokenPipeError(32, "Broken pipe")
            super().show(view)

    scheduler = TestScheduler()
    rec = TurnRecorder(clock=scheduler_clock(scheduler))
    sink = BreaksOnce()
    LiveText(sink=sink, min_interval=1.0, scheduler=scheduler).attach(rec)
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="Hel")  # within the throttle window: the flush shows it
    scheduler.advance_to(1.0)  # (the sink's error came out of here)
    assert "LiveText sink" in caplog.text and "raised; ignored" in caplog.text
    rec.on_text_delta(turn=0, delta="lo")  # the display goes on
    scheduler.advance_to(2.0)
    assert sink.views[-1].text == "Hello"


def test_live_text_detach_stops_following() -> None:
    rec = TurnRecorder(clock=ManualClock())
    sink = ListSink()
    live = LiveText(sink=sink, min_interval=0.0).attach(rec)
    live.detach()
    rec.on_turn_start(turn=0, query="q")
    assert len(sink.views) == 1


def test_live_text_rejects_a_negative_interval() -> None:
    with pytest.raises(ConfigError, match="min_interval"):
        LiveText(sink=ListSink(), min_interval=-1.0)


def test_live_view_html_escapes_and_strikes_the_discarded_attempt() -> None:
    view = LiveView(
        seq=0,
        turn=0,
        attempt=2,
        model="m",
        text="<b>new</b>",
        status="streaming",
        retracted=(Retracted(attempt=1, text="old & gone", reason="ReadError: x"),),
    )
    page = view.to_html()
    assert "&lt;b&gt;new&lt;/b&gt;" in page and "<b>new" not in page
    assert "<del>old &amp; gone</del>" in page
    assert "attempt 1 discarded" in page
    assert view.headline() == "turn 0 · attempt 2 · m · streaming"
    long = LiveView(seq=0, turn=0, attempt=1, model=None, text="a" * 50)
    assert "…(40 earlier chars) " + "a" * 10 in long.to_html(max_chars=10)


def test_print_sink_prints_new_text_and_marks_retractions() -> None:
    out = io.StringIO()
    rec = TurnRecorder(clock=ManualClock())
    LiveText(sink=PrintSink(out), min_interval=0.0).attach(rec)
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="Hel")
    rec.on_attempt_reset(turn=0, reset=reset(2, "dropped"))
    rec.on_text_delta(turn=0, delta="Hello")
    assert out.getvalue() == (
        "\n[turn 0 · streaming]\nHel\n[attempt 1 discarded: ReadError: dropped]\nHello"
    )


def test_live_text_follows_the_engines_recorder() -> None:
    engine = offline_engine()
    rec = TurnRecorder().attach(engine)
    live = LiveText(sink=ListSink()).attach(engine)
    assert live.recorder is rec
    rec.detach()
    fresh = LiveText(sink=ListSink()).attach(engine)  # no recorder there: it attaches its own
    assert fresh.recorder is not None and fresh.recorder is not rec
    assert fresh.recorder in engine.observers


# ----------------------------------------------------------------------------- timeline


def test_attempt_spans_from_a_log() -> None:
    def r(t: float, kind: str, seq: int = 0, attempt: int = 1, **kw: Any) -> Record:
        return Record(time=t, kind=kind, seq=seq, turn=seq, attempt=attempt, model="m", **kw)

    spans = attempt_spans(
        [
            r(0, "turn_start"),
            r(1, "attempt_reset", attempt=2, detail="attempt 1 failed"),
            r(2, "rescue", attempt=2),
            r(3, "turn_end", attempt=2, ok=True),
            r(4, "turn_start", seq=1),
            r(5, "turn_end", seq=1, ok=False, detail="boom"),
            r(6, "turn_start", seq=2),
            r(7, "message_start", seq=2),
        ]
    )
    assert spans == [
        AttemptSpan(
            seq=0,
            turn=0,
            attempt=1,
            start=0,
            end=1,
            model="m",
            outcome="reset",
            detail="attempt 1 failed",
        ),
        AttemptSpan(seq=0, turn=0, attempt=2, start=1, end=2, model="m", outcome="rescued"),
        AttemptSpan(
            seq=1, turn=1, attempt=1, start=4, end=5, model="m", outcome="failed", detail="boom"
        ),
        AttemptSpan(seq=2, turn=2, attempt=1, start=6, end=7, model="m", outcome="open"),
    ]


def story() -> TurnRecorder:
    """Three turns: two resets then success; a reset then a rescue; a breaker trip and a
    model switch; then a failed turn on the backup."""
    clock = ManualClock()
    rec = TurnRecorder(clock=clock, density_bin=0.1)

    def at(t: float) -> None:
        clock.advance_to(t)

    def end(turn: int, ok: bool) -> None:
        rec.on_turn_end(
            turn=turn,
            success=ok,
            error=None if ok else "boom",
            duration_ms=1.0,
            input_tokens=0,
            output_tokens=0,
        )

    at(0.0)
    rec.on_turn_start(turn=0, query="one")
    at(0.2)
    rec.on_text_delta(turn=0, delta="a")
    at(0.5)
    rec.on_attempt_reset(turn=0, reset=reset(2))
    at(1.0)
    rec.on_attempt_reset(turn=0, reset=reset(3))
    for i in range(5):
        at(1.1 + i * 0.1)
        rec.on_text_delta(turn=0, delta="bb")
    at(1.8)
    end(0, True)
    at(2.0)
    rec.on_turn_start(turn=1, query="two")
    at(2.5)
    rec.on_attempt_reset(turn=1, reset=reset(2))
    at(3.0)
    rec.observe(Fallback(Message(content=(), stop_reason=StopReason.END_TURN)))
    end(1, True)
    at(3.2)
    rec.on_fallback(from_model="big", to_model="small")
    rec.on_model_switched(from_model="big", to_model="small")
    at(3.5)
    rec.on_turn_start(turn=2, query="three")
    at(4.0)
    rec.on_stream_failure(turn=2, model="small", error=ReadError("gone"))
    end(2, False)
    return rec


def test_timeline_draws_one_marker_per_recorded_event() -> None:
    rec = story()
    fig = timeline(rec)
    resets = scatter_points(fig, "reset")
    assert len(resets) == rec.count("attempt_reset") == 3
    # each reset sits at its time, on the lane of the attempt that failed
    assert sorted(x for x, _ in resets) == pytest.approx([0.5, 1.0, 2.5])
    assert len(scatter_points(fig, "rescue")) == rec.count("rescue") == 1
    assert len(scatter_points(fig, "success")) == 2
    assert len(scatter_points(fig, "failure")) == 1
    assert len(artists(fig, "fallback")) == rec.count("fallback") == 1
    assert len(artists(fig, "model_switched")) == 1
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 6  # 3 + 2 + 1 attempts
    assert labels[0].startswith("turn 0 · attempt 1")
    bars = artists(fig, "density")  # one rectangle per non-empty bin of every attempt
    assert len(bars) == sum(len(d.bins) for d in rec.densities) >= 2
    box = ax.get_legend()
    assert box is not None
    legend = [t.get_text() for t in box.get_texts()]
    assert "attempt reset" in legend and "breaker trip (fallback)" in legend
    assert render(fig).startswith(b"\x89PNG")


def test_timeline_from_plain_records_and_from_nothing() -> None:
    rec = story()
    fig = timeline(rec.records)  # no densities without the recorder
    assert len(scatter_points(fig, "reset")) == 3
    assert artists(fig, "density") == []
    render(fig)
    empty = timeline([])
    assert [t.get_text() for t in empty.axes[0].texts] == ["no records"]
    render(empty)


# ---------------------------------------------------------------------- timeline layout
#
# These draw the figure for real (Agg) and measure it in pixels: what a reader sees, not which
# artists exist. No golden images: each test checks one layout property.

SHORT = 0.05  # seconds: the quick events of stalled_story()
STALL = 100 * SHORT  # the stall, a hundred times longer
PRIMARY, BACKUP = "claude-primary-with-a-long-name", "claude-backup-with-a-long-name"


def stalled_story() -> TurnRecorder:
    """A quick turn; a turn whose first attempt stalls 100x longer than anything else, then is
    retried; a rescued turn; a breaker trip to a backup with long model names at the very end
    of the log (its label sits next to the legend); a quick turn on the backup."""
    clock = ManualClock()
    rec = TurnRecorder(clock=clock, density_bin=0.01)

    def end(turn: int) -> None:
        rec.on_turn_end(
            turn=turn, success=True, error=None, duration_ms=1.0, input_tokens=0, output_tokens=0
        )

    def served(turn: int, model: str) -> None:
        rec.on_stream_success(turn=turn, model=model, input_tokens=1, output_tokens=1)

    rec.on_turn_start(turn=0, query="quick")  # t=0: one quick attempt
    rec.observe(MessageStart(model=PRIMARY))
    clock.advance_to(SHORT / 2)
    rec.on_text_delta(turn=0, delta="ok")
    clock.advance_to(SHORT)
    served(0, PRIMARY)
    end(0)
    clock.advance_to(0.1)  # the stalled turn
    rec.on_turn_start(turn=1, query="stall")
    rec.observe(MessageStart(model=PRIMARY))
    clock.advance_to(0.11)
    rec.on_text_delta(turn=1, delta="be")
    clock.advance_to(0.11 + STALL)  # silence, then the attempt times out
    rec.on_attempt_reset(turn=1, reset=reset(2, "stalled", "StreamTimeout"))
    rec.observe(MessageStart(model=PRIMARY))
    clock.advance_to(0.11 + STALL + SHORT)
    rec.on_text_delta(turn=1, delta="fore")
    served(1, PRIMARY)
    end(1)
    t = 0.2 + STALL  # the rescued turn
    clock.advance_to(t)
    rec.on_turn_start(turn=2, query="rescue")
    rec.observe(MessageStart(model=PRIMARY))
    clock.advance_to(t + SHORT)
    rec.on_attempt_reset(turn=2, reset=reset(2))
    rec.observe(MessageStart(model=PRIMARY))
    clock.advance_to(t + 2 * SHORT)
    rec.observe(Fallback(Message(content=(), stop_reason=StopReason.END_TURN)))
    clock.advance_to(t + 2 * SHORT + 0.001)  # the turn ends right after its rescue
    served(2, PRIMARY)
    end(2)
    clock.advance_to(t + 3 * SHORT)  # the breaker trips, the backup serves
    rec.on_fallback(from_model=PRIMARY, to_model=BACKUP)
    rec.on_model_switched(from_model=PRIMARY, to_model=BACKUP)
    clock.advance_to(t + 3.2 * SHORT)
    rec.on_turn_start(turn=3, query="backup")
    rec.observe(MessageStart(model=BACKUP))
    clock.advance_to(t + 4 * SHORT)
    served(3, BACKUP)
    end(3)
    return rec


def drawn(fig: Any) -> Any:
    """Lay the figure out and draw it with Agg, as savefig would; returns the renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def text_boxes(fig: Any, renderer: Any) -> list[tuple[str, Any]]:
    """Every visible, non-empty text of the timeline's axes, with its box in pixels."""
    ax = fig.axes[0]
    texts = [
        *ax.texts,
        *ax.get_xticklabels(),
        *ax.get_yticklabels(),
        ax.xaxis.label,
        ax.title,
    ]
    return [
        (t.get_text(), t.get_window_extent(renderer))
        for t in texts
        if t.get_visible() and t.get_text()
    ]


def marker_circles(fig: Any, gids: list[str]) -> list[tuple[str, float, float, float, float]]:
    """``(gid, data y, centre x px, centre y px, radius px)`` of every scatter marker drawn.

    A scatter marker of size ``s`` spans ``sqrt(s)`` points; its offsets go through the
    collection's offset transform (data coordinates, plus any shift in points)."""
    out: list[tuple[str, float, float, float, float]] = []
    for gid in gids:
        for collection in artists(fig, gid):
            offsets = collection.get_offsets()
            centres = collection.get_offset_transform().transform(offsets)
            (size,) = set(collection.get_sizes())
            edge = max(collection.get_linewidths(), default=0.0)
            radius = (size**0.5 + edge) / 2 * fig.dpi / 72
            for (_, y), (px, py) in zip(offsets, centres, strict=True):
                out.append((gid, float(y), float(px), float(py), radius))
    return out


def test_a_long_stall_does_not_flatten_the_other_events() -> None:
    rec = stalled_story()
    fig = timeline(rec)
    renderer = drawn(fig)
    ax = fig.axes[0]
    axes_width = ax.get_window_extent(renderer).width
    to_px = ax.transData.transform
    # every attempt that is not the stalled one lasted at most 2 * SHORT: it keeps a visible
    # width in pixels next to a stall 100 times longer (linear, it would be ~0.9% of the axes)
    spans = attempt_spans(rec.records)
    assert len(spans) == 6
    for span in spans:
        if span.end - span.start > 2 * SHORT:
            continue  # the stalled attempt itself
        left, right = to_px([(span.start, 0.0), (span.end, 0.0)])[:, 0]
        assert right - left >= 0.04 * axes_width, (span, right - left, axes_width)
    # the cut covers the silence: from the end of the stalled attempt's first text bin (0.01 s
    # wide) to the reset
    (band,) = artists(fig, "time-break")
    assert (band.get_x(), band.get_x() + band.get_width()) == pytest.approx(
        (0.11 + 0.01, 0.11 + STALL)
    )
    # ... data stays in true seconds: each reset marker sits at its real time
    assert [x for x, _ in scatter_points(fig, "reset")] == pytest.approx(
        [0.11 + STALL, 0.2 + STALL + SHORT]
    )
    # the cut is labelled with the gap's real length (5 s minus the first text bin)
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "time-break-label"]
    assert labels == ["4.99 s gap"]
    assert "shorter than they lasted" in ax.get_xlabel()
    # the time axis labels never collide, even where ticks from both sides of the cut meet
    ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
    assert len(ticks) >= 3
    for a, b in itertools.combinations(ticks, 2):
        assert not a.overlaps(b)


def test_a_timeline_without_a_dominant_gap_keeps_a_linear_axis() -> None:
    fig = timeline(story())  # gaps of 0.2 .. 0.5 s: nothing dwarfs the rest
    assert fig.axes[0].get_xscale() == "linear"
    assert artists(fig, "time-break") == []


def test_no_label_overlaps_the_legend_or_another_label() -> None:
    fig = timeline(stalled_story(), labels={0: "quick", 1: "stalled stream", 2: "rescued"})
    renderer = drawn(fig)
    legend = fig.axes[0].get_legend()
    assert legend is not None
    legend_box = legend.get_window_extent(renderer)
    boxes = text_boxes(fig, renderer)
    trip = [text for text, _ in boxes if text.startswith("trip ")]
    assert trip == [f"trip {PRIMARY} → {BACKUP}"]  # the label next to the legend is there
    for text, box in boxes:
        assert not box.overlaps(legend_box), f"{text!r} overlaps the legend"
    # the breaker-trip and model-switch labels (same time, same place) do not overlap either
    lines = [(text, box) for text, box in boxes if text.startswith(("trip ", "serving "))]
    assert len(lines) == 2
    (_, a), (_, b) = lines
    assert not a.overlaps(b)


def test_rescue_markers_on_one_attempt_sit_side_by_side() -> None:
    rec = stalled_story()
    fig = timeline(rec)
    drawn(fig)
    (rescue,) = scatter_points(fig, "rescue")
    gids = ["rescue", "success", "failure", "first_event", "reset"]
    # every marker drawn on the rescued attempt's lane (the first-event marker sits on the
    # lane's top edge, so it counts too)
    lane = [m for m in marker_circles(fig, gids) if abs(m[1] - rescue[1]) <= 0.5]
    kinds = sorted(gid for gid, *_ in lane)
    assert kinds == ["first_event", "rescue", "success"]
    for (g1, _, x1, y1, r1), (g2, _, x2, y2, r2) in itertools.combinations(lane, 2):
        gap = math.hypot(x1 - x2, y1 - y2)
        assert gap >= r1 + r2, f"{g1} and {g2} overlap ({gap:.1f} px < {r1 + r2:.1f} px)"


def test_time_breaks_cut_only_gaps_that_dwarf_the_rest() -> None:
    # one stall of 100 s among 1 s gaps: cut, drawn as wide as the longest other gap (1 s,
    # more than 15% of the 4 s of uncut time)
    assert time_breaks([0, 1, 2, 3, 103, 104]) == [TimeBreak(3, 103, 1)]
    # two equal stalls: both cut
    assert time_breaks([0, 1, 51, 52, 102]) == [TimeBreak(1, 51, 1), TimeBreak(52, 102, 1)]
    # a spread of lengths is not a stall; neither is the only gap of a log
    assert time_breaks([0, 1, 3, 5.5]) == []
    # nor are regular gaps that each follow a near-zero one (a record just after a bin edge)
    regular = [k * 0.01 for k in range(20)]
    assert time_breaks([*regular, *(t + 1e-5 for t in regular)]) == []
    assert time_breaks([0, 5]) == []
    assert time_breaks([]) == []
    # many short gaps: the cut is drawn 15% of their total when that is wider than any of them
    many = [i * 0.1 for i in range(41)]  # 40 gaps of 0.1 s: 4 s uncut
    (cut,) = time_breaks([*many, 4.0 + 100.0])
    assert (cut.start, cut.end, cut.width) == pytest.approx((4.0, 104.0, 0.6))


def test_broken_time_scale_maps_and_inverts() -> None:
    scale = BrokenTimeScale([TimeBreak(52, 102, 1), TimeBreak(1, 51, 1)])
    seconds = [-1.0, 0.0, 1.0, 26.0, 51.0, 52.0, 77.0, 102.0, 110.0]
    # 1:1 outside the cuts; each 50 s cut drawn 1 wide, so 49 units go per cut passed
    assert list(scale.forward(seconds)) == pytest.approx(
        [-1.0, 0.0, 1.0, 1.5, 2.0, 3.0, 3.5, 4.0, 12.0]
    )
    assert list(scale.inverse(scale.forward(seconds))) == pytest.approx(seconds)
    assert list(scale.ticks(0.0, 110.0)) == sorted(scale.ticks(0.0, 110.0))


# ------------------------------------------------------------------------------ breaker

# Defaults: trip on the 3rd consecutive failure (t=2), cooldown 60 s from the trip, so the
# first turn at or after t=62 probes the primary; 2 probe successes close the breaker.
SCRIPT: list[tuple[float, Any]] = [
    (0.0, "failure"),
    (1.0, "failure"),
    (2.0, "failure"),
    (10.0, "success"),
    (30.0, "success"),
    (62.5, "success"),
    (63.0, "success"),
    (70.0, "success"),
]
EXPECTED = [
    (0.0, "start", BreakerState.PRIMARY, "primary"),
    (0.0, "failure", BreakerState.PRIMARY, "primary"),
    (1.0, "failure", BreakerState.PRIMARY, "primary"),
    (2.0, "trip", BreakerState.FALLBACK, "primary"),
    (10.0, "success", BreakerState.FALLBACK, "backup"),
    (30.0, "success", BreakerState.FALLBACK, "backup"),
    (62.5, "probe", BreakerState.RECOVERING, "primary"),
    (62.5, "success", BreakerState.RECOVERING, "primary"),
    (63.0, "close", BreakerState.PRIMARY, "primary"),
    (70.0, "success", BreakerState.PRIMARY, "primary"),
]


def summary(samples: list[BreakerSample]) -> list[tuple[float, str, BreakerState, str | None]]:
    return [(s.time, s.event, s.state, s.model) for s in samples]


def test_simulated_breaker_follows_the_reference_transitions() -> None:
    samples = simulate_breaker(SCRIPT)
    assert summary(samples) == EXPECTED
    assert samples[3].cooldown == (2.0, 62.0)
    assert samples[7].probe_successes == 1


def test_manual_clock_and_virtual_time_agree() -> None:
    manual = ManualClock()
    by_hand = sample_breaker(
        FallbackManager("primary", ["backup"], clock=manual), SCRIPT, clock=manual
    )
    scheduler = TestScheduler()
    virtual = sample_breaker(
        FallbackManager("primary", ["backup"], clock=scheduler_clock(scheduler)),
        SCRIPT,
        clock=scheduler,
    )
    assert by_hand == virtual
    assert summary(by_hand) == EXPECTED


def test_probe_interrupted_by_a_rate_limit_and_a_transient_failure() -> None:
    samples = simulate_breaker(
        [
            (0, "failure"),
            (0, "failure"),
            (0, "failure"),  # trip at 0, cooldown to 60
            (61, "rate_limit"),  # probe, then straight back to FALLBACK: cooldown 61 → 121
            (100, "success"),  # still cooling down: the backup serves
            (121, "success"),
            (122, "failure"),  # probe: streak 1, then restarts at 0
            (123, "success"),
            (124, "success"),
        ],  # two in a row close it
    )
    events = [(s.time, s.event, s.state.name) for s in samples[4:]]
    assert events == [
        (61.0, "probe", "RECOVERING"),
        (61.0, "reopen", "FALLBACK"),
        (100.0, "success", "FALLBACK"),
        (121.0, "probe", "RECOVERING"),
        (121.0, "success", "RECOVERING"),
        (122.0, "failure", "RECOVERING"),
        (123.0, "success", "RECOVERING"),
        (124.0, "close", "PRIMARY"),
    ]
    assert samples[5].cooldown == (61.0, 121.0)


def test_an_exhausted_chain_refuses_the_turn() -> None:
    samples = simulate_breaker(
        [
            (0, "failure"),
            (1, "failure"),
            (2, "failure"),
            (3, "failure"),
            (4, "failure"),
            (5, "success"),
        ],
        chain=("backup",),
        policy=FallbackPolicy(max_fail_count=2),
    )
    # the backup takes two strikes (t=3, t=4); the next turn finds no healthy model
    assert [s.event for s in samples] == [
        "start",
        "failure",
        "failure",
        "trip",
        "failure",
        "failure",
        "exhausted",
    ]
    assert samples[-1].model is None


@pytest.mark.parametrize(
    "script",
    [[(0.0, "oops")], [(-1.0, "success")]],
    ids=["unknown-outcome", "before-the-clock"],
)
def test_bad_breaker_scripts_are_config_errors(script: list[tuple[float, Any]]) -> None:
    with pytest.raises(ConfigError):
        simulate_breaker(script)


def test_manual_clock_never_goes_back() -> None:
    manual = ManualClock(5.0)
    with pytest.raises(ConfigError, match="back in time"):
        sample_breaker(FallbackManager("p", ["b"], clock=manual), [(1.0, "success")], clock=manual)


def test_breaker_timeline_steps_match_the_script() -> None:
    samples = simulate_breaker(SCRIPT)
    fig = breaker_timeline(samples)
    (line,) = artists(fig, "breaker-state")
    levels = {"PRIMARY": 0, "RECOVERING": 1, "FALLBACK": 2}
    expected_levels = [levels[state.name] for _, _, state, _ in EXPECTED]
    assert list(line.get_ydata()) == [*expected_levels, expected_levels[-1]]
    assert list(line.get_xdata())[:-1] == [t for t, _, _, _ in EXPECTED]
    assert line.get_drawstyle() == "steps-post"
    assert len(artists(fig, "cooldown")) == 1
    # one outcome marker per scripted turn, at the level the turn was served in
    outcome_points = [
        p
        for gid in ("outcome-success", "outcome-close", "outcome-failure", "outcome-trip")
        for p in scatter_points(fig, gid)
    ]
    assert len(outcome_points) == len(SCRIPT)
    assert (2.0, 0.0) in outcome_points  # the tripping failure was served by PRIMARY
    assert (10.0, 2.0) in outcome_points  # the backup served in FALLBACK
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(levels)
    render(fig)


def test_breaker_timeline_of_nothing() -> None:
    fig = breaker_timeline([])
    assert [t.get_text() for t in fig.axes[0].texts] == ["no samples"]


def test_handler_stream_composes_with_plain_rx_operators() -> None:
    """The tap is an ordinary operator: a fold downstream still sees every event."""
    from rxturn.fold import INITIAL_STATE, TurnState, fold_handler

    rec = TurnRecorder(clock=ManualClock())
    states: list[TurnState] = []
    tapped: reactivex.Observable[HandlerEvent] = reactivex.from_iterable(REPLY).pipe(rec.tap())
    folded: reactivex.Observable[TurnState] = tapped.pipe(
        ops.scan(fold_handler, INITIAL_STATE), ops.last()
    )
    folded.subscribe(on_next=states.append)
    assert states[0].message().text == rec.text == "Hello"


def test_summarize_turns_gives_one_row_per_turn() -> None:
    rows = summarize_turns(story())
    got = [
        (r.seq, r.attempts, r.resets, r.rescued, r.ok, r.model, r.start, r.duration) for r in rows
    ]
    assert got == [
        (0, 3, 2, False, True, None, 0.0, 1.8),
        (1, 2, 1, True, True, None, 2.0, 1.0),
        (2, 1, 0, False, False, "small", 3.5, 0.5),
    ]
    assert rows[2].error == "boom"
    assert rows[0].error is None


def test_timeline_labels_name_the_turns() -> None:
    fig = timeline(story(), labels={0: "drop", 2: "backup fails"})
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[0] == "drop · attempt 1"
    assert labels[3].startswith("turn 1 · attempt 1")
    assert labels[5] == "backup fails · attempt 1\nsmall"


def test_a_failing_listener_never_breaks_the_stream(caplog: pytest.LogCaptureFixture) -> None:
    class BrokenSink:
        def show(self, view: LiveView) -> None:
            raise RuntimeError("display is gone")

    rec = TurnRecorder(clock=ManualClock())
    rec.add_listener(lambda change: None)
    seen: list[HandlerEvent] = []
    done: list[bool] = []
    live = LiveText(sink=ListSink(), min_interval=0.0).attach(rec)
    live.sink = BrokenSink()
    reactivex.from_iterable(REPLY).pipe(rec.tap()).subscribe(
        on_next=seen.append, on_completed=lambda: done.append(True)
    )
    assert seen == REPLY and done == [True]
    assert rec.text == "Hello"
    assert "display is gone" in caplog.text


def test_print_sink_reports_a_failure_once() -> None:
    out = io.StringIO()
    rec = TurnRecorder(clock=ManualClock())
    live = LiveText(sink=PrintSink(out), min_interval=0.0).attach(rec)
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="Hel")
    rec.on_turn_end(
        turn=0, success=False, error="HTTP 500", duration_ms=1.0, input_tokens=0, output_tokens=0
    )
    live.render()  # later renders of the same failed turn add nothing
    live.render()
    assert out.getvalue() == "\n[turn 0 · streaming]\nHel\n[failed: HTTP 500]"


@pytest.mark.parametrize(
    ("function", "args", "kwargs", "named"),
    [
        (timeline, (None,), {}, "timeline(source)"),
        (timeline, ("abc",), {}, "timeline(source)"),
        (timeline, ([1, 2],), {}, "timeline(source)[0]"),
        (timeline, ("rec",), {"width": -1}, "timeline(width)"),
        (timeline, ("rec",), {"width": "wide"}, "timeline(width)"),
        (timeline, ("rec",), {"width": math.nan}, "timeline(width)"),
        (timeline, ("rec",), {"labels": ["first"]}, "timeline(labels)"),
        (attempt_spans, (None,), {}, "attempt_spans(records)"),
        (attempt_spans, ("records+3",), {}, "attempt_spans(records)[1]"),
        (summarize_turns, (None,), {}, "summarize_turns(records)"),
        (summarize_turns, ([{"kind": "turn_start"}],), {}, "summarize_turns(records)[0]"),
    ],
)
def test_log_functions_refuse_a_wrong_argument_by_name(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], named: str
) -> None:
    rec = TurnRecorder(clock=ManualClock())
    rec.on_turn_start(turn=0, query="hi")
    stand_in = {"rec": rec, "records+3": [*rec.records, 3]}
    args = tuple(stand_in.get(a, a) if isinstance(a, str) else a for a in args)
    with pytest.raises(ConfigError, match=re.escape(named) + " must be"):
        function(*args, **kwargs)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: TurnRecorder(clock=cast(Any, 5)), "TurnRecorder.clock"),
        (lambda: TurnRecorder(max_records=cast(Any, "many")), "max_records"),
        (lambda: TurnRecorder(max_replies=cast(Any, None)), "max_replies"),
        (lambda: TurnRecorder().attach(cast(Any, None)), r"TurnRecorder.attach\(engine\)"),
        (lambda: TurnRecorder().attach(cast(Any, "engine")), r"TurnRecorder.attach\(engine\)"),
        (lambda: LiveText(sink=cast(Any, 5)), "LiveText.sink"),
        (lambda: LiveText(scheduler=cast(Any, 5)), "LiveText.scheduler"),
        (lambda: LiveText(sink=ListSink()).attach(cast(Any, None)), r"LiveText.attach\(source\)"),
    ],
)
def test_recorder_and_live_text_refuse_a_wrong_argument_by_name(make: Any, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        make()


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: simulate_breaker(cast(Any, None)), r"simulate_breaker\(script\) must be"),
        (lambda: simulate_breaker(cast(Any, [1, 2])), r"simulate_breaker\(script\)\[0\]"),
        (lambda: simulate_breaker(cast(Any, [(0, "fail")])), r"simulate_breaker\(script\)\[0\]"),
        (lambda: simulate_breaker([(math.nan, "failure")]), r"simulate_breaker\(script\)\[0\]"),
        (lambda: simulate_breaker(cast(Any, [(0, "success"), "x"])), r"\(script\)\[1\]"),
        (lambda: breaker_timeline(cast(Any, None)), r"breaker_timeline\(samples\) must be"),
        (lambda: breaker_timeline(cast(Any, [1])), r"breaker_timeline\(samples\)\[0\]"),
        (lambda: breaker_timeline([], width=0), r"breaker_timeline\(width\)"),
        (lambda: ManualClock(cast(Any, "noon")), r"ManualClock\(now\)"),
        (lambda: ManualClock().advance_to(cast(Any, None)), r"ManualClock.advance_to\(when\)"),
    ],
)
def test_breaker_helpers_refuse_a_wrong_argument_by_name(make: Any, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        make()


@pytest.mark.parametrize("ipython", ["installed", "missing"])
def test_ipython_sink_outside_jupyter_prints_plain_text(
    ipython: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if ipython == "missing":
        monkeypatch.setitem(sys.modules, "IPython", None)  # import IPython raises ImportError
        monkeypatch.setitem(sys.modules, "IPython.display", None)
    rec = TurnRecorder(clock=ManualClock())
    LiveText(sink=IPythonSink(), min_interval=0).attach(rec)
    rec.on_turn_start(turn=0, query="hi")
    rec.on_text_delta(turn=0, delta="Hello <b>")
    out = capsys.readouterr().out
    assert out.endswith("Hello <b>")
    assert "IPython" not in out and "<div" not in out


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: IPythonSink(max_chars=-1), "IPythonSink.max_chars"),
        (lambda: IPythonSink(max_chars=cast(Any, "all")), "IPythonSink.max_chars"),
        (lambda: PrintSink(cast(Any, 5)), "PrintSink.stream"),
    ],
)
def test_sinks_refuse_a_wrong_argument_by_name(make: Any, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        make()


@pytest.mark.parametrize("draw", ["timeline", "breaker_timeline"])
def test_drawing_without_matplotlib_names_the_extra(
    draw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'rxturn[notebook]'")):
        if draw == "timeline":
            timeline([])
        else:
            breaker_timeline([])


def test_a_turn_retried_hundreds_of_times_draws_a_figure_of_readable_size() -> None:
    clock = ManualClock()
    rec = TurnRecorder(clock=clock)
    rec.on_turn_start(turn=0, query="hi")
    for attempt in range(2, 202):  # 200 resets: 201 attempts, 201 lanes
        clock.advance_to(clock.now + 0.01)
        rec.on_attempt_reset(turn=0, reset=reset(attempt))
    fig = timeline(rec)
    assert len(attempt_spans(rec.records)) == 201
    _, height = fig.get_size_inches()
    assert height < 30  # inches; a lane each (0.55 in) would be over 110
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert 0 < len(names) <= 40
    assert names[0] == "turn 0 · attempt 1"


def test_no_api_key_or_image_bytes_in_what_a_recorder_shows() -> None:
    key = "sk-ant-api03-" + "Q7x" * 12
    image = "iVBORw0KGgo" + "AbC9xYz1" * 40  # a PNG's base64, as a server echoes it
    clock = ManualClock()
    rec = TurnRecorder(clock=clock)
    out = io.StringIO()
    LiveText(sink=PrintSink(out), min_interval=0).attach(rec)
    rec.on_turn_start(turn=0, query=f"use {key}")
    rec.on_text_delta(turn=0, delta="partial")
    clock.advance_to(1.0)
    rec.on_attempt_reset(turn=0, reset=reset(2, reason=f"401 bad x-api-key {key}"))
    rec.on_stream_failure(turn=0, model="m", error=ReadError(f"could not read image {image}"))
    rec.on_turn_end(
        turn=0,
        success=False,
        error=f"failed with {key} {image}",
        duration_ms=1000.0,
        input_tokens=0,
        output_tokens=0,
    )
    shown = [
        *(r.detail or "" for r in rec.records),
        rec.view().to_html(),
        out.getvalue(),
        *(cast(Any, t).get_text() for t in timeline(rec).findobj(matplotlib.text.Text)),
    ]
    for text in shown:
        assert key not in text and key[:20] not in text
        assert image[:40] not in text
    assert any("[redacted]" in text for text in shown)


def test_a_hedge_that_wins_names_its_model_in_the_live_view() -> None:
    """The engine calls on_hedge, then on_hedge_won before the winner's first event: the text
    that streams from then on is the hedge model's, and the headline says so."""
    clock = ManualClock()
    rec = TurnRecorder(clock=clock).attach(offline_engine())  # its served model: "m"
    out = io.StringIO()
    LiveText(sink=PrintSink(out), min_interval=0).attach(rec)
    rec.on_turn_start(turn=0, query="who answers first?")
    assert rec.view().model == "m"
    clock.advance_to(0.5)
    rec.on_hedge(turn=0, turn_id=1, model="m", hedge_model="quick", reason="delay", after=0.5)
    clock.advance_to(0.6)
    rec.on_hedge_won(turn=0, turn_id=1, model="m", hedge_model="quick", after=0.6)
    rec.on_text_delta(turn=0, delta="The backup answered first.")
    assert rec.view().model == "quick"
    assert "quick" in rec.view().headline()
    assert [r.kind for r in rec.records][-2:] == ["hedge", "hedge_won"]
    assert out.getvalue() == (
        "\n[turn 0 · m · streaming]\n\n[turn 0 · quick · streaming]\nThe backup answered first."
    )


@pytest.mark.parametrize("max_chars", [-1, 0, "all", 2.5])
def test_live_view_html_refuses_a_wrong_max_chars(max_chars: Any) -> None:
    rec = TurnRecorder(clock=ManualClock())
    rec.on_turn_start(turn=0, query="q")
    rec.on_text_delta(turn=0, delta="hello world")  # 11 chars: -1 claimed 12 hidden
    with pytest.raises(ConfigError, match=r"to_html\(max_chars\)"):
        rec.view().to_html(max_chars=max_chars)
