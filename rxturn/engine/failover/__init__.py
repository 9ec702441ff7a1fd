"""Failover: a turn moving on to the next model of its fallback chain, on both paths.

- :mod:`~rxturn.engine.failover._legs`: :class:`TurnLegs`, the legs of one turn (which model
  next, when the next leg may start, the rescue budget it gets), used by the streaming path and
  by the non-streaming ``create`` alike.
"""
