"""Outbound through a company's forward proxy: ``HTTPS_PROXY`` (a ``CONNECT`` tunnel for TLS
upstreams), ``HTTP_PROXY`` (absolute-form requests), ``NO_PROXY``, proxy credentials, and the CA
that signs a TLS upstream (``GUARDPROXY_UPSTREAM_CA_BUNDLE`` or ``SSL_CERT_FILE``), on the
forwarding path and on the side calls (a webhook message check).

Real parts: the proxy under uvicorn, a forward proxy on loopback (``tests.fakes.forward_proxy``),
the fake upstream and classifier served over TLS with a test CA (trustme), the openai SDK as client.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import trustme

from config.settings import SettingsError
from tests.fakes.classifier import FakeClassifier
from tests.fakes.forward_proxy import ForwardProxy
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream, Reply

PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
             "SSL_CERT_FILE", "SSL_CERT_DIR")


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_file(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def _server_tls(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


@pytest.fixture(scope="module")
def tls_upstream(ca: trustme.CA) -> Iterator[FakeUpstream]:
    fake = FakeUpstream()
    fake.ssl_context = _server_tls(ca)
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def plain_upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_ENV:
        monkeypatch.delenv(name, raising=False)


def _chat(proxy: ProxyServer, *, stream: bool = False) -> str:
    # The client talks to guardproxy directly: the proxy variables are guardproxy's, not the client's.
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0,
                           http_client=openai.DefaultHttpxClient(trust_env=False))
    messages = [{"role": "user", "content": "hi"}]
    if stream:
        return "".join(c.choices[0].delta.content or "" for c in
                       client.chat.completions.create(model="m", messages=messages, stream=True)  # type: ignore[arg-type]
                       if c.choices)
    return client.chat.completions.create(model="m", messages=messages).choices[0].message.content or ""  # type: ignore[arg-type]


def test_a_tls_upstream_and_a_tls_webhook_are_reached_through_the_proxys_connect_tunnel(
        monkeypatch: pytest.MonkeyPatch, ca: trustme.CA, ca_file: str, tls_upstream: FakeUpstream) -> None:
    classifier = FakeClassifier()
    classifier.ssl_context = _server_tls(ca)
    with classifier, ForwardProxy() as fwd:
        monkeypatch.setenv("HTTPS_PROXY", fwd.url)
        # The webhook is named by host name, the upstream by address: two tunnels told apart.
        hook = classifier.url.replace("127.0.0.1", "localhost") + "/webhook"
        policy = f'[[message_guardrails]]\nid = "hook"\nkind = "webhook"\nurl = "{hook}"\ntimeout_s = 5.0\n'
        with ProxyServer(tls_upstream.url, policy, upstream_ca_bundle=ca_file) as proxy:
            tls_upstream.queue(Reply(text="Through the tunnel."), Reply(text="Streamed through it."))
            assert _chat(proxy) == "Through the tunnel."
            assert _chat(proxy, stream=True) == "Streamed through it."
        assert f"127.0.0.1:{tls_upstream.port}" in fwd.connects
        assert f"localhost:{classifier.port}" in fwd.connects  # the side call went through it too
        assert classifier.webhook_bodies  # and got there: the CA bundle is trusted on the side calls
        assert not fwd.requests


def test_without_the_ca_a_tls_upstream_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                  tls_upstream: FakeUpstream) -> None:
    with ForwardProxy() as fwd:
        monkeypatch.setenv("HTTPS_PROXY", fwd.url)
        with ProxyServer(tls_upstream.url) as proxy, pytest.raises(openai.InternalServerError) as caught:
            _chat(proxy)
        assert caught.value.status_code == 502
        assert fwd.connects  # it went through the tunnel, and the certificate was not trusted


def test_ssl_cert_file_is_trusted_like_the_ca_bundle_setting(monkeypatch: pytest.MonkeyPatch, ca_file: str,
                                                             tls_upstream: FakeUpstream) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", ca_file)
    with ProxyServer(tls_upstream.url) as proxy:
        tls_upstream.queue(Reply(text="Trusted by SSL_CERT_FILE."))
        assert _chat(proxy) == "Trusted by SSL_CERT_FILE."


def test_a_plain_http_upstream_goes_through_http_proxy_in_absolute_form(
        monkeypatch: pytest.MonkeyPatch, plain_upstream: FakeUpstream) -> None:
    with ForwardProxy() as fwd:
        monkeypatch.setenv("http_proxy", fwd.url)
        with ProxyServer(plain_upstream.url) as proxy:
            plain_upstream.queue(Reply(text="Relayed by the proxy."))
            assert _chat(proxy) == "Relayed by the proxy."
        assert fwd.requests == [f"POST {plain_upstream.url}/v1/chat/completions HTTP/1.1"]
        assert plain_upstream.seen[-1].path == "/v1/chat/completions"


def test_no_proxy_sends_the_upstream_straight(monkeypatch: pytest.MonkeyPatch, ca_file: str,
                                              tls_upstream: FakeUpstream) -> None:
    with ForwardProxy() as fwd:
        monkeypatch.setenv("HTTPS_PROXY", fwd.url)
        monkeypatch.setenv("NO_PROXY", "example.com,127.0.0.1")
        with ProxyServer(tls_upstream.url, upstream_ca_bundle=ca_file) as proxy:
            tls_upstream.queue(Reply(text="Straight there."))
            assert _chat(proxy) == "Straight there."
        assert not fwd.connects and not fwd.requests


def test_proxy_credentials_from_the_proxy_url(monkeypatch: pytest.MonkeyPatch, ca_file: str,
                                              tls_upstream: FakeUpstream) -> None:
    wanted = "Basic " + base64.b64encode(b"corp-user:p@ss word").decode()
    with ForwardProxy(require_auth=wanted) as fwd:
        monkeypatch.setenv("HTTPS_PROXY", fwd.url.replace("http://", "http://corp-user:p%40ss%20word@"))
        with ProxyServer(tls_upstream.url, upstream_ca_bundle=ca_file) as proxy:
            tls_upstream.queue(Reply(text="Authenticated."))
            assert _chat(proxy) == "Authenticated."
        assert fwd.connects and fwd.refused == 0
        monkeypatch.setenv("HTTPS_PROXY", fwd.url)  # no credentials: the proxy answers CONNECT with 407
        with ProxyServer(tls_upstream.url, upstream_ca_bundle=ca_file) as proxy, \
                pytest.raises(openai.InternalServerError) as caught:
            _chat(proxy)
        assert caught.value.status_code == 502 and "407" in str(caught.value)
        assert fwd.refused == 1


def test_an_unsupported_proxy_scheme_is_refused_at_start(monkeypatch: pytest.MonkeyPatch,
                                                         plain_upstream: FakeUpstream) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(SettingsError, match="HTTPS_PROXY: only an http:// forward proxy"):
        ProxyServer(plain_upstream.url)


def test_the_ca_bundle_must_be_readable(tmp_path: Path, plain_upstream: FakeUpstream) -> None:
    with pytest.raises(SettingsError, match="GUARDPROXY_UPSTREAM_CA_BUNDLE: cannot load"):
        ProxyServer(plain_upstream.url, upstream_ca_bundle=str(tmp_path / "missing.pem"))
