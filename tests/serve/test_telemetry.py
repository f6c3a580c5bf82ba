"""OpenTelemetry: a span and metrics per call, exported over OTLP, and nothing of the SDK imported when off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from callers import as_token, write_project
from mcp.server.auth.middleware.auth_context import auth_context_var

from mcpgen.serve import telemetry
from mcpgen.spec.config import TelemetryConfig


def test_telemetry_spans_and_metrics(orders_project):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.setup(TelemetryConfig(), tracer_provider, MeterProvider(metric_readers=[reader]))
    token = as_token([], {"email": "alice@example.com"})
    try:
        anyio.run(orders_project.registry.call, "my_orders", {})
        anyio.run(orders_project.registry.call, "my_orders", {"min_amount": "x"})
        metrics = {
            m.name: m
            for rm in reader.get_metrics_data().resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
        }
    finally:
        telemetry.setup(None)
        auth_context_var.reset(token)
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == ["tools/call my_orders"] * 2
    assert finished[0].attributes["mcpgen.rows"] == 2
    assert finished[1].attributes["error.type"] == "ArgumentError"
    assert sum(p.value for p in metrics["mcpgen.tool.calls"].data.data_points) == 2
    assert sum(p.value for p in metrics["mcpgen.tool.errors"].data.data_points) == 1
    assert sum(p.count for p in metrics["mcpgen.tool.duration"].data.data_points) == 2
    assert sum(p.sum for p in metrics["mcpgen.tool.rows"].data.data_points) == 2


def test_telemetry_exports_over_otlp(orders_project):
    """A loopback HTTP receiver stands in for the collector: spans and metrics arrive as OTLP protobuf."""
    import http.server
    import threading

    received: list[tuple[str, str]] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["content-length"]))
            received.append((self.path, self.headers["content-type"]))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    collector = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
        telemetry.setup(TelemetryConfig(otlp_endpoint=endpoint))
        anyio.run(orders_project.registry.call, "revenue", {})
        telemetry.shutdown()  # flushes both exporters
    finally:
        telemetry.setup(None)
        collector.shutdown()
    assert ("/v1/traces", "application/x-protobuf") in received
    assert ("/v1/metrics", "application/x-protobuf") in received


@pytest.mark.slow  # a fresh interpreter
def test_nothing_of_opentelemetry_sdk_is_imported_when_off(tmp_path):
    write_project(tmp_path)
    code = (
        "import sys; from mcpgen.serve.project import open_project; from mcpgen import identity;"
        f"p = open_project({str(tmp_path / 'specs')!r}); u = identity.local_user({{'email': 'bob@example.com'}});"
        "u.__enter__(); p.registry.call_sync('my_orders', {}); p.close();"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk') or m.startswith('opentelemetry.exporter')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]
    )
    assert out.stdout.strip() == "[]", out.stderr
