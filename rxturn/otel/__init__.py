"""OpenTelemetry for rxturn: turns as GenAI spans and metrics (optional extra ``rxturn[otel]``).

:class:`OTelObserver` is an ordinary observer::

    from rxturn.otel import OTelObserver
    engine = TurnEngine(client, observers=[OTelObserver()])

It needs only ``opentelemetry-api`` (``pip install 'rxturn[otel]'``); spans, metrics and log
records go wherever the application's OpenTelemetry SDK sends them. ``import rxturn`` never
imports OpenTelemetry; this package does. docs/observability.md describes every span, attribute
and metric, the ``error.type`` values, and content capture.
"""

from __future__ import annotations

try:
    import opentelemetry.trace  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "rxturn.otel needs the OpenTelemetry API, which is not installed: "
        "pip install 'rxturn[otel]'"
    ) from exc

from . import _names as names
from ._content import CAPTURE_ENV, CaptureMode, capture_mode
from ._observer import OTelObserver, error_type

__all__ = ["CAPTURE_ENV", "CaptureMode", "OTelObserver", "capture_mode", "error_type", "names"]
