"""The handler: a streaming turn's resilience ladder, its plan and the driver that runs it.

- :mod:`~rxturn.engine.handler._handler`: :class:`StreamHandler`, the policy (timeouts, the two
  retry ladders, the limiter, the rescue) and the public operators it is defined as;
- :mod:`~rxturn.engine.handler._plan`: :class:`TurnSpec`, one turn's plan as data, and
  :class:`AttemptWatcher`, what an attempt reports;
- :mod:`~rxturn.engine.handler._ladder`: :class:`Ladder`, the driver: one object, one timer per
  subscription, every verdict asked of :mod:`rxturn.resilience`;
- :mod:`~rxturn.engine.handler._hedging`: :class:`TurnRace`, a hedged first attempt planned
  against the fallback chain.
"""

from ._handler import AttemptWatcher, RetryAfterBeyondDeadline, StreamHandler

__all__ = ["AttemptWatcher", "RetryAfterBeyondDeadline", "StreamHandler"]
