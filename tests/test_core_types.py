"""The shared vocabulary: message JSON, stop reasons, the error tree, the cancel token."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from rxturn.errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    Cancelled,
    ConfigError,
    ConnectError,
    ContextOverflowError,
    NotFoundError,
    OverloadedError,
    ProviderStreamError,
    RateLimitError,
    RateLimitEscalation,
    RequestTimeoutError,
    ServerError,
    StreamTimeoutError,
    TruncatedStreamError,
    is_rate_limit,
    is_retryable,
    redact,
    status_error,
)
from rxturn.messages import (
    Message,
    Request,
    StopReason,
    TextPart,
    ToolCallPart,
    ToolSchema,
    Usage,
    message_from_json,
    message_to_json,
)
from rxturn.resilience.cancel import CancelToken

#: (built with values their annotations do not allow, on purpose)
_AnyRequest: Any = Request
_AnySchema: Any = ToolSchema


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (
            lambda: _AnyRequest(messages=(), system=5),
            r"^Request\.system must be a str or None, got int",
        ),
        (lambda: _AnyRequest(messages=(), tools=[5]), r"^Request\.tools\[0\] must be a ToolSchema"),
        (
            lambda: _AnyRequest(messages=(), tools="t"),
            r"^Request\.tools must be a tuple of ToolSchema",
        ),
        (lambda: _AnySchema(name=5), r"^ToolSchema\.name must be a non-empty str"),
        (lambda: _AnySchema(name=""), r"^ToolSchema\.name must be a non-empty str"),
        (lambda: _AnySchema(name="t", description=None), r"^ToolSchema\.description must be a str"),
        (lambda: _AnySchema(name="t", input_schema="{}"), r"^ToolSchema\.input_schema must be a"),
    ],
    ids=[
        "system-int",
        "tools-int",
        "tools-str",
        "name-int",
        "name-empty",
        "desc-none",
        "schema-str",
    ],
)
def test_a_request_or_tool_schema_of_the_wrong_types_is_refused_when_built(
    build: Any, says: str
) -> None:
    # before: system=5 and ToolSchema(name=5) went out as JSON numbers for the provider to
    # refuse after the request, and tools=[5] raised AttributeError in the body builder
    with pytest.raises(ConfigError, match=says):
        build()


class TestMessageJson:
    def test_shape_is_spec_3_2(self) -> None:
        message = Message(
            id="msg_1",
            model="m",
            content=(TextPart("hi"), ToolCallPart("t1", "lookup", {"q": "x"})),
            stop_reason=StopReason.TOOL_CALL,
            usage=Usage(input_tokens=3, output_tokens=4),
        )
        assert json.loads(message_to_json(message)) == {
            "id": "msg_1",
            "model": "m",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_call", "id": "t1", "name": "lookup", "input": {"q": "x"}},
            ],
            "stop_reason": "tool_call",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }

    def test_usage_may_be_null_and_round_trips(self) -> None:
        message = Message(id="a", model="m", content=(TextPart("x"),))
        data = message_to_json(message)
        assert json.loads(data)["usage"] is None
        assert message_from_json(data) == message

    def test_bad_json_is_a_validation_error(self) -> None:
        with pytest.raises(msgspec.ValidationError):
            message_from_json(b'{"content": [{"type": "nope"}]}')

    @pytest.mark.parametrize(
        ("part", "says"),
        [
            (TextPart("a\ud800b"), "not valid UTF-8"),
            (ToolCallPart("t1", "n", {"q": "\udfff"}), "not valid UTF-8"),
            (ToolCallPart("t1", "n", {"q": object()}), "not JSON: Encoding objects of type"),
        ],
        ids=["surrogate-text", "surrogate-input", "object-input"],
    )
    def test_a_message_json_cannot_carry_is_a_config_error(
        self, part: TextPart | ToolCallPart, says: str
    ) -> None:
        # before: UnicodeEncodeError / TypeError from msgspec's encoder
        with pytest.raises(ConfigError, match=f"^message_to_json: .*{says}"):
            message_to_json(Message(content=(part,)))

    def test_a_str_holding_a_lone_surrogate_is_a_decode_error(self) -> None:
        # before: UnicodeEncodeError, which the documented msgspec errors do not cover
        with pytest.raises(msgspec.DecodeError, match="not valid UTF-8"):
            message_from_json('{"id": "\ud800"}')

    def test_text_excludes_tool_calls(self) -> None:
        message = Message(content=(TextPart("a"), ToolCallPart("i", "n"), TextPart("b")))
        assert message.text == "ab"
        assert [c.name for c in message.tool_calls] == ["n"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("tool_call", StopReason.TOOL_CALL),
        ("tool_use", StopReason.TOOL_CALL),
        ("tool_calls", StopReason.TOOL_CALL),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("length", StopReason.MAX_TOKENS),
        ("end_turn", StopReason.END_TURN),
        ("stop", StopReason.END_TURN),
        ("stop_sequence", StopReason.STOP_SEQUENCE),
        ("refusal", StopReason.REFUSAL),
        ("content_filter", StopReason.REFUSAL),
        ("max_output_tokens", StopReason.MAX_TOKENS),
        ("unknown", None),
        (None, None),
    ],
)
def test_stop_reason_parse(raw: str | None, expected: StopReason | None) -> None:
    assert StopReason.parse(raw) is expected


def test_only_tool_call_continues_the_loop() -> None:
    assert [r for r in StopReason if r.continues_loop] == [StopReason.TOOL_CALL]


class TestStatusErrors:
    @pytest.mark.parametrize(
        ("status", "cls"),
        [
            (400, BadRequestError),
            (401, AuthenticationError),
            (404, NotFoundError),
            (408, RequestTimeoutError),
            (422, BadRequestError),
            (429, RateLimitError),
            (500, ServerError),
            (502, ServerError),
            (503, OverloadedError),
            (529, OverloadedError),
            (418, APIStatusError),
        ],
    )
    def test_status_maps_to_its_class(self, status: int, cls: type[APIStatusError]) -> None:
        error = status_error(status, "body")
        assert type(error) is cls
        assert error.status_code == status
        assert str(error).startswith(f"HTTP {status}: ")

    def test_context_overflow_is_recognised_and_permanent(self) -> None:
        error = status_error(400, "", error_message="prompt is too long: 210000 tokens > 200000")
        assert isinstance(error, ContextOverflowError)
        assert not is_retryable(error)

    @pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529, 408, 409])
    def test_retryable_statuses(self, status: int) -> None:
        assert is_retryable(status_error(status, ""))

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 422, 451])
    def test_permanent_statuses(self, status: int) -> None:
        assert not is_retryable(status_error(status, ""))

    @pytest.mark.parametrize("value", [5, "timeout", None])
    def test_what_is_no_exception_is_not_retryable(self, value: object) -> None:
        # before: AttributeError ('int' object has no attribute '__cause__')
        assert is_retryable(value) is False  # pyright: ignore[reportArgumentType]

    def test_x_should_retry_wins(self) -> None:
        assert not is_retryable(status_error(500, "", should_retry=False))
        assert not is_retryable(status_error(429, "", should_retry=False))
        assert is_retryable(status_error(418, "", should_retry=True))
        assert is_retryable(status_error(506, "", should_retry=True))

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501, 505, 511])
    def test_no_header_makes_a_never_retried_status_retryable(self, status: int) -> None:
        # the request, key or model is wrong, or the endpoint cannot serve it: never retried
        assert not is_retryable(status_error(status, "", should_retry=True))

    def test_no_header_makes_a_context_overflow_retryable(self) -> None:
        overflow = status_error(400, "prompt is too long: 300000 tokens", should_retry=True)
        assert isinstance(overflow, ContextOverflowError)
        assert not is_retryable(overflow)

    def test_rate_limits_are_recognised(self) -> None:
        assert is_rate_limit(status_error(429, ""))
        assert is_rate_limit(status_error(529, ""))
        assert not is_rate_limit(status_error(500, ""))


class TestRetryVerdicts:
    def test_transient_kinds(self) -> None:
        assert is_retryable(ConnectError("refused"))
        assert is_retryable(TruncatedStreamError(3))
        assert is_retryable(
            StreamTimeoutError("idle", after=1.0, events=2, partial=False, elapsed=3.0)
        )
        assert is_retryable(ProviderStreamError("api_error: boom", error_type="api_error"))

    def test_permanent_kinds(self) -> None:
        assert not is_retryable(Cancelled())
        assert not is_retryable(ConfigError("bad"))
        assert not is_retryable(RateLimitEscalation(4, 5.0))
        assert not is_retryable(ProviderStreamError("x", error_type="invalid_request_error"))
        assert not is_retryable(ValueError("not ours"))

    def test_foreign_errors_are_judged_by_their_cause(self) -> None:
        outer = RuntimeError("wrapped")
        outer.__cause__ = ServerError("HTTP 500: x")
        assert is_retryable(outer)

    def test_escalation_message(self) -> None:
        assert (
            str(RateLimitEscalation(4, 5.0))
            == "rate-limit escalation after 4 retries (retry-after 5s)"
        )
        assert str(RateLimitEscalation(1)) == "rate-limit escalation after 1 retry"


def test_redact_removes_keys_and_caps_length() -> None:
    text = "key sk-ant-abcdefgh12345 and secret-value-123 " + "x" * 10_000
    out = redact(text, ("secret-value-123", "k"))
    assert "sk-ant-abcdefgh12345" not in out and "secret-value-123" not in out
    assert "key" in out  # a one-letter "secret" does not shred words
    assert len(out) < 8300


class TestCancelToken:
    def test_callbacks_fire_once_in_order(self) -> None:
        token = CancelToken()
        seen: list[int] = []
        token.on_cancel(lambda: seen.append(1))
        token.on_cancel(lambda: seen.append(2))
        token.cancel()
        token.cancel()
        assert seen == [1, 2] and token.cancelled

    @pytest.mark.parametrize("reason", [5, None, b"stop"])
    def test_a_reason_that_is_not_text_is_refused(self, reason: Any) -> None:
        # before: None fired nothing (the turn went on), and 5 was kept until the Cancelled
        # carrying it failed to print ('__str__ returned non-string')
        token = CancelToken()
        with pytest.raises(ConfigError, match=r"cancel\(reason=\.\.\.\) must be a str"):
            token.cancel(reason)
        assert not token.cancelled
        token.cancel("")  # any text, even empty, is a reason
        assert token.cancelled

    def test_registering_after_cancel_runs_at_once(self) -> None:
        token = CancelToken()
        token.cancel("stop")
        seen: list[str] = []
        token.on_cancel(lambda: seen.append("late"))
        assert seen == ["late"]
        with pytest.raises(Cancelled, match="stop"):
            token.raise_if_cancelled()

    def test_disposed_callback_does_not_fire(self) -> None:
        token = CancelToken()
        seen: list[int] = []
        registration = token.on_cancel(lambda: seen.append(1))
        registration.dispose()
        registration.dispose()
        token.cancel()
        assert seen == []

    def test_order_holds_when_the_first_is_removed_and_another_added(self) -> None:
        token = CancelToken()
        seen: list[str] = []
        first = token.on_cancel(lambda: seen.append("a"))
        token.on_cancel(lambda: seen.append("b"))
        first.dispose()
        token.on_cancel(lambda: seen.append("c"))  # registered after "b": called after it
        token.cancel()
        assert seen == ["b", "c"]

    def test_remove_callback_forgets_one_registration_of_an_equal_bound_method(self) -> None:
        class Holder:
            def __init__(self) -> None:
                self.calls = 0

            def fire(self) -> None:
                self.calls += 1

        holder = Holder()
        token = CancelToken()
        token.add_callback(holder.fire)
        token.add_callback(holder.fire)
        token.remove_callback(holder.fire)  # another bound method object, equal to both
        token.remove_callback(lambda: None)  # never registered: nothing happens
        token.cancel()
        assert holder.calls == 1

    def test_reset_forgets_the_callbacks(self) -> None:
        token = CancelToken()
        seen: list[int] = []
        token.add_callback(lambda: seen.append(1))
        token.add_callback(lambda: seen.append(2))
        token.reset()
        token.cancel()
        assert seen == []

    def test_reset_rearms(self) -> None:
        token = CancelToken()
        token.cancel()
        token.reset()
        assert not token.cancelled
        token.raise_if_cancelled()

    def test_as_observable_errors_with_cancelled(self) -> None:
        token = CancelToken()
        errors: list[Exception] = []
        token.as_observable().subscribe(on_error=errors.append)
        token.cancel()
        assert len(errors) == 1 and isinstance(errors[0], Cancelled)
