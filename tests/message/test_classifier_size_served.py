"""A long answer cannot switch the webhook or the moderation check off (issue #17, class 2), over the
real proxy: no request to the classifier carries more than the guardrail's ``max_chars`` of text (a
longer answer goes in parts, one request each, and a flagged part anywhere blocks), and a body the
classifier refuses as too large (413) blocks instead of passing, unless the operator chose
``on_content_error = "pass"``. A classifier that is down still fails open, and is counted."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.apis import request_for, sdk_call
from tests.fakes.classifier import FakeClassifier
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

KEY_ENV = "GUARDPROXY_TEST_MODERATION_KEY"
MAX_CHARS = 2000
BODY_OVERHEAD = 600
"""Bytes of JSON around the text (keys, ids, the part record): a body past max_chars plus this is
more than the guardrail promised to send."""


def policy(kind: str, classifier: FakeClassifier, **extra: str) -> str:
    where = (f'url = "{classifier.url}/webhook"' if kind == "webhook"
             else f'url = "{classifier.url}/v1/moderations"\napi_key_env = "{KEY_ENV}"')
    fields = "".join(f"{k} = {v}\n" for k, v in extra.items())
    return (f'[[message_guardrails]]\nid = "classifier"\nkind = "{kind}"\n{where}\n'
            f'replacement = "[withheld by the classifier]"\ntimeout_s = 5.0\nmax_chars = {MAX_CHARS}\n{fields}')


@pytest.fixture(scope="module", autouse=True)
def moderation_key() -> Iterator[None]:
    os.environ[KEY_ENV] = "sk-moderation"
    yield
    del os.environ[KEY_ENV]


@pytest.fixture(scope="module")
def classifier() -> Iterator[FakeClassifier]:
    with FakeClassifier(max_body=MAX_CHARS + BODY_OVERHEAD) as fake:
        yield fake


@pytest.fixture
def fresh(classifier: FakeClassifier) -> FakeClassifier:
    classifier.reset()
    classifier.max_body = MAX_CHARS + BODY_OVERHEAD
    return classifier


def long_answer(flag_at: int | None) -> Reply:
    text = "".join(f"Sentence {i} of a long and harmless answer. " for i in range(120))  # ~5,300 chars
    if flag_at is not None:
        text = text[:flag_at] + " FORBIDDEN " + text[flag_at:]
    return Reply(text=text, deltas=[text[i:i + 300] for i in range(0, len(text), 300)])


def sent_texts(classifier: FakeClassifier, kind: str) -> list[str]:
    if kind == "webhook":
        return [b["output"] for b in classifier.webhook_bodies]
    return [str(i) for i in classifier.moderation_inputs]


@pytest.mark.parametrize("kind", ["webhook", "moderation"])
@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_a_long_answer_is_sent_in_parts_and_a_flag_in_the_middle_blocks(
        upstream_server: FakeUpstream, fresh: FakeClassifier, kind: str, api: str) -> None:
    upstream_server.reset()
    with ProxyServer(upstream_server.url, policy(kind, fresh)) as p:
        upstream_server.queue(long_answer(flag_at=2600))
        assert sdk_call(p.url, api, stream=True).text == "[withheld by the classifier]"
        upstream_server.queue(long_answer(flag_at=None))
        clean = sdk_call(p.url, api, stream=False).text
    assert clean.startswith("Sentence 0") and "FORBIDDEN" not in clean
    assert fresh.refused == 0
    texts = sent_texts(fresh, kind)
    assert len(texts) >= 6  # at least three parts per answer
    assert all(len(t) <= MAX_CHARS for t in texts)
    assert sum("FORBIDDEN" in t for t in texts) == 1


@pytest.mark.parametrize("kind", ["webhook", "moderation"])
def test_a_body_the_classifier_refuses_as_too_large_blocks(upstream_server: FakeUpstream,
                                                           fresh: FakeClassifier, kind: str) -> None:
    upstream_server.reset()
    fresh.max_body = 300  # smaller than what the guardrail is allowed to send
    with ProxyServer(upstream_server.url, policy(kind, fresh)) as p:
        upstream_server.queue(long_answer(flag_at=None))
        assert sdk_call(p.url, "chat", stream=True).text == "[withheld by the classifier]"
        upstream_server.queue(long_answer(flag_at=None))
        assert sdk_call(p.url, "responses", stream=False).text == "[withheld by the classifier]"
        metrics = httpx.get(p.url + "/metrics").text
    assert fresh.refused >= 2
    assert re.search(r'guardproxy_message_checks_total\{[^}]*outcome="fail_closed"[^}]*\} [1-9]', metrics)


@pytest.mark.parametrize("kind", ["webhook", "moderation"])
def test_a_refused_body_passes_when_the_operator_says_so(upstream_server: FakeUpstream, fresh: FakeClassifier,
                                                         kind: str) -> None:
    upstream_server.reset()
    fresh.max_body = 300
    with ProxyServer(upstream_server.url, policy(kind, fresh, on_content_error='"pass"')) as p:
        upstream_server.queue(long_answer(flag_at=None))
        assert sdk_call(p.url, "anthropic", stream=True).text.startswith("Sentence 0")
    assert fresh.refused >= 1


@pytest.mark.parametrize("kind", ["webhook", "moderation"])
def test_a_classifier_that_is_down_fails_open_and_is_counted(upstream_server: FakeUpstream,
                                                            fresh: FakeClassifier, kind: str) -> None:
    upstream_server.reset()
    fresh.down = True
    with ProxyServer(upstream_server.url, policy(kind, fresh)) as p:
        upstream_server.queue(Reply(text="A short answer."))
        assert sdk_call(p.url, "gemini", stream=True).text == "A short answer."
        metrics = httpx.get(p.url + "/metrics").text
    assert re.search(r'guardproxy_message_checks_total\{[^}]*outcome="fail_open"[^}]*\} [1-9]', metrics)


@pytest.mark.parametrize("kind", ["webhook", "moderation"])
def test_lone_surrogates_reach_the_classifier_replaced_and_are_still_checked(
        upstream_server: FakeUpstream, fresh: FakeClassifier, kind: str) -> None:
    upstream_server.reset()
    with ProxyServer(upstream_server.url, policy(kind, fresh)) as p:
        upstream_server.queue(Reply(text="bad \ud800 FORBIDDEN", deltas=["bad \ud800", " FORBIDDEN"]))
        path, body = request_for("chat", stream=True, user="question \udfff here")
        res = httpx.post(p.url + path, content=json.dumps(body).encode(), timeout=20,
                         headers={"content-type": "application/json"})
    assert res.status_code == 200 and b"[withheld by the classifier]" in res.content
    (sent,) = sent_texts(fresh, kind)
    assert "bad \ufffd FORBIDDEN" in sent
    if kind == "webhook":
        assert fresh.webhook_bodies[0]["user_query"] == "question \ufffd here"


def test_checks_queued_past_their_timeout_are_still_run_and_the_queue_is_in_metrics(
        upstream_server: FakeUpstream, fresh: FakeClassifier) -> None:
    """Five answers at once, one check slot, a classifier taking 1 s, a 3 s timeout: the last check
    waits about 4 s for its slot. Waiting does not count against its timeout, so every answer is
    judged (and blocked); a starved check would fail open and let its answer through."""
    upstream_server.reset()
    fresh.delay_s = 1.0
    with ProxyServer(upstream_server.url, policy("webhook", fresh).replace("timeout_s = 5.0", "timeout_s = 3.0"),
                     check_concurrency=1) as p:
        upstream_server.queue(*[Reply(text=f"Answer {i}: FORBIDDEN.") for i in range(5)])
        with ThreadPoolExecutor(5) as pool:
            texts = list(pool.map(lambda _: sdk_call(p.url, "chat", stream=False).text, range(5)))
        metrics = httpx.get(p.url + "/metrics").text
    assert texts == ["[withheld by the classifier]"] * 5
    assert len(fresh.webhook_bodies) == 5
    waits = re.search(r"^guardproxy_message_check_queue_seconds_count(?:\{[^}]*\})? (\S+)$", metrics, re.MULTILINE)
    assert waits is not None and float(waits.group(1)) >= 5
    assert "guardproxy_message_checks_in_flight" in metrics and "guardproxy_message_checks_queued" in metrics
