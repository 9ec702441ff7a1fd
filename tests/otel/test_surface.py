"""The extra's surface: imports, names against the conventions' package, configuration, the
non-streaming path, and the aiohttp client instrumentation nesting under the attempt span."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry.trace import SpanKind

from rxturn import AnthropicClient, TurnEngine
from rxturn.errors import ConfigError
from rxturn.otel import OTelObserver, capture_mode, error_type, names
from rxturn.testing import FakeProvider

from .conftest import Telemetry, context_of


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_import_rxturn_loads_no_opentelemetry() -> None:
    out = run_python(
        """
        import sys
        import rxturn
        from rxturn import TurnEngine, Observer
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
        print(loaded)
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_without_the_extra_the_import_says_how_to_install_it() -> None:
    out = run_python(
        """
        import sys

        class NoOpenTelemetry:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    raise ModuleNotFoundError(f"No module named {name!r}")
                return None

        sys.meta_path.insert(0, NoOpenTelemetry())
        import rxturn
        try:
            import rxturn.otel
        except ImportError as exc:
            print(type(exc).__name__, exc)
        else:
            print("imported")
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ImportError ")
    assert "pip install 'rxturn[otel]'" in out.stdout


def test_genai_names_match_the_conventions_package() -> None:
    semconv = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    published = {
        value
        for key, value in vars(semconv).items()
        if key.startswith("GEN_AI_") and isinstance(value, str)
    }
    missing = [name for name in names.GEN_AI_ATTRIBUTES if name not in published]
    assert missing == []
    metrics = pytest.importorskip("opentelemetry.semconv._incubating.metrics.gen_ai_metrics")
    assert names.METRIC_OPERATION_DURATION == metrics.GEN_AI_CLIENT_OPERATION_DURATION
    assert names.METRIC_TOKEN_USAGE == metrics.GEN_AI_CLIENT_TOKEN_USAGE
    assert names.METRIC_TIME_TO_FIRST_CHUNK == metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK
    from opentelemetry.semconv.attributes import (
        error_attributes,
        http_attributes,
        server_attributes,
    )

    assert names.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert names.HTTP_RESPONSE_STATUS_CODE == http_attributes.HTTP_RESPONSE_STATUS_CODE
    assert names.SERVER_ADDRESS == server_attributes.SERVER_ADDRESS
    assert names.SERVER_PORT == server_attributes.SERVER_PORT
    values = semconv.GenAiOperationNameValues
    assert values.CHAT.value == names.OPERATION_CHAT
    assert values.INVOKE_AGENT.value == names.OPERATION_INVOKE_AGENT
    assert values.EXECUTE_TOOL.value == names.OPERATION_EXECUTE_TOOL
    assert {names.TOKEN_TYPE_INPUT, names.TOKEN_TYPE_OUTPUT} == {
        semconv.GenAiTokenTypeValues.INPUT.value,
        semconv.GenAiTokenTypeValues.OUTPUT.value,
    }


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        (None, "NO_CONTENT"),
        ("", "NO_CONTENT"),
        ("span_only", "SPAN_ONLY"),
        (" EVENT_ONLY ", "EVENT_ONLY"),
        ("SPAN_AND_EVENT", "SPAN_AND_EVENT"),
        (True, "SPAN_AND_EVENT"),
        (False, "NO_CONTENT"),
    ],
)
def test_capture_modes(value: Any, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    assert capture_mode(value) == mode


def test_a_bad_capture_mode_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="capture_content must be one of"):
        OTelObserver(capture_content="everything")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "yes please")
    with pytest.raises(ConfigError, match="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"):
        OTelObserver()


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        (
            {"tracer_provider": "tracer"},
            "OTelObserver(tracer_provider=...) must be an OpenTelemetry",
        ),
        ({"meter_provider": 3}, "OTelObserver(meter_provider=...) must be an OpenTelemetry"),
        ({"logger_provider": object()}, "OTelObserver(logger_provider=...) must be an"),
        ({"count_offline": "no"}, "OTelObserver(count_offline=...) must be True or False"),
        ({"count_offline": None}, "OTelObserver(count_offline=...) must be True or False"),
    ],
    ids=["tracer", "meter", "logger", "count-offline-str", "count-offline-none"],
)
def test_wrong_argument_types_are_config_errors_naming_the_argument(
    kwargs: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        OTelObserver(**kwargs)
    assert str(raised.value).startswith(named)


def test_the_sdk_and_no_op_providers_are_accepted(telemetry: Telemetry) -> None:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    assert not telemetry.observer(count_offline=True).inert
    assert OTelObserver(NoOpTracerProvider(), NoOpMeterProvider()).inert


def test_error_types() -> None:
    import asyncio

    from rxturn.errors import Cancelled, RateLimitEscalation

    assert error_type(Cancelled()) == "cancelled"
    assert error_type(asyncio.CancelledError()) == "cancelled"
    assert error_type(RateLimitEscalation(4)) == "RateLimitEscalation"
    assert error_type(KeyError("x")) == "KeyError"
    assert error_type(asyncio.InvalidStateError()) == "asyncio.exceptions.InvalidStateError"


async def test_the_non_streaming_path_has_one_create_attempt(telemetry: Telemetry) -> None:
    observer = telemetry.observer()
    script = {
        "models": {"*": [{"text": "whole", "usage": {"input_tokens": 2, "output_tokens": 1}}]}
    }
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("primary", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer], mode="non_streaming")
        await engine.run("hi")
    (chat,) = telemetry.named("chat ")
    assert dict(chat.attributes or {})["gen_ai.request.stream"] is False
    (attempt,) = telemetry.children(chat)
    assert dict(attempt.attributes or {})["rxturn.attempt.kind"] == "create"
    assert telemetry.points("gen_ai.client.operation.time_to_first_chunk") == []


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
async def test_the_http_client_span_nests_under_the_attempt_span(
    telemetry: Telemetry, mode: Any
) -> None:
    instrumentation = pytest.importorskip("opentelemetry.instrumentation.aiohttp_client")
    from rxturn import StreamHandler

    # streaming: a 503 then a reply (two attempts); non-streaming: one create
    entries: list[dict[str, Any]] = [{"text": "ok"}]
    if mode == "streaming":
        entries.insert(0, {"status": 503, "retry_after": 0.01})
    instrumentor = instrumentation.AioHttpClientInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        observer = telemetry.observer()
        async with (
            FakeProvider({"models": {"*": entries}}) as fake,
            AnthropicClient("primary", api_key="k", base_url=fake.base_url) as client,
        ):
            engine = TurnEngine(
                client, observers=[observer], handler=StreamHandler.default(), mode=mode
            )
            await engine.run("hi")
    finally:
        instrumentor.uninstrument()
    http = [s for s in telemetry.spans() if s.kind is SpanKind.CLIENT and s.name.startswith("POST")]
    attempts = [s for s in telemetry.spans() if s.name == "rxturn.attempt"]
    assert len(attempts) == len(entries)
    # exactly one HTTP span under each attempt span
    assert sorted(s.parent.span_id for s in http if s.parent) == sorted(
        context_of(s).span_id for s in attempts
    )


def test_on_no_op_providers_the_observer_is_inert() -> None:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    from rxturn.engine.observation.observers import ALL_CALLBACKS, ObserverSet

    inert = OTelObserver(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
    assert inert.inert
    observers = ObserverSet([inert])
    assert [name for name in ALL_CALLBACKS if observers.interested(name)] == []


def test_with_a_recording_tracer_the_observer_listens(telemetry: Telemetry) -> None:
    from rxturn.engine.observation.observers import ObserverSet

    observer = telemetry.observer()
    assert not observer.inert
    observers = ObserverSet([observer])
    assert all(
        observers.interested(name)
        for name in ("on_request", "on_attempt_start", "on_attempt_end", "on_request_end")
    )


def test_the_constructor_is_the_documented_one() -> None:
    import inspect

    parameters = inspect.signature(OTelObserver).parameters.values()
    assert [(p.name, p.default) for p in parameters] == [
        ("tracer_provider", None),
        ("meter_provider", None),
        ("logger_provider", None),
        ("capture_content", None),
        ("count_offline", False),
    ]
