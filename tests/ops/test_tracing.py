"""OpenTelemetry spans: off unless OTEL_* asks; with the SDK's in-memory exporter, a guarded request
gives its server span, one client span per upstream call, first-byte events, message checks, tool
assessments and trips, with GenAI attributes; OTLP export to a loopback collector from OTEL_* alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from proxy.ops.tracing import otlp_requested
from tests.apis import raw_call
from tests.edge.test_policy_reload import ZEBRA, ask, policy_text
from tests.fakes.faulty import poll
from tests.fakes.process import ProxyProcess
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def by_name(finished: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name.startswith(prefix)]


def test_tracing_is_off_unless_otel_variables_ask() -> None:
    assert not otlp_requested({})
    assert otlp_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert otlp_requested({"OTEL_TRACES_EXPORTER": "otlp"})
    assert not otlp_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_SDK_DISABLED": "true"})


def test_a_stream_with_a_trip_is_traced(spans: tuple[TracerProvider, InMemorySpanExporter],
                                        upstream: FakeUpstream) -> None:
    provider, exporter = spans
    with ProxyServer(upstream.url, policy_text("A"), tracer_provider=provider) as proxy:
        upstream.queue(Reply(text=ZEBRA))
        r = ask(proxy.url, stream=True)
        assert "[policy A]" in r.text
        assert poll(lambda: bool(by_name(exporter.get_finished_spans(), "POST ")))
    finished = exporter.get_finished_spans()
    server = by_name(finished, "POST /v1/chat/completions")[0]
    attrs: dict[str, Any] = dict(server.attributes or {})
    assert attrs["gen_ai.operation.name"] == "chat" and attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "m" and attrs["http.response.status_code"] == 200
    assert attrs["guardproxy.policy"].startswith("default@")
    events = [e.name for e in server.events]
    assert events == ["first_upstream_byte", "first_released_byte"]
    assert attrs["guardproxy.time_to_first_upstream_byte_ms"] <= attrs["guardproxy.time_to_first_released_byte_ms"]
    client = by_name(finished, "chat m")
    assert len(client) == 1 and client[0].parent is not None
    assert client[0].parent.span_id == server.context.span_id
    trip = by_name(finished, "guardproxy.trip no-striped-horses")
    assert trip and dict(trip[0].attributes or {})["guardproxy.reason_code"] == "pattern_match"
    assert trip[0].parent is not None and trip[0].parent.span_id == server.context.span_id
    assert not any("zebra" in str(dict(s.attributes or {})) for s in finished)  # blocked text stays out


JUDGED = """
[[message_guardrails]]
id = "judge"
kind = "llm_judge"
model = "judge-model"
prompt = "Does this break the rules? {agent_output}"
timeout_s = 5.0
action = "replace"
"""


def test_message_checks_and_tool_assessments_get_spans(spans: tuple[TracerProvider, InMemorySpanExporter],
                                                        upstream: FakeUpstream, tmp_path: Path) -> None:
    provider, exporter = spans
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = JUDGED + f'\n[tools]\nworkspace_root = "{ws}"\non_block = "replace"\n'
    with ProxyServer(upstream.url, policy, tracer_provider=provider) as proxy:
        upstream.queue(Reply(text="All fine here."))
        raw_call(proxy.url, "chat", stream=True)
        upstream.queue(Reply(text="Reading.", tool_calls=[("Read", {"file_path": str(ws / "missing.txt")})]))
        raw_call(proxy.url, "chat", stream=True)
        assert poll(lambda: len(by_name(exporter.get_finished_spans(), "POST ")) == 2)
    finished = exporter.get_finished_spans()
    checks = by_name(finished, "guardproxy.message_check judge")
    assert checks and dict(checks[0].attributes or {})["guardproxy.outcome"] in ("pass", "block")
    assert checks[0].end_time is not None and checks[0].start_time is not None
    assert checks[0].end_time >= checks[0].start_time
    tools = by_name(finished, "guardproxy.tool_assessment Read")
    assert len(tools) == 1
    attrs = dict(tools[0].attributes or {})
    assert attrs["gen_ai.tool.name"] == "Read" and attrs["guardproxy.reason_code"] == "no_such_path"


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[ExportTraceServiceRequest]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        req = ExportTraceServiceRequest()
        req.ParseFromString(body)
        _Collector.received.append(req)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_otel_variables_alone_export_spans_over_otlp(upstream: FakeUpstream) -> None:
    collector = HTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    _Collector.received.clear()
    try:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.server_port}",
               "OTEL_SERVICE_NAME": "guardproxy-test", "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with ProxyProcess(upstream.url, **env) as proxy:
            upstream.queue(Reply(text="hello there"))
            ask(proxy.url, stream=True)

            def names() -> set[str]:
                return {s.name for r in _Collector.received for rs in r.resource_spans
                        for ss in rs.scope_spans for s in ss.spans}

            assert poll(lambda: "POST /v1/chat/completions" in names(), 15.0), names()
        services = {a.value.string_value for r in _Collector.received for rs in r.resource_spans
                    for a in rs.resource.attributes if a.key == "service.name"}
        assert services == {"guardproxy-test"}
        assert "chat m" in names()
    finally:
        collector.shutdown()
