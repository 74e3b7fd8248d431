"""The shipped Grafana dashboard (deploy/grafana) asks only for metrics the proxy exports.

Every query's metric names are looked up in a real proxy's ``/metrics`` scrape, and every label it
groups or filters by among that metric's label names: a renamed metric or label breaks this test
instead of leaving a blank panel in someone's Grafana."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from proxy.ops.metrics import Metrics
from tests.fakes.proxy import ProxyServer

ROOT = Path(__file__).resolve().parents[2]
BOARD = ROOT / "deploy" / "grafana" / "guardproxy.json"
_SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_created")


def _queries() -> list[str]:
    board = json.loads(BOARD.read_text(encoding="utf-8"))
    return [t["expr"] for p in board["panels"] for t in p["targets"]]


def _label_names() -> dict[str, set[str]]:
    names: dict[str, set[str]] = {}
    for collector in Metrics().registry._collector_to_names:  # the registry's own table
        for family in collector.describe():
            names[family.name] = set(getattr(collector, "_labelnames", ()))
    return names


def _family(metric: str, exported: set[str]) -> str | None:
    if metric in exported:
        return metric
    for suffix in _SUFFIXES:
        if metric.endswith(suffix) and metric[: -len(suffix)] in exported:
            return metric[: -len(suffix)]
    return None


def test_the_dashboard_file_is_what_its_script_writes() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_dashboard", BOARD.with_name("make_dashboard.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert BOARD.read_text(encoding="utf-8") == module.render()


def test_every_query_names_a_metric_and_labels_a_real_proxy_exports(default_proxy: ProxyServer) -> None:
    scrape = httpx.get(f"{default_proxy.url}/metrics", timeout=10).text
    exported = {f.name for f in text_string_to_metric_families(scrape)}
    labels = _label_names()
    queries = _queries()
    assert queries
    missing: list[str] = []
    for expr in queries:
        metrics = re.findall(r"\bguardproxy_\w+", expr)
        assert metrics, expr
        for metric in metrics:
            family = _family(metric, exported)
            if family is None:
                missing.append(f"{metric} in {expr}")
                continue
            used = {x.strip() for group in re.findall(r"\bby \(([^)]*)\)", expr) for x in group.split(",")}
            unknown = used - labels.get(family, set()) - {"le", ""}
            if unknown:
                missing.append(f"labels {sorted(unknown)} of {family} in {expr}")
    assert not missing, missing


def test_a_metric_the_proxy_does_not_export_is_caught(default_proxy: ProxyServer) -> None:
    scrape = httpx.get(f"{default_proxy.url}/metrics", timeout=10).text
    exported = {f.name for f in text_string_to_metric_families(scrape)}
    assert _family("guardproxy_requests_total", exported) == "guardproxy_requests"
    assert _family("guardproxy_no_such_thing_total", exported) is None
