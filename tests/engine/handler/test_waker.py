"""The loop waker: every handled turn of a loop woken from one loop timer.

The waker's rules run on a loop stand-in whose clock the test moves (``call_at`` records the
handle, the test fires it), so no test waits on the wall clock; the last test runs handled turns
on a real loop and counts the loop's timers.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any, cast

from rxturn.clients import AnthropicClient
from rxturn.engine.handler import StreamHandler
from rxturn.engine.handler._waker import LoopWaker, waker_for
from rxturn.messages import Message, Request
from rxturn.resilience.clock import SLACK
from rxturn.testing import MockResponse, MockTransport


class _Handle:
    def __init__(self, when: float, callback: Callable[[], object]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Loop:
    """What the waker uses of a loop: its clock, ``call_at`` and the exception handler."""

    def __init__(self) -> None:
        self.now = 100.0
        self.handles: list[_Handle] = []
        self.reported: list[dict[str, Any]] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], object]) -> _Handle:
        handle = _Handle(when, callback)
        self.handles.append(handle)
        return handle

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self.reported.append(context)

    def armed(self) -> list[float]:
        return [h.when for h in self.handles if not h.cancelled]

    def run_until(self, t: float) -> None:
        """Move the clock to ``t``, firing (as a loop would) each live handle due by then."""
        while True:
            due = [h for h in self.handles if not h.cancelled and h.when <= t]
            if not due:
                break
            handle = min(due, key=lambda h: h.when)
            self.now = max(self.now, handle.when)
            handle.cancelled = True  # (run once)
            handle.callback()
        self.now = t


def _waker() -> tuple[LoopWaker, _Loop]:
    loop = _Loop()
    return LoopWaker(cast(asyncio.AbstractEventLoop, loop)), loop


def _recorder(log: list[tuple[str, float]], name: str, loop: _Loop) -> Callable[[], None]:
    def wake() -> None:
        log.append((name, loop.now))

    return wake


def test_each_entry_is_woken_at_its_instant_earliest_first() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    late, early, tie = (_recorder(log, n, loop) for n in ("late", "early", "tie"))
    waker.arm(late, 130.0)
    waker.arm(early, 110.0)
    waker.arm(tie, 130.0)
    loop.run_until(200.0)
    assert log == [("early", 110.0), ("late", 130.0), ("tie", 130.0)]
    assert loop.armed() == []


def test_a_later_instant_leaves_the_loop_timer_where_it_is() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    waker.arm(_recorder(log, "a", loop), 120.0)
    for k in range(50):
        waker.arm(_recorder(log, f"b{k}", loop), 121.0 + k)
    assert loop.armed() == [120.0]
    assert len(loop.handles) == 1
    waker.arm(_recorder(log, "c", loop), 105.0)  # earlier: the timer moves
    assert loop.armed() == [105.0]


def test_arming_again_replaces_the_instant() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    wake = _recorder(log, "a", loop)
    waker.arm(wake, 110.0)
    waker.arm(wake, 150.0)
    loop.run_until(200.0)
    assert log == [("a", 150.0)]


def test_a_disarmed_entry_is_not_woken_and_the_timer_moves_on() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    first, second = _recorder(log, "first", loop), _recorder(log, "second", loop)
    waker.arm(first, 110.0)
    waker.arm(second, 140.0)
    waker.disarm(first)
    waker.disarm(_recorder(log, "never armed", loop))  # nothing to forget: nothing happens
    loop.run_until(111.0)  # the timer armed for ``first`` fires early for the rest
    assert log == []
    assert loop.armed() == [140.0]
    loop.run_until(200.0)
    assert log == [("second", 140.0)]


def test_an_entry_is_woken_within_slack_of_its_instant_not_before() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    waker.arm(_recorder(log, "a", loop), 110.0)
    waker.arm(_recorder(log, "within", loop), 110.0 + SLACK / 2)
    waker.arm(_recorder(log, "after", loop), 110.0 + SLACK * 4)
    loop.run_until(110.0)
    assert [name for name, _ in log] == ["a", "within"]
    assert loop.armed() == [110.0 + SLACK * 4]


def test_an_entry_let_go_or_armed_again_by_an_earlier_wake_up_is_not_woken_then() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    dropped, moved = _recorder(log, "dropped", loop), _recorder(log, "moved", loop)

    def first() -> None:
        log.append(("first", loop.now))
        waker.disarm(dropped)
        waker.arm(moved, 160.0)

    waker.arm(first, 120.0)
    waker.arm(dropped, 120.0)
    waker.arm(moved, 120.0)
    loop.run_until(200.0)
    assert log == [("first", 120.0), ("moved", 160.0)]


def test_a_wake_up_armed_by_another_for_now_runs_on_the_next_firing() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    later = _recorder(log, "later", loop)

    def first() -> None:
        log.append(("first", loop.now))
        waker.arm(later, loop.now)

    waker.arm(first, 120.0)
    loop.run_until(120.0)
    assert log == [("first", 120.0), ("later", 120.0)]
    assert loop.armed() == []


def test_a_wake_up_that_raises_is_reported_and_the_others_run() -> None:
    waker, loop = _waker()
    log: list[tuple[str, float]] = []
    boom = RuntimeError("boom")

    def raising() -> None:
        raise boom

    waker.arm(raising, 110.0)
    waker.arm(_recorder(log, "after", loop), 110.0)
    waker.arm(_recorder(log, "later", loop), 130.0)
    loop.run_until(110.0)
    assert log == [("after", 110.0)]
    assert [c["exception"] for c in loop.reported] == [boom]
    assert loop.armed() == [130.0]


def test_each_entry_is_woken_in_the_context_it_was_armed_in() -> None:
    waker, loop = _waker()
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="none")
    seen: list[str] = []

    def wake() -> None:
        seen.append(var.get())
        var.set("changed by the wake-up")

    def arm_in(value: str, due: float) -> None:
        var.set(value)
        waker.arm(wake if value == "a" else lambda: seen.append(var.get()), due)

    contextvars.copy_context().run(arm_in, "a", 110.0)
    contextvars.copy_context().run(arm_in, "b", 120.0)
    var.set("the firing's own")
    loop.run_until(200.0)
    assert seen == ["a", "b"]
    assert var.get() == "the firing's own"


async def test_waker_for_gives_each_loop_its_own() -> None:
    loop = asyncio.get_running_loop()
    assert waker_for(loop) is waker_for(loop)
    other = asyncio.new_event_loop()
    try:
        assert waker_for(other).loop is other
        assert waker_for(loop).loop is loop
    finally:
        other.close()


_BODY = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","model":"m"}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"hi"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


async def test_turns_in_flight_share_one_loop_timer() -> None:
    """Forty handled turns waiting for their replies (each with a first-event and a total
    deadline) hold one loop timer between them, not one each; they then all complete."""
    release = asyncio.Event()

    async def reply(_: object) -> MockResponse:
        await release.wait()
        return MockResponse(chunks=[_BODY], headers={"content-type": "text/event-stream"})

    client = AnthropicClient(
        "m", api_key="k", base_url="http://127.0.0.1:9", transport=MockTransport(reply)
    )
    handler = StreamHandler()
    loop = asyncio.get_running_loop()
    scheduled: list[asyncio.TimerHandle] = loop._scheduled  # pyright: ignore[reportAttributeAccessIssue]
    before = sum(not h.cancelled() for h in scheduled)
    request = Request(messages=(Message.user("hello"),))
    done: list[bool] = []
    subscriptions = [
        handler.stream_turn_batches(client, request).subscribe(
            on_next=lambda _: None, on_completed=lambda: done.append(True)
        )
        for _ in range(40)
    ]
    await asyncio.sleep(0)
    assert sum(not h.cancelled() for h in scheduled) - before <= 1
    release.set()
    async with asyncio.timeout(10):
        while len(done) < 40:
            await asyncio.sleep(0.001)
    for subscription in subscriptions:
        subscription.dispose()
