"""``OTelObserver``: a turn as OpenTelemetry spans, metrics and (optionally) content records.

An ordinary observer (pass it in ``observers=``). It builds, from the engine's callbacks:

- ``invoke_agent rxturn`` (INTERNAL) per ``engine.run``, current in the run's task while it
  runs (``on_run_start`` … ``on_run_end``);
- ``chat {request model}`` (CLIENT) per turn, from ``on_request`` to ``on_request_end``: every
  attempt, wait, rescue and failover of the turn happens inside it;
- ``rxturn.attempt`` per request of the turn, a child of its ``chat`` span, made current in the
  context the request is sent in (``on_attempt_start``'s ``context``), so an HTTP client
  instrumentation's span nests under it;
- ``execute_tool {name}`` per tool call, current while the tool runs.

Per-turn state lives in a dict keyed by the engine's ``turn_id`` (never in a global); per-run
state in a :class:`contextvars.ContextVar` of the observer (every run callback fires in the
run's own task). docs/observability.md lists every name and what it means.
"""

from __future__ import annotations

import contextvars
import sys
import time
from typing import Any, Final

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import Logger, LoggerProvider, get_logger_provider
from opentelemetry.metrics import Histogram, Meter, MeterProvider, NoOpMeter, get_meter_provider
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from .._arguments import check_bool, check_instance
from .._version import __version__
from ..engine.observation.observers import ALL_CALLBACKS, Observer
from ..engine.records.audit import AttemptRecord, Turn
from ..messages import Message, Request, RequestOptions, StopReason, ToolCallPart, ToolResultPart
from . import _names as n
from ._content import (
    CaptureMode,
    capture_mode,
    input_messages,
    output_messages,
    system_instructions,
    to_json,
    tool_result_text,
)
from ._state import (
    Attributes,
    RunSpans,
    TurnSpans,
    attach,
    cache_usage,
    error_type,
    outcome_error_type,
    server_address,
    set_usage,
    tool_error,
)

__all__ = ["OTelObserver", "error_type"]

_SCOPE: Final = "rxturn"
_RATE_LIMITED: Final = frozenset({"RateLimitError", "OverloadedError"})


def _seconds(meter: Meter, name: str, description: str) -> Histogram:
    """A histogram of durations in seconds, with the GenAI duration buckets."""
    return meter.create_histogram(
        name,
        unit="s",
        description=description,
        explicit_bucket_boundaries_advisory=n.DURATION_BUCKETS,
    )


