"""The engine: a turn as one pipeline, the agent loop around it, grouped by concern.

One subpackage per concern:

- :mod:`~rxturn.engine.handler`: :class:`StreamHandler`, the retry / rate-limit / deadline /
  rescue ladder (its policy, its plan, the driver that runs it, a hedged first attempt);
- :mod:`~rxturn.engine.turn`: one turn's setup, its call on one of two paths and its outcome;
- :mod:`~rxturn.engine.failover`: moving on to the next model of the chain, on both paths;
- :mod:`~rxturn.engine.fanout`: the shared turn stream and its consumers, :class:`RunStream`;
- :mod:`~rxturn.engine.agent`: the agent loop and the tools it runs;
- :mod:`~rxturn.engine.records`: results, the attempt log, the audit trail;
- :mod:`~rxturn.engine.observation`: the observer contract and the stock observers;
- :mod:`~rxturn.engine.context`: token counting and the context window.

:class:`TurnEngine` (:mod:`~rxturn.engine._engine`) is the front door that wires them: it owns
one collaborator per concern and runs a turn through them. See docs/design.md.
"""

from ._engine import RunResult, Session, TurnEngine, TurnMode, TurnResult
from .agent.tools import ToolTimeoutError
from .fanout._run_stream import RunStream, TextPiece
from .fanout._turn_stream import TurnStream
from .handler._handler import RetryAfterBeyondDeadline
from .records.audit import AttemptRecord

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
