"""Tool call ids on the way out: each wire's rule for the id of a call and of its result, no IO.

A conversation can hold ids that another wire made (a same-turn failover, a client switched
between turns, a history read with :meth:`~rxturn.messages.Message.from_openai`), and each API
refuses some ids with a 400: Anthropic takes ``^[a-zA-Z0-9_-]+$`` only (an OpenAI-compatible
server's ``functions.get_weather:0`` fails it), OpenAI Chat at most 40 characters, the
Responses API at most 64, and none takes an empty id. An id its wire takes goes out as it is;
any other goes out as a stand-in made from it alone (its allowed characters, cut short, then a
digest of the whole id), so the call and the result that answers it carry the same stand-in in
every request: pairs stay paired, distinct ids stay distinct and the prompt cache still hits.
"""

from __future__ import annotations

import hashlib
import re

import msgspec

__all__ = ["ANTHROPIC_IDS", "CHAT_IDS", "RESPONSES_IDS", "IdRule", "wire_call_id"]

_ALLOWED = re.compile(r"[A-Za-z0-9_-]+")
_REFUSED = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST_BYTES = 8  # 16 hex characters: distinct ids collide with odds of 2**-64
_STAND_IN_LENGTH = 40  # every wire takes this length


class IdRule(msgspec.Struct, frozen=True, kw_only=True):
    """What a wire takes as a tool call id: a longest length, and whether only
    ``[A-Za-z0-9_-]`` characters."""

    max_length: int | None
    plain: bool


ANTHROPIC_IDS = IdRule(max_length=None, plain=True)
CHAT_IDS = IdRule(max_length=40, plain=False)
RESPONSES_IDS = IdRule(max_length=64, plain=False)


def wire_call_id(call_id: str, rule: IdRule) -> str:
    """``call_id`` as the wire of ``rule`` takes it: itself when it fits, else a stand-in.

    >>> wire_call_id("toolu_01A", ANTHROPIC_IDS)
    'toolu_01A'
    >>> stand_in = wire_call_id("functions.weather:0", ANTHROPIC_IDS)
    >>> stand_in.startswith("functions_weather_0_"), len(stand_in)
    (True, 36)
    """
    if (
        call_id
        and (rule.max_length is None or len(call_id) <= rule.max_length)
        and (not rule.plain or _ALLOWED.fullmatch(call_id))
    ):
        return call_id
    digest = hashlib.blake2b(
        call_id.encode("utf-8", "surrogatepass"), digest_size=_DIGEST_BYTES
    ).hexdigest()
    stem = _REFUSED.sub("_", call_id)[: _STAND_IN_LENGTH - len(digest) - 1] or "call"
    return f"{stem}_{digest}"
