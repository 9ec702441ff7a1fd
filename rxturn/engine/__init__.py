"""The turn: one model call as a pipeline, and the agent loop around it.

- :mod:`~rxturn.engine.handler`: :class:`StreamHandler`, the public operators composed into
  the retry / rate-limit / deadline / rescue ladder;
- :mod:`~rxturn.engine._engine`: :class:`TurnEngine`, one turn from setup
  (:mod:`~rxturn.engine._setup`) to the call on one of two paths (:mod:`~rxturn.engine._calls`);
- :mod:`~rxturn.engine._outcome`: outcome recording, in its strict order;
- :mod:`~rxturn.engine.observers`, :mod:`~rxturn.engine.tools`, :mod:`~rxturn.engine.audit`,
  :mod:`~rxturn.engine.tokens`, :mod:`~rxturn.engine.context`: what a turn reports to, runs,
  records and counts;
- :mod:`~rxturn.engine._stream`: :class:`RunStream`, a run consumed with ``async for``.

See docs/design.md for how these fit together.
"""

from ._engine import RunResult, Session, TurnEngine, TurnMode, TurnResult
from ._paths import TurnStream
from ._stream import RunStream, TextPiece
from .audit import AttemptRecord
from .handler import RetryAfterBeyondDeadline
from .tools import ToolTimeoutError

__all__ = [
    "AttemptRecord",
    "RetryAfterBeyondDeadline",
    "RunResult",
    "RunStream",
    "Session",
    "TextPiece",
    "ToolTimeoutError",
    "TurnEngine",
    "TurnMode",
    "TurnResult",
    "TurnStream",
]
