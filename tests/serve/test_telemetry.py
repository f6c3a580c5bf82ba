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


TRACE_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def _spans_of_calls(project, metas: list[dict | None]):
    """Call `revenue` once per `_meta` through the official client in process; the finished spans."""
    from mcp import Client
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mcpgen import identity
    from mcpgen.serve.server import ToolServer

    spans, tracer_provider = InMemorySpanExporter(), TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry.setup(TelemetryConfig(), tracer_provider, MeterProvider())
    answers = []

    async def main():
        async with Client(ToolServer(project.registry).server) as client:
            for meta in metas:
                answers.append(await client.call_tool("my_orders", {}, meta=meta))

    try:
        with identity.local_user({"email": "alice@example.com"}):
            anyio.run(main)
    finally:
        telemetry.setup(None)
    assert not any(a.is_error for a in answers)
    return spans.get_finished_spans()


def test_a_w3c_traceparent_in_meta_makes_the_call_span_a_child_of_the_callers_span(orders_project):
    traced, untraced, malformed = _spans_of_calls(
        orders_project, [{"traceparent": TRACEPARENT, "tracestate": "vendor=1"}, None, {"traceparent": "00-zz-01"}]
    )
    assert format(traced.context.trace_id, "032x") == TRACE_ID
    assert format(traced.parent.span_id, "016x") == PARENT_ID and traced.parent.is_remote
    assert traced.context.trace_state.get("vendor") == "1"
    for root in (untraced, malformed):  # no (valid) traceparent: a trace of its own
        assert root.parent is None and format(root.context.trace_id, "032x") != TRACE_ID


@pytest.mark.slow  # a real `mcpgen serve --http` exporting to a loopback collector
def test_traceparent_over_http_reaches_the_exported_span(tmp_path):
    import http.server
    import threading

    import httpx2
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from servers import JSON_HEADERS, free_port, start, stop, wait_healthy

    exported: list = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["content-length"]))
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest.FromString(body)
                exported.extend(s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    collector = http.server.HTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    specs = write_project(tmp_path)
    config = tmp_path / "mcpgen.yaml"
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    config.write_text(config.read_text() + f"telemetry:\n  otlp_endpoint: {endpoint}\n")
    (specs / "order_count.yaml").write_text(
        "description: How many orders.\nsql: SELECT count(*) AS n FROM orders\n"
        "sources: ['https://example.org/']\ncontent: '{{ rows[0].n }} orders'\n"
    )
    port = free_port()
    proc = start(["--http", "--port", str(port), str(specs)], env={"OTEL_BSP_SCHEDULE_DELAY": "50"})
    try:
        wait_healthy(proc, port)
        call = {"name": "order_count", "arguments": {}, "_meta": {"traceparent": TRACEPARENT}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
        answer = httpx2.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=JSON_HEADERS, timeout=30).json()
        assert answer["result"]["content"][0]["text"] == "3 orders", answer
    finally:
        stop(proc)  # flushes the exporter
        collector.shutdown()
    (span,) = [s for s in exported if s.name == "tools/call order_count"]
    assert (span.trace_id.hex(), span.parent_span_id.hex()) == (TRACE_ID, PARENT_ID)