class OTelObserver(Observer):
    """Reports turns as OpenTelemetry GenAI spans, metrics and content records.

    Args:
        tracer_provider: where spans go (default: the global tracer provider).
        meter_provider: where metrics go (default: the global meter provider).
        logger_provider: where the ``gen_ai.client.inference.operation.details`` records go
            (default: the global logger provider); only used when content goes to events.
        capture_content: ``NO_CONTENT`` | ``SPAN_ONLY`` | ``EVENT_ONLY`` | ``SPAN_AND_EVENT``
            (or ``True`` / ``False``); ``None`` reads
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (unset: ``NO_CONTENT``).
        count_offline: when a provider reports no usage, record the engine's offline token
            estimates in ``gen_ai.client.token.usage`` (marked ``rxturn.usage.source =
            "estimate"``). Off by default: no usage reported, no point.

    Raises:
        ConfigError: ``capture_content`` (or the variable) is not one of the modes, a provider
            is not an OpenTelemetry provider of its kind, or ``count_offline`` not a bool.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        capture_content: str | bool | None = None,
        count_offline: bool = False,
    ) -> None:
        for value, expected, name in (
            (tracer_provider, TracerProvider, "tracer_provider"),
            (meter_provider, MeterProvider, "meter_provider"),
            (logger_provider, LoggerProvider, "logger_provider"),
        ):
            what = f"an OpenTelemetry {expected.__name__}"
            check_instance(value, expected, f"OTelObserver({name}=...)", what, optional=True)
        check_bool(count_offline, "OTelObserver(count_offline=...)")
        self.capture: CaptureMode = capture_mode(capture_content)
        self.count_offline = count_offline
        self._content_on_span = self.capture in ("SPAN_ONLY", "SPAN_AND_EVENT")
        self._content_as_event = self.capture in ("EVENT_ONLY", "SPAN_AND_EVENT")
        self._tracer = trace.get_tracer(_SCOPE, __version__, tracer_provider)
        meters = meter_provider if meter_provider is not None else get_meter_provider()
        meter = meters.get_meter(_SCOPE, __version__)
        self._duration = _seconds(meter, n.METRIC_OPERATION_DURATION, "GenAI operation duration")
        self._tokens = meter.create_histogram(
            n.METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=n.TOKEN_BUCKETS,
        )
        self._first_chunk = _seconds(
            meter,
            n.METRIC_TIME_TO_FIRST_CHUNK,
            "Time to receive the first chunk of a streaming response",
        )
        self._attempt_counter = meter.create_counter(
            n.METRIC_ATTEMPTS,
            unit="{attempt}",
            description="Requests made to providers, by outcome",
        )
        self._rate_limit_wait = _seconds(
            meter, n.METRIC_RATE_LIMIT_WAIT, "Time waited before retrying a rate-limited request"
        )
        self._logger: Logger | None = None
        if self._content_as_event:
            logs = logger_provider if logger_provider is not None else get_logger_provider()
            self._logger = logs.get_logger(_SCOPE, __version__)
        self._turns: dict[int, TurnSpans] = {}
        self._run: contextvars.ContextVar[RunSpans | None] = contextvars.ContextVar(
            f"rxturn.otel.run.{id(self)}", default=None
        )
        self._turn: contextvars.ContextVar[int | None] = contextvars.ContextVar(
            f"rxturn.otel.turn.{id(self)}", default=None
        )
        self._counter: Any = None
        self.inert = (
            isinstance(self._tracer, trace.NoOpTracer)
            and isinstance(meter, NoOpMeter)
            and self._logger is None
        )
        if self.inert:
            # nothing can be recorded: look like a bare Observer, so the engine skips the calls
            for name in ALL_CALLBACKS:
                setattr(self, name, getattr(Observer, name).__get__(self))

    def __repr__(self) -> str:
        return f"OTelObserver(capture_content={self.capture!r}, open_turns={len(self._turns)})"

    @property
    def open_turns(self) -> int:
        """Turns whose ``chat`` span is still open (0 whenever no turn is running)."""
        return len(self._turns)

    # ----------------------------------------------------------------------------- the run

    def on_run_start(self, *, session_id: str) -> None:
        span = self._tracer.start_span(
            f"{n.OPERATION_INVOKE_AGENT} {n.AGENT_NAME}",
            kind=SpanKind.INTERNAL,
            attributes={
                n.GEN_AI_OPERATION_NAME: n.OPERATION_INVOKE_AGENT,
                n.GEN_AI_AGENT_NAME: n.AGENT_NAME,
                n.GEN_AI_CONVERSATION_ID: session_id,
            },
        )
        token = otel_context.attach(trace.set_span_in_context(span))
        state = RunSpans(span, token, self._run.set(None))
        self._run.set(state)

    def on_run_end(
        self, *, success: bool, error: str | None, total_turns: int, duration_ms: float
    ) -> None:
        state = self._run.get()
        if state is None:
            return
        failure: str | None = None
        if not success:
            raised = sys.exception()  # the run ends inside its ``except``: the run's error
            failure = error_type(raised) if raised is not None else state.last_error or "_OTHER"
        # a span processor may raise from ``end()``: the run's context is restored whatever
        # happens, or its span would stay current and parent the task's next run
        try:
            raised_ending: Exception | None = None
            for call_id in list(state.tools):
                try:
                    self._end_tool(state, call_id, failure or n.CANCELLED, None)
                except Exception as exc:  # the other tools' spans end all the same
                    raised_ending = raised_ending or exc
            span = state.span
            if failure is not None:
                span.set_attribute(n.ERROR_TYPE, failure)
                span.set_status(Status(StatusCode.ERROR, failure))
            span.end()
            if raised_ending is not None:
                raise raised_ending
        finally:
            try:
                otel_context.detach(state.token)  # pyright: ignore[reportArgumentType]
            finally:
                self._run.reset(state.previous)

    # ----------------------------------------------------------------------------- the turn

    def on_request(
        self,
        *,
        turn: int,
        turn_id: int,
        model: str,
        request: Request,
        options: RequestOptions,
        provider: str,
        base_url: str,
        stream: bool,
        estimated_input_tokens: int,
    ) -> None:
        address, port = server_address(base_url)
        metric_attributes: Attributes = {
            n.GEN_AI_OPERATION_NAME: n.OPERATION_CHAT,
            n.GEN_AI_PROVIDER_NAME: provider,
            n.GEN_AI_REQUEST_MODEL: model,
            n.SERVER_ADDRESS: address,
        }
        if port is not None:
            metric_attributes[n.SERVER_PORT] = port
        attributes = dict(metric_attributes)
        attributes[n.GEN_AI_REQUEST_STREAM] = stream
        if options.max_tokens is not None:
            attributes[n.GEN_AI_REQUEST_MAX_TOKENS] = options.max_tokens
        if options.temperature is not None:
            attributes[n.GEN_AI_REQUEST_TEMPERATURE] = options.temperature
        if options.stop_sequences:
            attributes[n.GEN_AI_REQUEST_STOP_SEQUENCES] = list(options.stop_sequences)
        if options.response_format is not None:
            attributes[n.GEN_AI_OUTPUT_TYPE] = "json"
        run = self._run.get()
        if run is not None:
            run.span.set_attribute(n.GEN_AI_PROVIDER_NAME, provider)
        chat = self._tracer.start_span(
            f"{n.OPERATION_CHAT} {model}", kind=SpanKind.CLIENT, attributes=attributes
        )
        state = TurnSpans(
            chat,
            metric_attributes,
            provider=provider,
            request_model=model,
            stream=stream,
            estimated_input=estimated_input_tokens,
        )
        if self.capture != "NO_CONTENT":
            state.input_json = to_json(input_messages(request.messages))
            system = system_instructions(request.system)
            state.system_json = to_json(system) if system is not None else None
            if self._content_on_span:
                chat.set_attribute(n.GEN_AI_INPUT_MESSAGES, state.input_json)
                if state.system_json is not None:
                    chat.set_attribute(n.GEN_AI_SYSTEM_INSTRUCTIONS, state.system_json)
        self._turns[turn_id] = state
        self._turn.set(turn_id)

    def on_attempt_start(
        self,
        *,
        turn: int,
        turn_id: int,
        attempt: int,
        kind: str,
        model: str,
        wait: float,
        after: str | None,
        context: contextvars.Context,
    ) -> None:
        state = self._turns.get(turn_id)
        if state is None:
            return
        if state.last_model is not None and model != state.last_model and model not in state.raced:
            state.chat.add_event(
                n.EVENT_FAILOVER,
                {
                    n.RXTURN_FROM_MODEL: state.last_model,
                    n.RXTURN_TO_MODEL: model,
                    n.RXTURN_ATTEMPT_NUMBER: attempt,
                },
            )
        state.last_model = model
        attributes: Attributes = {
            n.RXTURN_ATTEMPT_NUMBER: attempt,
            n.RXTURN_ATTEMPT_KIND: kind,
            n.GEN_AI_REQUEST_MODEL: model,
            n.RXTURN_ATTEMPT_WAIT: wait,
        }
        if after is not None:
            attributes[n.RXTURN_ATTEMPT_AFTER] = outcome_error_type(after)
        span = self._tracer.start_span(
            n.SPAN_ATTEMPT,
            context=state.chat_context,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        state.attempts[attempt] = span
        # the request is sent in ``context``: make the attempt span current there
        context.run(attach, span)
        if after in _RATE_LIMITED and wait > 0:
            self._rate_limit_wait.record(
                wait,
                {
                    n.GEN_AI_PROVIDER_NAME: state.provider,
                    n.GEN_AI_REQUEST_MODEL: model,
                    n.RXTURN_ATTEMPT_AFTER: after,
                },
            )

    def on_attempt_end(
        self,
        *,
        turn: int,
        turn_id: int,
        attempt: int,
        record: AttemptRecord,
        error: BaseException | None,
    ) -> None:
        state = self._turns.get(turn_id)
        if state is None:
            return
        span = state.attempts.pop(attempt, None)
        self._attempt_counter.add(
            1,
            {
                n.RXTURN_ATTEMPT_OUTCOME: outcome_error_type(record.outcome),
                n.RXTURN_ATTEMPT_KIND: record.kind,
                n.GEN_AI_PROVIDER_NAME: state.provider,
                n.GEN_AI_REQUEST_MODEL: record.model,
            },
        )
        if span is None:
            return
        if not span.is_recording():
            span.end()
            return
        outcome = outcome_error_type(record.outcome)
        span.set_attribute(n.RXTURN_ATTEMPT_OUTCOME, outcome)
        status_code = getattr(error, "status_code", None)
        if isinstance(status_code, int):
            span.set_attribute(n.HTTP_RESPONSE_STATUS_CODE, status_code)
        usage = record.usage
        if usage is not None:
            counts: Attributes = {
                n.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
                n.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
            }
            cache_usage(counts, usage)
            span.set_attributes(counts)
        if record.cost is not None:
            span.set_attribute(n.RXTURN_COST_USD, float(record.cost))
        if outcome not in ("served", n.HEDGE_LOST):  # a race's loser was slow, not failed
            span.set_attribute(n.ERROR_TYPE, outcome)
            span.set_status(Status(StatusCode.ERROR, outcome))
        span.end()

    def on_hedge(
        self,
        *,
        turn: int,
        turn_id: int,
        model: str,
        hedge_model: str,
        reason: str,
        after: float,
    ) -> None:
        state = self._turns.get(turn_id)
        if state is not None:
            state.hedges += 1
            state.raced = state.raced | {model, hedge_model}

    def on_hedge_won(
        self, *, turn: int, turn_id: int, model: str, hedge_model: str, after: float
    ) -> None:
        state = self._turns.get(turn_id)
        if state is not None:
            state.hedge_won = True

    def on_first_chunk(self, *, turn: int, turn_id: int) -> None:
        state = self._turns.get(turn_id)
        if state is not None and state.first_chunk is None:
            state.first_chunk = time.monotonic() - state.started

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        turn_id = self._turn.get()
        state = self._turns.get(turn_id) if turn_id is not None else None
        if state is not None:
            state.chat.add_event(
                n.EVENT_BREAKER_SWITCH,
                {n.RXTURN_FROM_MODEL: from_model, n.RXTURN_TO_MODEL: to_model},
            )

    def on_request_end(
        self,
        *,
        turn: int,
        turn_id: int,
        record: Turn,
        message: Message | None,
        error: BaseException | None,
    ) -> None:
        state = self._turns.pop(turn_id, None)
        if self._turn.get() == turn_id:
            self._turn.set(None)
        if state is None:
            return
        failure = error_type(error) if error is not None else None
        run = self._run.get()
        if run is not None and failure is not None:
            run.last_error = failure
        for attempt in sorted(state.attempts):  # let go with the turn (should not happen)
            span = state.attempts.pop(attempt)
            span.set_attribute(n.ERROR_TYPE, failure or n.CANCELLED)
            span.set_status(Status(StatusCode.ERROR, failure or n.CANCELLED))
            span.end()
        chat = state.chat
        duration = time.monotonic() - state.started
        attributes = state.metric_attributes
        recording = chat.is_recording()
        if recording:
            chat.set_attribute(n.RXTURN_ATTEMPTS, len(record.attempt_log))
            chat.set_attribute(n.RXTURN_RESCUED, record.rescued)
            if state.hedges:
                chat.set_attribute(n.RXTURN_HEDGES, state.hedges)
                chat.set_attribute(n.RXTURN_HEDGE_WON, state.hedge_won)
            set_usage(
                chat,
                n.RXTURN_DISCARDED_INPUT_TOKENS,
                n.RXTURN_DISCARDED_OUTPUT_TOKENS,
                record.discarded_usage,
            )
            set_usage(
                chat,
                n.RXTURN_BILLED_INPUT_TOKENS,
                n.RXTURN_BILLED_OUTPUT_TOKENS,
                record.billed_usage,
            )
            if state.first_chunk is not None:
                chat.set_attribute(n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, state.first_chunk)
            if record.cost is not None:  # every attempt's, as billed_usage
                chat.set_attribute(n.RXTURN_COST_USD, float(record.cost.total))
                chat.set_attribute(n.RXTURN_COST_UNPRICED, record.cost.unpriced_attempts)
        output_json: str | None = None
        response: Attributes = {}
        if message is not None and failure is None:
            served = message.model or record.model
            attributes = {**attributes, n.GEN_AI_RESPONSE_MODEL: served}
            if message.id:
                response[n.GEN_AI_RESPONSE_ID] = message.id
            finish = str(record.stop_reason or StopReason.END_TURN)
            response[n.GEN_AI_RESPONSE_FINISH_REASONS] = [finish]
            usage = message.usage
            if usage is not None:
                response[n.GEN_AI_USAGE_INPUT_TOKENS] = usage.input_tokens
                response[n.GEN_AI_USAGE_OUTPUT_TOKENS] = usage.output_tokens
                cache_usage(response, usage)
            if recording:
                chat.set_attribute(n.GEN_AI_RESPONSE_MODEL, served)
                chat.set_attributes(response)
            if self.capture != "NO_CONTENT":
                output_json = to_json(output_messages(message, finish))
                if self._content_on_span:
                    chat.set_attribute(n.GEN_AI_OUTPUT_MESSAGES, output_json)
        else:
            failure = failure or "_OTHER"
            attributes = {**attributes, n.ERROR_TYPE: failure}
            chat.set_attribute(n.ERROR_TYPE, failure)
            chat.set_status(Status(StatusCode.ERROR, failure))
        try:
            if self._logger is not None:
                self._emit_details(state, {**attributes, **response}, output_json)
        finally:
            try:
                chat.end()
            finally:  # the turn's points, even when an exporter raised ending the span
                self._duration.record(duration, attributes)
                if state.stream and state.first_chunk is not None:
                    self._first_chunk.record(state.first_chunk, attributes)
                self._record_tokens(state, record, message, attributes)

    def _record_tokens(
        self, state: TurnSpans, record: Turn, message: Message | None, attributes: Attributes
    ) -> None:
        billed = record.billed_usage
        if billed is not None:
            self._tokens.record(billed.input_tokens, {**attributes, n.GEN_AI_TOKEN_TYPE: "input"})
            self._tokens.record(billed.output_tokens, {**attributes, n.GEN_AI_TOKEN_TYPE: "output"})
            return
        if not self.count_offline:
            return
        estimated = {**attributes, n.RXTURN_USAGE_SOURCE: "estimate"}
        self._tokens.record(state.estimated_input, {**estimated, n.GEN_AI_TOKEN_TYPE: "input"})
        if message is not None:
            output = _count_output(self, message)
            self._tokens.record(output, {**estimated, n.GEN_AI_TOKEN_TYPE: "output"})

    def _emit_details(
        self, state: TurnSpans, attributes: Attributes, output_json: str | None
    ) -> None:
        """The turn's ``gen_ai.client.inference.operation.details`` record, in its span.

        The content goes in structured form, as the conventions require of events (a span
        carries it as JSON text): the same JSON, decoded.
        """
        assert self._logger is not None
        details = dict(attributes)
        for name, text in (
            (n.GEN_AI_INPUT_MESSAGES, state.input_json),
            (n.GEN_AI_SYSTEM_INSTRUCTIONS, state.system_json),
            (n.GEN_AI_OUTPUT_MESSAGES, output_json),
        ):
            if text is not None:
                details[name] = msgspec.json.decode(text)
        self._logger.emit(
            event_name=n.EVENT_INFERENCE_DETAILS,
            attributes=details,
            context=state.chat_context,
        )

    # ----------------------------------------------------------------------------- tools

    def on_tool_call(self, *, turn: int, call: ToolCallPart) -> None:
        run = self._run.get()
        if run is None:
            return
        attributes: Attributes = {
            n.GEN_AI_OPERATION_NAME: n.OPERATION_EXECUTE_TOOL,
            n.GEN_AI_TOOL_NAME: call.name,
            n.GEN_AI_TOOL_CALL_ID: call.id,
            n.GEN_AI_TOOL_TYPE: "function",
        }
        if self._content_on_span:
            attributes[n.GEN_AI_TOOL_CALL_ARGUMENTS] = to_json([call.input])[1:-1]
        span = self._tracer.start_span(
            f"{n.OPERATION_EXECUTE_TOOL} {call.name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        # current while the tool runs: the tool's task starts after this callback
        token = otel_context.attach(trace.set_span_in_context(span))
        previous = run.tools.pop(call.id, None)
        if previous is not None:  # a repeated call id: close the older span
            previous[0].end()
        run.tools[call.id] = (span, token)

    def on_tool_result(self, *, turn: int, result: ToolResultPart) -> None:
        run = self._run.get()
        if run is None or result.tool_call_id not in run.tools:
            return
        failure = tool_error(result) if result.is_error else None
        self._end_tool(run, result.tool_call_id, failure, result)

    def _end_tool(
        self, run: RunSpans, call_id: str, failure: str | None, result: ToolResultPart | None
    ) -> None:
        span, token = run.tools.pop(call_id)
        try:
            if result is not None and self._content_on_span:
                span.set_attribute(n.GEN_AI_TOOL_CALL_RESULT, tool_result_text(result))
            if failure is not None:
                span.set_attribute(n.ERROR_TYPE, failure)
                span.set_status(Status(StatusCode.ERROR, failure))
            span.end()
        finally:
            if result is not None:  # the normal order: detach what on_tool_call attached
                otel_context.detach(token)  # pyright: ignore[reportArgumentType]


def _count_output(observer: OTelObserver, message: Message) -> int:
    counter = observer._counter  # pyright: ignore[reportPrivateUsage]
    if counter is None:
        from ..engine.context.tokens import TiktokenCounter

        counter = observer._counter = TiktokenCounter()  # pyright: ignore[reportPrivateUsage]
    return int(counter.count_messages([message]))
