"""Every metric the proxy exports, on ``prometheus-client``, one registry per app (no globals).

Names follow Prometheus conventions: base units (seconds, bytes), counters end in ``_total``.
Label values are bounded sets chosen by the proxy (route names, status codes, guardrail ids, reason
codes, outcomes), never request content, so nothing secret can reach ``/metrics``.

With several workers (``guardproxy serve --workers N``) each process writes its values to files in
``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multiprocess mode, chosen by that variable when
``prometheus_client`` is first imported) and a scrape of any worker sums them all. Gauges then need a
mode saying how workers combine: ``livesum`` counts only workers that are alive.

To add a metric: add a field here and use the prometheus-client API at the call site
(``metrics.x.labels(a="b").inc()``); nothing else needs registering.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upstream and guard latencies span a cached 5 ms reply to a minute-long generation."""
_HOLD_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""A frame released at once waits well under a millisecond; one held to the message's end, seconds."""


class Metrics:
    """Made once per app. ``multiprocess_dir`` set: values are shared with the other workers."""

    def __init__(self, multiprocess_dir: str | None = None) -> None:
        self.multiprocess_dir = multiprocess_dir
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.requests = Counter("guardproxy_requests_total", "Requests by route and status.",
                                ["route", "status"], registry=reg)
        self.upstream_latency = Histogram("guardproxy_upstream_latency_seconds",
                                          "Time to upstream response headers.", ["provider"],
                                          buckets=_BUCKETS, registry=reg)
        self.stream_trips = Counter("guardproxy_stream_guardrail_trips_total",
                                    "Stream guardrail trips by guardrail and reason.",
                                    ["guardrail_id", "reason_code"], registry=reg)
        self.message_checks = Counter("guardproxy_message_checks_total",
                                      "Message checks by guardrail and outcome (pass, block, fail_open).",
                                      ["guardrail_id", "outcome"], registry=reg)
        self.retries = Counter("guardproxy_retries_total", "Upstream re-requests by cause.", ["cause"],
                               registry=reg)
        self.upstream_resends = Counter("guardproxy_upstream_resends_total",
                                        "Requests sent once more on a new connection because the reused one "
                                        "they went out on was closed before the upstream took them in.",
                                        registry=reg)
        self.tool_assessments = Counter("guardproxy_tool_assessments_total",
                                        "Tool call assessments by rule and decision.", ["rule", "decision"],
                                        registry=reg)
        self.disconnects = Counter("guardproxy_client_disconnects_total", "Clients gone mid-exchange.",
                                   registry=reg)
        self.fail_closed = Counter("guardproxy_fail_closed_total",
                                   "Answers ended with the API's error (or refused) because the proxy could "
                                   "not check them, by reason.", ["reason"], registry=reg)
        self.open_streams = Gauge("guardproxy_open_streams", "Streams being relayed now.",
                                  registry=reg, multiprocess_mode="livesum")
        self.workers = Gauge("guardproxy_workers", "Worker processes serving (1 per live worker).",
                             registry=reg, multiprocess_mode="livesum")
        self.stream_hold = Histogram("guardproxy_stream_hold_seconds",
                                     "Delay from a text frame's arrival from upstream to its release to the "
                                     "client.", buckets=_HOLD_BUCKETS, registry=reg)
        self.time_to_first_byte = Histogram("guardproxy_time_to_first_byte_seconds",
                                            "From the request's arrival to the first upstream body byte "
                                            "(stage=upstream) and to the first byte delivered to the client "
                                            "(stage=delivered), on guarded streams.", ["stage"],
                                            buckets=_BUCKETS, registry=reg)
        self.check_queue_wait = Histogram("guardproxy_message_check_queue_seconds",
                                          "Wait for a message-check slot (outside the check's own timeout).",
                                          registry=reg)
        self.checks_in_flight = Gauge("guardproxy_message_checks_in_flight", "Message checks holding a slot.",
                                      registry=reg, multiprocess_mode="livesum")
        self.checks_queued = Gauge("guardproxy_message_checks_queued", "Message checks waiting for a slot.",
                                   registry=reg, multiprocess_mode="livesum")
        self.policy_reloads = Counter("guardproxy_policy_reloads_total",
                                      "Policy reload attempts by outcome (ok, unchanged, error: a file that does "
                                      "not load; refused: an empty file or one that would disarm running "
                                      "guardrails).", ["outcome"], registry=reg)
        self.policy_live = Gauge("guardproxy_policy_live", "1 for the live version of each named policy.",
                                 ["policy", "version"], registry=reg, multiprocess_mode="livemax")
        self.policy_reload_refused = Gauge("guardproxy_policy_last_reload_refused",
                                           "1 when the last reload attempt was refused, by reason (invalid, "
                                           "empty, disarms); 0 once one succeeds.", ["reason"], registry=reg,
                                           multiprocess_mode="livemax")

        self.unary_lanes = Counter("guardproxy_unary_lane_checks_total",
                                   "Non-streamed answers whose shape (a second choice, output that could not "
                                   "be vetted) took the per-lane checks instead of the one-pass check.", registry=reg)
        self.held_prompts = Counter("guardproxy_held_prompts_total",
                                    "Requests naming a system prompt the upstream holds (previous_response_id, "
                                    "conversation, stored prompt, Gemini cachedContent), by kind and outcome: "
                                    "remembered (the canary armed with it), unseen_pass (relayed, the canary "
                                    "not watching for it), unseen_refuse.", ["kind", "outcome"], registry=reg)
        self.state_errors = Counter("guardproxy_state_errors_total",
                                    "State store calls that failed (down, slow past GUARDPROXY_STATE_TIMEOUT_S, "
                                    "full, or a value that failed to open), by engine, operation and the "
                                    "decision taken (the canary's unseen_prompt: pass or refuse; none after "
                                    "the answer).", ["engine", "op", "decision"], registry=reg)
        self.state_not_kept = Counter("guardproxy_state_not_kept_total",
                                      "Held prompts not kept: larger than GUARDPROXY_HELD_PROMPTS_SCOPE_BYTES.",
                                      registry=reg)
        self.feed_dropped = Counter("guardproxy_feed_dropped_total",
                                    "Decision feed records a slow /events subscriber did not get.", registry=reg)
        # Labelled children the hot path uses on every request, bound once (``labels()`` parses its
        # arguments and takes a lock on each call).
        self.first_byte_upstream = self.time_to_first_byte.labels(stage="upstream")
        self.first_byte_delivered = self.time_to_first_byte.labels(stage="delivered")
        self._children: dict[tuple[str, ...], Any] = {}

    def count_request(self, route: str, status: int) -> None:
        self._child(self.requests, "r", route, str(status)).inc()

    def upstream_latency_of(self, provider: str) -> Any:
        """The upstream latency histogram's child for ``provider``."""
        return self._child(self.upstream_latency, "u", provider)

    def _child(self, metric: Any, tag: str, *values: str) -> Any:
        key = (tag, *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def started(self) -> None:
        self.workers.set(1)

    def stopped(self) -> None:
        """A worker leaving: its live gauges stop counting (multiprocess mode)."""
        self.workers.set(0)
        if self.multiprocess_dir:
            multiprocess.mark_process_dead(os.getpid(), self.multiprocess_dir)  # type: ignore[no-untyped-call]

    def render(self) -> bytes:
        """Prometheus text. In multiprocess mode, the sum over every worker's files (read per scrape,
        as prometheus-client prescribes: the collector must not live in a registry the workers share)."""
        if not self.multiprocess_dir:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        multiprocess.MultiProcessCollector(merged, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
