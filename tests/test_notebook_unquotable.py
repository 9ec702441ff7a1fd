"""The notebook helpers given a value no message can quote whole (an int Python will not
print, an object whose repr raises, a million-character string) in an argument: a one-line
ConfigError, never the error raised while that message was written, nor a megabyte of
message."""

from __future__ import annotations

from unquotable import Case, one_line_refusals

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
CASES: list[Case] = [
    ("ManualClock now", lambda bad: ManualClock(bad), ()),
    ("ManualClock.advance_to when", lambda bad: ManualClock().advance_to(bad), ()),
    ("IPythonSink max_chars", lambda bad: IPythonSink(max_chars=bad), COUNT),
    ("PrintSink stream", lambda bad: PrintSink(stream=bad), ()),
    ("LiveText sink", lambda bad: LiveText(sink=bad), ()),
    ("LiveText min_interval", lambda bad: LiveText(sink=PrintSink(), min_interval=bad), COUNT),
    ("LiveText scheduler", lambda bad: LiveText(sink=PrintSink(), scheduler=bad), ()),
    ("TurnRecorder clock", lambda bad: TurnRecorder(clock=bad), ()),
    ("TurnRecorder density_bin", lambda bad: TurnRecorder(density_bin=bad), COUNT),
    ("TurnRecorder max_records", lambda bad: TurnRecorder(max_records=bad), COUNT),
    ("LiveView.to_html max_chars", lambda bad: VIEW.to_html(max_chars=bad), COUNT),
    ("timeline width", lambda bad: timeline([], width=bad), ()),
    ("breaker_timeline width", lambda bad: breaker_timeline([], width=bad), ()),
    ("simulate_breaker step", lambda bad: simulate_breaker([bad]), ()),
    ("simulate_breaker time", lambda bad: simulate_breaker([(bad, "failure")]), ()),
    ("simulate_breaker outcome", lambda bad: simulate_breaker([(0, bad)]), ()),
]


test_an_unquotable_argument_is_a_one_line_config_error = one_line_refusals(CASES, ConfigError)
