"""Context and tokens: what a request costs in tokens, and keeping it inside the window.

- :mod:`~rxturn.engine.context.tokens`: :class:`TokenCounter`, :class:`TiktokenCounter`,
  :func:`estimate_context` (tiktoken imported lazily);
- :mod:`~rxturn.engine.context.window`: :class:`ContextWindow`, compactors, memory providers and
  the calibration of the estimate against reported usage.
"""
