"""Context-estimate cost: the first turn of a long conversation vs a later turn.

A 100-message, ~50k-token history (cl100k) is estimated the way the engine does before every
call: ``estimate_context`` over history + transients + system prompt + tool schemas. The first
turn tokenises everything; a later turn adds one new message and, thanks to the per-message
cache and the cached overhead, should tokenise only that message. The later turn must be at
least 20x cheaper; the script exits 1 if it is not.

Run: ``python benchmarks/bench_context.py [--repeat N]`` (no network needed).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable

from rxturn.engine.context.tokens import OverheadCache, TiktokenCounter, estimate_context
from rxturn.messages import Message, TextPart, ToolCallPart, ToolResultPart, ToolSchema

__all__ = ["main"]

_VOCABULARY = (
    "the model returns a streamed reply with tool calls and usage tokens while the engine "
    "retries transient errors honours rate limits and records every turn in the audit trail "
    "context window compaction summary budget estimate overhead schema system prompt memory "
    "def return import class async await json http status 429 529 retry-after seconds"
)
_WORDS = _VOCABULARY.split()

SYSTEM = "You are a careful coding assistant. Answer briefly and cite files you read."
TOOLS = tuple(
    ToolSchema(
        name=f"tool_{i}",
        description=f"Tool number {i}: reads or writes part of the workspace.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
    )
    for i in range(8)
)
MINIMUM_SPEEDUP = 20.0


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def build_history(rng: random.Random, messages: int = 100, words: int = 460) -> list[Message]:
    """User/assistant text with a tool exchange every tenth pair, ~500 tokens per message."""
    history: list[Message] = []
    for i in range(messages):
        if i % 20 == 18:
            call = ToolCallPart(f"call_{i}", "tool_1", {"path": f"src/file_{i}.py", "limit": 200})
            history.append(Message(role="assistant", content=(TextPart(_text(rng, words)), call)))
        elif i % 20 == 19:
            result = ToolResultPart(f"call_{i - 1}", _text(rng, words))
            history.append(Message(role="user", content=(result,)))
        elif i % 2 == 0:
            history.append(Message.user(_text(rng, words)))
        else:
            history.append(Message.assistant(_text(rng, words)))
    return history


def _median_seconds(run: Callable[[], object], repeat: int) -> float:
    samples: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=15, help="timed repetitions per case")
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)

    rng = random.Random(6)
    history = build_history(rng)
    transients = [Message.user("Goal: finish the refactor without breaking the public API.")]
    TiktokenCounter().load()  # encoding load is a one-off per process; keep it out of the timings

    def first_turn() -> int:
        counter = TiktokenCounter()
        return estimate_context(
            counter,
            history=history,
            transients=transients,
            system=SYSTEM,
            tools=TOOLS,
            overhead_cache=OverheadCache(),
        ).total

    counter = TiktokenCounter()
    overhead = OverheadCache()
    warm = estimate_context(
        counter,
        history=history,
        transients=transients,
        system=SYSTEM,
        tools=TOOLS,
        overhead_cache=overhead,
    )
    new_messages = iter([Message.user(_text(rng, 460)) for _ in range(repeat)])

    def later_turn() -> int:
        return estimate_context(
            counter,
            history=history,
            pending=[next(new_messages)],
            transients=transients,
            system=SYSTEM,
            tools=TOOLS,
            overhead_cache=overhead,
        ).total

    first = _median_seconds(first_turn, repeat)
    misses_before = counter.misses
    later = _median_seconds(later_turn, repeat)
    new_tokenised = (counter.misses - misses_before) / repeat
    speedup = first / later

    print(
        f"history: {len(history)} messages, {warm.conversation} conversation tokens, "
        f"overhead {warm.overhead}, transients {warm.transients}, total {warm.total}"
    )
    print(
        f"first turn estimate:  {first * 1e3:9.3f} ms  "
        f"({warm.total / first / 1e6:.2f} M tokens/s counted)"
    )
    print(
        f"later turn estimate:  {later * 1e3:9.3f} ms  "
        f"(+1 message; {new_tokenised:.0f} message(s) tokenised per turn)"
    )
    print(f"speed-up: {speedup:.1f}x (required >= {MINIMUM_SPEEDUP:.0f}x)")
    if speedup < MINIMUM_SPEEDUP:
        print("FAIL: the cached estimate is not cheap enough", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
