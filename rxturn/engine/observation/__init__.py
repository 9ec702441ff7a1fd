"""Observation: the observer contract and the stock observers.

- :mod:`~rxturn.engine.observation.observers`: the public face (:class:`Observer`,
  :class:`ObserverSet`, :class:`LoggingObserver`, :class:`RecordingObserver`);
- :mod:`~rxturn.engine.observation._callbacks`: the callbacks and their keyword sets, and the
  check an observer passes when added;
- :mod:`~rxturn.engine.observation._stock_observers`: the logging and recording observers.
- :mod:`~rxturn.engine.observation._subject`: :class:`EngineSubject`, the Subject behind
  ``engine.events`` and ``engine.turn_streams`` (one call per item).

The dispatch itself (:class:`ObserverSet`) lives with the fan-out, :mod:`rxturn.engine.fanout`.
"""
