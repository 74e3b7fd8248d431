#!/usr/bin/env python3
"""Writes ``deploy/grafana/guardproxy.json``, a Grafana dashboard over the metrics guardproxy exports.

The panels are a table here, so a change is reviewed as one line, not as 2,000 lines of JSON:
``python deploy/grafana/make_dashboard.py`` rewrites the file. ``tests/ops/test_dashboard.py`` checks that
the file is what this script writes and that every query names a metric (and label) the proxy exports,
scraped from a real proxy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RATE = "[$__rate_interval]"

# (title, unit, [(PromQL, legend)], kind)
PANELS: list[tuple[str, str, list[tuple[str, str]], str]] = [
    ("Requests by route and status", "reqps",
     [(f"sum by (route, status) (rate(guardproxy_requests_total{RATE}))", "{{route}} {{status}}")], "timeseries"),
    ("Open streams", "short", [("sum(guardproxy_open_streams)", "open")], "stat"),
    ("Workers serving", "short", [("sum(guardproxy_workers)", "workers")], "stat"),
    ("Stream guardrail trips", "short",
     [(f"sum by (guardrail_id, reason_code) (increase(guardproxy_stream_guardrail_trips_total{RATE}))",
       "{{guardrail_id}} {{reason_code}}")], "timeseries"),
    ("Message checks by outcome", "short",
     [(f"sum by (guardrail_id, outcome) (increase(guardproxy_message_checks_total{RATE}))",
       "{{guardrail_id}} {{outcome}}")], "timeseries"),
    ("Tool-call assessments", "short",
     [(f"sum by (rule, decision) (increase(guardproxy_tool_assessments_total{RATE}))", "{{rule}} {{decision}}")],
     "timeseries"),
    ("Retries by cause", "short", [(f"sum by (cause) (increase(guardproxy_retries_total{RATE}))", "{{cause}}")],
     "timeseries"),
    ("Failed closed by reason", "short",
     [(f"sum by (reason) (increase(guardproxy_fail_closed_total{RATE}))", "{{reason}}")], "timeseries"),
    ("Upstream latency (headers)", "s",
     [(f"histogram_quantile(0.5, sum by (le, provider) (rate(guardproxy_upstream_latency_seconds_bucket{RATE})))",
       "p50 {{provider}}"),
      (f"histogram_quantile(0.99, sum by (le, provider) (rate(guardproxy_upstream_latency_seconds_bucket{RATE})))",
       "p99 {{provider}}")], "timeseries"),
    ("Time to first byte", "s",
     [(f"histogram_quantile(0.99, sum by (le, stage) (rate(guardproxy_time_to_first_byte_seconds_bucket{RATE})))",
       "p99 {{stage}}")], "timeseries"),
    ("Text held back by the guard", "s",
     [(f"histogram_quantile(0.5, sum by (le) (rate(guardproxy_stream_hold_seconds_bucket{RATE})))", "p50"),
      (f"histogram_quantile(0.99, sum by (le) (rate(guardproxy_stream_hold_seconds_bucket{RATE})))", "p99")],
     "timeseries"),
    ("Message-check slots", "short",
     [("sum(guardproxy_message_checks_in_flight)", "in flight"), ("sum(guardproxy_message_checks_queued)", "queued")],
     "timeseries"),
    ("Message-check queue wait", "s",
     [(f"histogram_quantile(0.99, sum by (le) (rate(guardproxy_message_check_queue_seconds_bucket{RATE})))",
       "p99")], "timeseries"),
    ("Held system prompts", "short",
     [(f"sum by (kind, outcome) (increase(guardproxy_held_prompts_total{RATE}))", "{{kind}} {{outcome}}")],
     "timeseries"),
    ("Policy reloads", "short",
     [(f"sum by (outcome) (increase(guardproxy_policy_reloads_total{RATE}))", "{{outcome}}")], "timeseries"),
    ("Client disconnects and feed drops", "short",
     [(f"sum(increase(guardproxy_client_disconnects_total{RATE}))", "client gone"),
      (f"sum(increase(guardproxy_feed_dropped_total{RATE}))", "feed records dropped")], "timeseries"),
]


def dashboard() -> dict[str, Any]:
    panels: list[dict[str, Any]] = []
    for i, (title, unit, queries, kind) in enumerate(PANELS):
        width = 6 if kind == "stat" else 12
        x = 0 if i == 0 else (panels[-1]["gridPos"]["x"] + panels[-1]["gridPos"]["w"]) % 24
        y = 0 if i == 0 else panels[-1]["gridPos"]["y"] + (8 if x == 0 else 0)
        if x + width > 24:
            x, y = 0, y + 8
        panels.append({
            "id": i + 1, "title": title, "type": kind,
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "gridPos": {"h": 8, "w": width, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {},
            "targets": [{"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend,
                         "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                        for j, (expr, legend) in enumerate(queries)],
        })
    return {
        "title": "guardproxy", "uid": "guardproxy", "schemaVersion": 39, "version": 1, "editable": True,
        "tags": ["guardproxy", "llm", "guardrails"], "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus",
                                 "label": "Prometheus"}]},
        "panels": panels,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    (Path(__file__).with_name("guardproxy.json")).write_text(render(), encoding="utf-8")
