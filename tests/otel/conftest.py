"""In-memory OpenTelemetry SDK pipelines for the observer's tests (spans, metrics, log records).

Every test gets its own providers (never the global ones), so tests cannot see each other's data.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the test extra installs the OpenTelemetry SDK")

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanContext

from rxturn.otel import OTelObserver


def context_of(span: ReadableSpan) -> SpanContext:
    """A finished span's context (the SDK types it optional; a recorded span always has one)."""
    assert span.context is not None, span.name
    return span.context


class Telemetry:
    """One test's pipelines and what they collected."""

    def __init__(self) -> None:
        self.span_exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
        self.metric_reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metric_reader])
        self.log_exporter = InMemoryLogRecordExporter()
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    def observer(self, **kwargs: Any) -> OTelObserver:
        return OTelObserver(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            logger_provider=self.logger_provider,
            **kwargs,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.span_exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        parent_id = context_of(parent).span_id
        return sorted(
            (s for s in self.spans() if s.parent is not None and s.parent.span_id == parent_id),
            key=lambda s: s.start_time or 0,
        )

    def logs(self) -> list[Any]:
        return [data.log_record for data in self.log_exporter.get_finished_logs()]

    def points(self, metric: str) -> list[Any]:
        data = self.metric_reader.get_metrics_data()
        found: list[Any] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == metric:
                        found.extend(item.data.data_points)
        return found

    def metric(self, name: str) -> Any:
        data = self.metric_reader.get_metrics_data()
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name == name:
                        return item
        raise AssertionError(f"no metric {name}")


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    collected = Telemetry()
    yield collected
    collected.tracer_provider.shutdown()
    collected.meter_provider.shutdown()
    collected.logger_provider.shutdown()
