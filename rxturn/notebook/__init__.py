"""Notebook helpers: watch a turn as it streams, then draw what happened to it.

A resilient turn is hard to read from its final reply alone: the reply hides the dropped stream
that was retried, the 529 that was waited out, the rescue that saved it and the breaker that
moved it to a backup model. This module makes that story visible, in Jupyter or a script:

- :class:`TurnRecorder` is an :class:`~rxturn.engine.observation.observers.Observer` that also
  listens to ``engine.events`` (:meth:`TurnRecorder.attach`). It keeps a compact, timestamped log of
  :class:`Record` entries — one per callback, never one per delta: text deltas only bump
  per-attempt counters in time bins (:class:`DeltaDensity`), so a 100k-delta reply costs a few
  kilobytes of log. It also holds what a live display needs: the current attempt's text (wiped
  at ``AttemptReset``), the tail of the attempts that were discarded, and the committed replies.
  :meth:`TurnRecorder.tap` does the same for a bare handler stream you compose yourself.
- :class:`LiveText` shows the streaming text live. It can attach *mid-turn*: it renders what
  the recorder has so far, then follows it; at ``AttemptReset`` the shown text is struck
  through and the new attempt's text starts below it. Renders are throttled (at most one per
  ``min_interval``), with one trailing flush, so a fast stream never floods the frontend.
- :func:`timeline` draws a recorder's log as a matplotlib figure: a lane per attempt, resets,
  the rescue, breaker trips, model switches, success or failure, and text-delta density.
- :func:`simulate_breaker` / :func:`sample_breaker` drive a
  :class:`~rxturn.FallbackManager` through a scripted sequence of outcomes on virtual
  time, and :func:`breaker_timeline` plots its state as a step plot.
- :func:`summarize_turns` condenses a log into one row per turn (attempts, resets, rescued,
  outcome, duration) for a results table.

matplotlib and IPython are imported inside the functions that need them, so ``import
rxturn.notebook`` works without either installed.

Layout: ``_records`` (value types), ``_recorder``, ``_live``, ``_timeline``, ``_breaker``.

Examples:
    >>> rec = TurnRecorder(clock=ManualClock())
    >>> rec.on_turn_start(turn=0, query="hi")
    >>> rec.on_text_delta(turn=0, delta="Hello")
    >>> [s.attempts for s in summarize_turns(rec)], rec.text
    ([1], 'Hello')
"""

from __future__ import annotations

from ._breaker import (
    BreakerOutcome,
    BreakerSample,
    ManualClock,
    breaker_timeline,
    sample_breaker,
    simulate_breaker,
)
from ._live import DisplaySink, IPythonSink, LiveText, PrintSink
from ._recorder import TurnRecorder
from ._records import DeltaDensity, LiveView, Record, Retracted
from ._timeline import AttemptSpan, TurnSummary, attempt_spans, summarize_turns, timeline

__all__ = [
    "AttemptSpan",
    "BreakerOutcome",
    "BreakerSample",
    "DeltaDensity",
    "DisplaySink",
    "IPythonSink",
    "LiveText",
    "LiveView",
    "ManualClock",
    "PrintSink",
    "Record",
    "Retracted",
    "TurnRecorder",
    "TurnSummary",
    "attempt_spans",
    "breaker_timeline",
    "sample_breaker",
    "simulate_breaker",
    "summarize_turns",
    "timeline",
]
