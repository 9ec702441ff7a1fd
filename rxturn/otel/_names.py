"""The attribute, span, metric and event names rxturn's telemetry uses, as its own constants.

The ``gen_ai.*``, ``server.*``, ``http.*`` and ``error.*`` names are the OpenTelemetry semantic
conventions' (the GenAI ones are kept in the ``semantic-conventions-genai`` repository; the
Python ``opentelemetry-semantic-conventions`` package keeps them in a private, "incubating"
module, so rxturn does not import them from there — a test compares the two when the package is
installed). The ``rxturn.*`` names are rxturn's own: what the conventions have no name for
(attempts, waits, rescue, discarded usage). docs/observability.md explains each one.
"""

from __future__ import annotations

from typing import Final

# --- GenAI conventions: attributes ------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_REQUEST_STREAM: Final = "gen_ai.request.stream"
GEN_AI_REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
GEN_AI_REQUEST_TEMPERATURE: Final = "gen_ai.request.temperature"
GEN_AI_REQUEST_STOP_SEQUENCES: Final = "gen_ai.request.stop_sequences"
GEN_AI_OUTPUT_TYPE: Final = "gen_ai.output.type"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"

#: Every GenAI attribute name above (the test compares them with the conventions' package).
GEN_AI_ATTRIBUTES: Final[tuple[str, ...]] = (
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROVIDER_NAME,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_REQUEST_STREAM,
    GEN_AI_REQUEST_MAX_TOKENS,
    GEN_AI_REQUEST_TEMPERATURE,
    GEN_AI_REQUEST_STOP_SEQUENCES,
    GEN_AI_OUTPUT_TYPE,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_RESPONSE_ID,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
    GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    GEN_AI_TOKEN_TYPE,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_TYPE,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_RESULT,
)

# --- general conventions ----------------------------------------------------------------------
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"

# --- values -----------------------------------------------------------------------------------
OPERATION_CHAT: Final = "chat"
OPERATION_INVOKE_AGENT: Final = "invoke_agent"
OPERATION_EXECUTE_TOOL: Final = "execute_tool"
TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"
#: ``error.type`` of a cancelled turn, attempt or tool call.
CANCELLED: Final = "cancelled"

# --- GenAI conventions: metrics, events -------------------------------------------------------
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"
EVENT_INFERENCE_DETAILS: Final = "gen_ai.client.inference.operation.details"

#: The conventions' advised bucket boundaries for ``gen_ai.client.operation.duration`` (and
#: the other durations, in seconds).
DURATION_BUCKETS: Final[tuple[float, ...]] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
#: The conventions' advised bucket boundaries for ``gen_ai.client.token.usage``.
TOKEN_BUCKETS: Final[tuple[int, ...]] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip

# --- rxturn's own -----------------------------------------------------------------------------
SPAN_ATTEMPT: Final = "rxturn.attempt"
AGENT_NAME: Final = "rxturn"
RXTURN_ATTEMPT_NUMBER: Final = "rxturn.attempt.number"
RXTURN_ATTEMPT_KIND: Final = "rxturn.attempt.kind"
RXTURN_ATTEMPT_OUTCOME: Final = "rxturn.attempt.outcome"
RXTURN_ATTEMPT_WAIT: Final = "rxturn.attempt.wait"
RXTURN_ATTEMPT_AFTER: Final = "rxturn.attempt.after"
RXTURN_ATTEMPTS: Final = "rxturn.attempts"
RXTURN_RESCUED: Final = "rxturn.rescued"
#: hedges a hedged first token sent in the turn, and whether one of them won the race
RXTURN_HEDGES: Final = "rxturn.hedges"
RXTURN_HEDGE_WON: Final = "rxturn.hedge.won"
#: an attempt's outcome when another racer of a hedged first token beat it (not an error)
HEDGE_LOST: Final = "hedge_lost"
RXTURN_DISCARDED_INPUT_TOKENS: Final = "rxturn.usage.discarded.input_tokens"
RXTURN_DISCARDED_OUTPUT_TOKENS: Final = "rxturn.usage.discarded.output_tokens"
RXTURN_BILLED_INPUT_TOKENS: Final = "rxturn.usage.billed.input_tokens"
RXTURN_BILLED_OUTPUT_TOKENS: Final = "rxturn.usage.billed.output_tokens"
RXTURN_USAGE_SOURCE: Final = "rxturn.usage.source"
#: what the turn (on an attempt span: the attempt) cost in USD, with the rxturn[cost] extra
RXTURN_COST_USD: Final = "rxturn.cost.usd"
RXTURN_COST_UNPRICED: Final = "rxturn.cost.unpriced_attempts"
RXTURN_FROM_MODEL: Final = "rxturn.from_model"
RXTURN_TO_MODEL: Final = "rxturn.to_model"
EVENT_FAILOVER: Final = "rxturn.failover"
EVENT_BREAKER_SWITCH: Final = "rxturn.breaker.switch"
METRIC_ATTEMPTS: Final = "rxturn.attempts"
METRIC_RATE_LIMIT_WAIT: Final = "rxturn.rate_limit.wait"
