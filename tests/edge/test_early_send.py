"""A guarded request's first attempt goes upstream before guardproxy reads its body
(``Exchange._send_early``): the upstream works on it while the proxy reads the body and sets up the
checks, which only the answer needs. What must hold on a warm connection, where it happens:

- a body refused after it was sent (not JSON, a wrong shape) gets the proxy's 400 in the API's
  format; its connection is closed, so the next request reads its own answer, never that one's;
- what the upstream must never start is never sent: a Responses ``background`` request however its
  key is spelled, a request with an unknown ``x-guardproxy-mode``, and a body the policy rewrites
  (a planted canary goes upstream planted);
- the answer is checked as before: a credential in it is still withheld.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from config.settings import Settings
from proxy.edge.app import create_app
from proxy.edge.exchange import Exchange
from tests.adversarial import SECRET
from tests.fakes.faulty import APIS, assert_http_error, headers_for, request_for
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

PLANTING = """
[[stream_guardrails]]
id = "leak"
kind = "canary"
plant_token = true
"""


@pytest.fixture(scope="module")
def planting(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    with ProxyServer(upstream_server.url, PLANTING) as p:
        yield p


def _post(proxy: ProxyServer, api: str, body: bytes | dict[str, Any], *, model: str = "m",
          headers: dict[str, str] | None = None) -> httpx.Response:
    path, _ = request_for(api, stream=False)
    path = path.replace("/models/m:", f"/models/{model}:")
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(proxy.url + path, content=content, timeout=20,
                      headers={**headers_for(api), "content-type": "application/json", **(headers or {})})


def _good(api: str, model: str) -> dict[str, Any]:
    _, body = request_for(api, stream=False)
    if "model" in body:
        body["model"] = model
    return body


def _model_of(api: str, answer: dict[str, Any]) -> str:
    if api.startswith("gemini"):
        return str(answer["modelVersion"])
    return str(answer["model"])


BAD = [b"{not json", b'{"model": "bad-model", "messages": "hi", "input": 5, "contents": "hi"}',
       b'{"model": "bad-model", "messages": [1, 2], "input": [7], "contents": [1]}']


@pytest.mark.parametrize("api", APIS)
def test_a_body_refused_after_it_was_sent_never_answers_the_next_request(default_proxy: ProxyServer,
                                                                         upstream: FakeUpstream, api: str) -> None:
    for n, bad in enumerate(BAD):
        warm = _post(default_proxy, api, _good(api, f"warm-{n}"), model=f"warm-{n}")
        assert warm.status_code == 200, warm.text  # leaves a connection idle: the next request goes early
        refused = _post(default_proxy, api, bad, model="bad-model")
        assert refused.status_code == 400, (bad, refused.text)
        assert "Traceback" not in str(assert_http_error(api, 400, refused.content)["message"])
        after = _post(default_proxy, api, _good(api, f"after-{n}"), model=f"after-{n}")
        assert after.status_code == 200, after.text
        assert _model_of(api, after.json()) == f"after-{n}"  # its own answer, not the refused body's


@pytest.mark.parametrize("key", ["background", "backgr\\u006fund"])
def test_a_background_response_is_never_sent_on_a_warm_connection(default_proxy: ProxyServer,
                                                                  upstream: FakeUpstream, key: str) -> None:
    assert _post(default_proxy, "responses", _good("responses", "warm")).status_code == 200
    upstream.seen.clear()
    body = json.dumps(_good("responses", "bg")).encode()[:-1] + f', "{key}": true}}'.encode()
    refused = _post(default_proxy, "responses", body)
    assert refused.status_code == 400 and "background" in refused.text
    barrier = _post(default_proxy, "responses", _good("responses", "barrier"))  # a request after it
    assert barrier.status_code == 200
    assert [s.body.get("model") for s in upstream.seen] == ["barrier"]


@pytest.mark.parametrize("api", ["chat", "anthropic", "gemini"])
def test_an_unknown_mode_is_never_sent_on_a_warm_connection(default_proxy: ProxyServer, upstream: FakeUpstream,
                                                            api: str) -> None:
    assert _post(default_proxy, api, _good(api, "warm"), model="warm").status_code == 200
    upstream.seen.clear()
    refused = _post(default_proxy, api, _good(api, "odd"), model="odd", headers={"x-guardproxy-mode": "yes"})
    assert refused.status_code == 400 and "x-guardproxy-mode" in refused.text
    assert _post(default_proxy, api, _good(api, "barrier"), model="barrier").status_code == 200
    assert len(upstream.seen) == 1


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_planted_canary_goes_upstream_planted_on_a_warm_connection(planting: ProxyServer, upstream: FakeUpstream,
                                                                     api: str) -> None:
    for _ in range(2):  # the second request finds the first one's connection idle
        assert _post(planting, api, _good(api, "m")).status_code == 200
    assert len(upstream.seen) == 2
    assert all("gp-canary-" in json.dumps(s.body) for s in upstream.seen)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_an_answer_to_an_early_request_is_still_checked(secrets_guard: ProxyServer, upstream: FakeUpstream,
                                                        api: str) -> None:
    assert _post(secrets_guard, api, _good(api, "m")).status_code == 200
    upstream.queue(Reply(text=f"here it is: {SECRET} keep it safe"))
    answer = _post(secrets_guard, api, _good(api, "m"))
    assert answer.status_code == 200
    assert SECRET not in answer.text and SECRET[:12] not in answer.text


class _Recording:
    """An upstream stand-in that notes what the exchange had built when each call came."""

    def __init__(self, exchange: list[Exchange], answer: Any) -> None:
        self.bases = {"openai": "http://upstream", "anthropic": "http://upstream", "gemini": "http://upstream"}
        self.calls: list[tuple[str, bytes | None, bool]] = []
        self._exchange, self._answer = exchange, answer

    def send_now(self, method: str, url: str, headers: Any, body: bytes | None) -> object:
        self.calls.append(("send_now", body, self._exchange[0].turn is None))
        return self

    async def answered(self, sent: object, *, decode: bool = False) -> Any:
        self.calls.append(("answered", None, self._exchange[0].turn is None))
        return self._answer

    async def request(self, method: str, url: str, headers: Any, body: bytes | None, *, decode: bool = False) -> Any:
        self.calls.append(("request", body, self._exchange[0].turn is None))
        return self._answer


def test_the_first_attempt_leaves_before_the_turn_is_built() -> None:
    from bench.request_cost import _Answer, _drop, _scope

    body = json.dumps(_good("chat", "m")).encode()
    reply = json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}]}).encode()
    services = create_app(Settings()).services
    made: list[Exchange] = []
    services.upstream = recording = _Recording(made, _Answer(reply))  # type: ignore[assignment]

    async def run() -> None:
        made.append(Exchange(services, _scope(body), body, _drop))
        await made[0].run()

    asyncio.run(run())
    assert recording.calls == [("send_now", body, True), ("answered", None, False)]
