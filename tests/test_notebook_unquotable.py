"""The notebook helpers given a value no message can quote whole (an int Python will not
print, an object whose repr raises, a million-character string) in an argument: a one-line
ConfigError, never the error raised while that message was written, nor a megabyte of
message."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from unquotable import UNQUOTABLE, UNQUOTABLE_IDS, assert_refused_in_one_line

from rxturn.errors import ConfigError
from rxturn.notebook import (
    IPythonSink,
    LiveText,
    LiveView,
    ManualClock,
    PrintSink,
    TurnRecorder,
    breaker_timeline,
    simulate_breaker,
    timeline,
)

VIEW = LiveView(seq=0, turn=None, attempt=1, model=None, text="")

COUNT: tuple[type, ...] = (int,)  # a huge int is still a count or a length of time

#: (what, the call, the types of a value it takes)
CASES: list[tuple[str, Callable[[object], object], tuple[type, ...]]] = [
    ("ManualClock now", lambda bad: ManualClock(bad), ()),  # pyright: ignore[reportArgumentType]
    ("ManualClock.advance_to when", lambda bad: ManualClock().advance_to(bad), ()),  # pyright: ignore[reportArgumentType]
    ("IPythonSink max_chars", lambda bad: IPythonSink(max_chars=bad), COUNT),  # pyright: ignore[reportArgumentType]
    ("PrintSink stream", lambda bad: PrintSink(stream=bad), ()),  # pyright: ignore[reportArgumentType]
    ("LiveText sink", lambda bad: LiveText(sink=bad), ()),  # pyright: ignore[reportArgumentType]
    ("LiveText min_interval", lambda bad: LiveText(sink=PrintSink(), min_interval=bad), COUNT),  # pyright: ignore[reportArgumentType]
    ("LiveText scheduler", lambda bad: LiveText(sink=PrintSink(), scheduler=bad), ()),  # pyright: ignore[reportArgumentType]
    ("TurnRecorder clock", lambda bad: TurnRecorder(clock=bad), ()),  # pyright: ignore[reportArgumentType]
    ("TurnRecorder density_bin", lambda bad: TurnRecorder(density_bin=bad), COUNT),  # pyright: ignore[reportArgumentType]
    ("TurnRecorder max_records", lambda bad: TurnRecorder(max_records=bad), COUNT),  # pyright: ignore[reportArgumentType]
    ("LiveView.to_html max_chars", lambda bad: VIEW.to_html(max_chars=bad), COUNT),  # pyright: ignore[reportArgumentType]
    ("timeline width", lambda bad: timeline([], width=bad), ()),  # pyright: ignore[reportArgumentType]
    ("breaker_timeline width", lambda bad: breaker_timeline([], width=bad), ()),  # pyright: ignore[reportArgumentType]
    ("simulate_breaker step", lambda bad: simulate_breaker([bad]), ()),  # pyright: ignore[reportArgumentType]
    ("simulate_breaker time", lambda bad: simulate_breaker([(bad, "failure")]), ()),  # pyright: ignore[reportArgumentType]
    ("simulate_breaker outcome", lambda bad: simulate_breaker([(0, bad)]), ()),  # pyright: ignore[reportArgumentType]
]


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
@pytest.mark.parametrize(("call", "takes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_an_unquotable_argument_is_a_one_line_config_error(
    call: Callable[[object], object], takes: tuple[type, ...], bad: object
) -> None:
    # before: ValueError ("Exceeds the limit (4300 digits) for integer string conversion"),
    # the object's own RuntimeError, or a message of a million characters
    assert_refused_in_one_line(call, bad, ConfigError, takes=takes)
