"""A small Prometheus text-format registry: counters and histograms with labels, no globals.

Label values are bounded sets chosen by the proxy (route names, status codes, guardrail ids, reason
codes), never request content, so nothing secret can reach ``/metrics``.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

LabelKey = tuple[tuple[str, str], ...]
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _labels(key: LabelKey, extra: str = "") -> str:
    parts = [f'{k}="{v}"' for k, v in key]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


class Counter:
    def __init__(self, name: str, help_: str) -> None:
        self.name, self.help = name, help_
        self.values: dict[LabelKey, float] = defaultdict(float)

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        self.values[tuple(sorted(labels.items()))] += amount

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        lines += [f"{self.name}{_labels(k)} {v:g}" for k, v in sorted(self.values.items())]
        return lines


class Histogram:
    def __init__(self, name: str, help_: str, buckets: tuple[float, ...] = _BUCKETS) -> None:
        self.name, self.help, self.buckets = name, help_, buckets
        self.counts: dict[LabelKey, list[int]] = {}
        self.sums: dict[LabelKey, float] = defaultdict(float)

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        counts = self.counts.setdefault(key, [0] * (len(self.buckets) + 1))
        counts[bisect.bisect_left(self.buckets, value)] += 1
        self.sums[key] += value

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for key, counts in sorted(self.counts.items()):
            running = 0
            for bound, n in zip(self.buckets, counts):
                running += n
                le = f'le="{bound:g}"'
                lines.append(f"{self.name}_bucket{_labels(key, le)} {running}")
            running += counts[-1]
            inf = 'le="+Inf"'
            lines.append(f"{self.name}_bucket{_labels(key, inf)} {running}")
            lines.append(f"{self.name}_sum{_labels(key)} {self.sums[key]:g}")
            lines.append(f"{self.name}_count{_labels(key)} {running}")
        return lines


class Metrics:
    """Every metric the proxy exports, made once per app."""

    def __init__(self) -> None:
        self.requests = Counter("guardproxy_requests_total", "Requests by route and status.")
        self.upstream_latency = Histogram("guardproxy_upstream_latency_seconds",
                                          "Time to upstream response headers.")
        self.stream_trips = Counter("guardproxy_stream_guardrail_trips_total",
                                    "Stream guardrail trips by guardrail and reason.")
        self.message_checks = Counter("guardproxy_message_checks_total",
                                      "Message checks by guardrail and outcome (pass, block, fail_open).")
        self.retries = Counter("guardproxy_retries_total", "Upstream re-requests by cause.")
        self.tool_assessments = Counter("guardproxy_tool_assessments_total",
                                        "Tool call assessments by rule and decision.")
        self.disconnects = Counter("guardproxy_client_disconnects_total", "Clients gone mid-exchange.")
        self.open_streams = 0

    def render(self) -> str:
        lines: list[str] = []
        for m in (self.requests, self.upstream_latency, self.stream_trips, self.message_checks,
                  self.retries, self.tool_assessments, self.disconnects):
            lines += m.render()
        lines += ["# HELP guardproxy_open_streams Streams being relayed now.",
                  "# TYPE guardproxy_open_streams gauge", f"guardproxy_open_streams {self.open_streams}"]
        return "\n".join(lines) + "\n"
