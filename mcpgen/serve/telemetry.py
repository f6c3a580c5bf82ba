"""OpenTelemetry traces and metrics for tool calls: an optional extra, `pip install 'mcpgen[otel]'`.

    telemetry.setup(config.telemetry)   # mcpgen.yaml's `telemetry:`; None leaves it off

Each call is a span `tools/call <tool>` and feeds four instruments: `mcpgen.tool.calls`,
`mcpgen.tool.errors` (counters), `mcpgen.tool.duration` (seconds) and `mcpgen.tool.rows`
(histograms), exported over OTLP/HTTP to `otlp_endpoint` (else the standard
OTEL_EXPORTER_OTLP_* variables). When it is off, the OpenTelemetry SDK is never imported
and a call pays for one `None` check.

>>> setup(None); span("top_cities").__enter__() is None
True
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from ..errors import MCPGenError
from ..version import __version__

_OFF = contextlib.nullcontext()


class TelemetrySetupError(MCPGenError):
    """Telemetry is configured but cannot start."""


class _Instruments:
    def __init__(self, tracer_provider, meter_provider):
        self.tracer_provider, self.meter_provider = tracer_provider, meter_provider
        self.tracer = tracer_provider.get_tracer("mcpgen", __version__)
        meter = meter_provider.get_meter("mcpgen", __version__)
        self.calls = meter.create_counter("mcpgen.tool.calls", unit="{call}", description="Tool calls")
        self.errors = meter.create_counter("mcpgen.tool.errors", unit="{call}", description="Tool calls that failed")
        self.duration = meter.create_histogram("mcpgen.tool.duration", unit="s", description="Tool call duration")
        self.rows = meter.create_histogram("mcpgen.tool.rows", unit="{row}", description="Rows a tool call returned")


_on: _Instruments | None = None


def setup(config, tracer_provider=None, meter_provider=None) -> None:
    """Start exporting per `config` (a `config.TelemetryConfig`); tests pass in-memory providers."""
    global _on
    shutdown()
    if config is None or not config.enabled:
        return
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        raise TelemetrySetupError(
            "telemetry: is configured but OpenTelemetry is not installed; pip install 'mcpgen[otel]'"
        ) from None
    resource = Resource.create({"service.name": config.service_name, "service.version": __version__})
    if tracer_provider is None or meter_provider is None:
        tracer_provider, meter_provider = _otlp_providers(config.otlp_endpoint, resource, TracerProvider, MeterProvider)
    _on = _Instruments(tracer_provider, meter_provider)


def _otlp_providers(endpoint: str | None, resource, TracerProvider, MeterProvider):
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise TelemetrySetupError("telemetry: the OTLP exporter is not installed; pip install 'mcpgen[otel]'") from None
    base = endpoint.rstrip("/") if endpoint else None
    spans = OTLPSpanExporter(endpoint=f"{base}/v1/traces") if base else OTLPSpanExporter()
    metrics = OTLPMetricExporter(endpoint=f"{base}/v1/metrics") if base else OTLPMetricExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans))
    meter_provider = MeterProvider(resource=resource, metric_readers=[PeriodicExportingMetricReader(metrics)])
    return tracer_provider, meter_provider


def shutdown() -> None:
    """Flush and stop the exporters (at server exit)."""
    global _on
    if _on is not None:
        for provider in (_on.tracer_provider, _on.meter_provider):
            with contextlib.suppress(AttributeError):  # providers without shutdown (no-op ones)
                provider.shutdown()
    _on = None


def traced() -> bool:
    """Whether any span can be recorded in this process: mcpgen's telemetry is on, or the program that
    embeds mcpgen set a global tracer provider. When neither, the SDK's span per message (its
    OpenTelemetryMiddleware) records nothing, and the server leaves it out.

    >>> setup(None); traced()
    False
    """
    from opentelemetry import trace  # the SDK's own dependency: always installed

    return _on is not None or not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def span(tool: str):
    """The span of one call: a context manager, a no-op when telemetry is off."""
    if _on is None:
        return _OFF
    return _on.tracer.start_as_current_span(
        f"tools/call {tool}", attributes={"mcp.method.name": "tools/call", "gen_ai.tool.name": tool}
    )


def record(span: Any, tool: str, stats) -> None:
    """Metrics and span attributes for a finished call (`stats`: a `logs.CallStats`)."""
    if _on is None:
        return
    attributes = {"tool": tool, "outcome": "error" if stats.error else "ok"}
    _on.calls.add(1, attributes)
    _on.duration.record(time.perf_counter() - stats.started, attributes)
    if stats.error:
        _on.errors.add(1, {"tool": tool, "error.type": stats.error})
        span.set_attribute("error.type", stats.error)
        from opentelemetry.trace import Status, StatusCode  # on only: the SDK is installed

        span.set_status(Status(StatusCode.ERROR, stats.error))
    if stats.rows is not None:
        _on.rows.record(stats.rows, {"tool": tool})
        span.set_attribute("mcpgen.rows", stats.rows)
