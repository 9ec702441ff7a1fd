"""The turn: one model call from its request to its recorded outcome.

- :mod:`~rxturn.engine.turn._setup`: :class:`TurnSetup`, the request of a turn (history,
  context window, memory, compaction, tools, the context estimate);
- :mod:`~rxturn.engine.turn._calls`: :class:`TurnCalls`, the turn itself: setup asked for the
  request, the call on one of two paths (streaming through the handler, or one non-streaming
  ``create``; failover through :mod:`rxturn.engine.failover`), the outcome and the audit entry;
- :mod:`~rxturn.engine.turn._outcome`: the outcome recorded in its strict order;
- :mod:`~rxturn.engine.turn._race`: :func:`race`, an awaitable raced against cancel and a
  timeout (the non-streaming call and each tool call).
"""
