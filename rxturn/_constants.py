"""Every default of the stream handler and the model breaker, in one place (docs/behaviour.md
§2.1 and §3 say what each one means).

Times are seconds (floats), the unit
every rxturn scheduler speaks. The policies (:mod:`~rxturn.resilience.policies`) read their
field defaults from here, so changing a number here changes it everywhere, and nothing else
hard-codes one.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BREAKER_MAX_FAIL_COUNT",
    "BREAKER_RECOVERY_SUCCESSES",
    "BREAKER_RECOVERY_TIMEOUT",
    "BREAKER_TRIP_THRESHOLD",
    "FIRST_EVENT_TIMEOUT",
    "LIMITER_MAX_WAIT",
    "LIMITER_REQUESTS_PER_MINUTE",
    "MAX_CONSECUTIVE_TIMEOUTS",
    "PER_EVENT_TIMEOUT",
    "RATE_LIMIT_DEFAULT_DELAY",
    "RATE_LIMIT_ESCALATE_AFTER",
    "RATE_LIMIT_MAX_DELAY",
    "RATE_LIMIT_MAX_RETRIES",
    "RATE_LIMIT_RESPECT_RETRY_AFTER",
    "RESCUE_ENABLED",
    "RETRY_BASE_DELAY",
    "RETRY_JITTER",
    "RETRY_MAX_DELAY",
    "RETRY_MAX_RETRIES",
    "TOTAL_TIMEOUT",
]

# --- timeouts (TimeoutPolicy) ------------------------------------------------------------------

#: Wait at most 2 min for the first event of *each* attempt (a cold model can be slow to start).
FIRST_EVENT_TIMEOUT: Final = 120.0
#: Wait at most 3 min between two events once the reply is flowing.
PER_EVENT_TIMEOUT: Final = 180.0
#: The whole turn (every attempt and backoff) gets 5 min of wall clock from its start.
TOTAL_TIMEOUT: Final = 300.0
#: Ten event-timeouts in a row fail an attempt; two when nothing has arrived yet in it.
MAX_CONSECUTIVE_TIMEOUTS: Final = 10
#: After the streaming ladder gives up, try one non-streaming request before failing.
RESCUE_ENABLED: Final = True

# --- transport retries (RetryPolicy) -------------------------------------------------------------

#: Three retries after the first attempt: four streaming attempts in all.
RETRY_MAX_RETRIES: Final = 3
#: The k-th retry sleeps base·2^k (100 ms, 200 ms, 400 ms, …) …
RETRY_BASE_DELAY: Final = 0.1
#: … capped at 10 s …
RETRY_MAX_DELAY: Final = 10.0
#: … and spread by ±10 % so that many clients do not retry in lock-step.
RETRY_JITTER: Final = 0.1

# --- reactive rate limits: 429 / 503 / 529 (RateLimitPolicy) -----------------------------------

#: Honour the provider's Retry-After hint (capped by RATE_LIMIT_MAX_DELAY).
RATE_LIMIT_RESPECT_RETRY_AFTER: Final = True
#: Sleep 5 s after a rate limit that came without a usable hint.
RATE_LIMIT_DEFAULT_DELAY: Final = 5.0
#: Never sleep longer than 60 s for one rate-limit hit, whatever the hint says.
RATE_LIMIT_MAX_DELAY: Final = 60.0
#: Hits 1-3 are retried; hit 4 escalates (RateLimitEscalation) so the model breaker can act.
RATE_LIMIT_ESCALATE_AFTER: Final = 3
#: Hard cap on rate-limit retries (unreachable with the defaults, since 3 < 5).
RATE_LIMIT_MAX_RETRIES: Final = 5

# --- proactive limiter (LimiterPolicy) -----------------------------------------------------------

#: Requests per minute per base URL; 0 disables the limiter.
LIMITER_REQUESTS_PER_MINUTE: Final = 0
#: Wait at most 30 s for a token, then go ahead anyway (the reactive ladder takes over).
LIMITER_MAX_WAIT: Final = 30.0

# --- the model breaker (FallbackPolicy) ----------------------------------------------------------

#: Three failed turns in a row on the primary trip the breaker to the first healthy backup.
BREAKER_TRIP_THRESHOLD: Final = 3
#: After 60 s on a backup, the next turn probes the primary again.
BREAKER_RECOVERY_TIMEOUT: Final = 60.0
#: Two successful probes in a row close the breaker (back to the primary).
BREAKER_RECOVERY_SUCCESSES: Final = 2
#: Each backup may fail two turns before routing skips it.
BREAKER_MAX_FAIL_COUNT: Final = 2
