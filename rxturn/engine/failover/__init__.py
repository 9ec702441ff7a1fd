"""Failover: a turn moving on to the next model of its fallback chain, on both paths.

- :mod:`~rxturn.engine.failover._legs`: :class:`TurnLegs`, one turn's legs (the model serving
  it now, the models tried, its attempt log, the deadline a next leg gets), and the steps both
  paths take: :func:`can_fail_over`, :func:`fail_over` (the verdict, the leg's failure on the
  breaker, the switch) and :meth:`TurnLegs.reset` (the ``AttemptReset`` the consumers see);
- :mod:`~rxturn.engine.failover._next_leg`: :class:`NextLeg`, the streaming path's next leg,
  chained in the same stream after the reset.
"""
