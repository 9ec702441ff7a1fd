"""Walk everything the SDK exported for a string (an API key, or text that must not be there).

An independent check beside ``rxturn.testing.assert_no_secret`` (which walks the SDK's objects
themselves; test_observer.py uses both): every span (name, attributes, events, status), every log
record (body, attributes) and every metric point's attributes is rendered to text and searched.
"""

from __future__ import annotations

from typing import Any


def _texts(telemetry: Any) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for span in telemetry.spans():
        where = f"span {span.name!r}"
        found.append((where + " name", span.name))
        found.append((where + " status", str(span.status.description)))
        for key, value in (span.attributes or {}).items():
            found.append((f"{where} attribute {key}", repr(value)))
        for event in span.events:
            found.append((f"{where} event {event.name}", repr(dict(event.attributes or {}))))
    for index, record in enumerate(telemetry.logs()):
        found.append((f"log record {index} body", repr(record.body)))
        for key, value in (record.attributes or {}).items():
            found.append((f"log record {index} attribute {key}", repr(value)))
    data = telemetry.metric_reader.get_metrics_data()
    if data is not None:
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        found.append((f"metric {metric.name}", repr(dict(point.attributes))))
    return found


def assert_secret_absent(telemetry: Any, secret: str) -> None:
    """Fail naming where ``secret`` was exported, if it was."""
    texts = _texts(telemetry)
    assert texts, "nothing was exported: the check would pass vacuously"
    for where, text in texts:
        assert secret not in text, f"{secret!r} exported in {where}"
