"""The resilience pieces as plain data and pure state machines: no Rx, no IO.

- :mod:`~rxturn.resilience.policies`: the handler's policies (timeouts, retries, rate limits,
  the proactive limiter) as frozen Structs with their defaults;
- :mod:`~rxturn.resilience.backoff`: the retry delays (exponential, capped, jittered) and
  ``Retry-After`` parsing;
- :mod:`~rxturn.resilience.limiter`: the proactive token bucket;
- :mod:`~rxturn.resilience.cancel`: the cancel token a turn races against;
- :mod:`~rxturn.resilience.fallback`: the model circuit breaker, a transition table.

The operators in :mod:`rxturn.operators` wire these into streams; see docs/design.md.
"""
