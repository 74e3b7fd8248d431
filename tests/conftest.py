from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.adversarial import SECRETS_POLICY
from tests.fakes.proxy import ProxyServer
from tests.fakes.upstream import FakeUpstream

# In CI (``CI`` set, as `.ci/run` does) the property tests draw the same examples on every run: a
# landing is judged on a fixed set, and a new counterexample found by a random run on a developer's
# machine is kept in `.hypothesis/` there and turned into an ``@example``. Elsewhere they draw anew.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

NO_GUARDS = """
[defaults]
holdback_chars = 0
"""


@pytest.fixture(scope="session")
def upstream_server() -> Iterator[FakeUpstream]:
    fake = FakeUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture
def upstream(upstream_server: FakeUpstream) -> Iterator[FakeUpstream]:
    upstream_server.reset()
    yield upstream_server
    upstream_server.reset()


@pytest.fixture(scope="session")
def default_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    """The proxy with the shipped default policy."""
    with ProxyServer(upstream_server.url) as p:
        yield p


@pytest.fixture(scope="session")
def plain_proxy(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    """The proxy with guardrails off (pure passthrough)."""
    with ProxyServer(upstream_server.url, guardrails_enabled=False) as p:
        yield p


@pytest.fixture(scope="session")
def secrets_guard(upstream_server: FakeUpstream) -> Iterator[ProxyServer]:
    """The proxy with the secrets check (``tests.adversarial.SECRETS_POLICY``): the adversarial and
    edge suites try to slip ``tests.adversarial.SECRET`` past it."""
    with ProxyServer(upstream_server.url, SECRETS_POLICY) as p:
        yield p
