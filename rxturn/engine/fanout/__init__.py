"""The turn stream and its consumers: one stream per turn, fanned out once.

- :mod:`~rxturn.engine.fanout._turn_stream`: :class:`TurnStream`, the shared turn stream (the
  one place the fold's scan runs), its sources and how paths compose it;
- :mod:`~rxturn.engine.fanout._router`: :class:`TurnRouter` (a turn's items to its consumers:
  the streamer, the observers, ``engine.events``) and :class:`ObserverSet` (the observers'
  dispatch, errors isolated);
- :mod:`~rxturn.engine.fanout._run_stream`: :class:`RunStream`, a run consumed with
  ``async for``.
"""
