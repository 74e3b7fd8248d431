"""``proxy.state.scope``: whose held state a request reads and writes. Every spelling of one credential
is one scope, another credential another one, and the credential itself is never the scope."""

from __future__ import annotations

import pytest

from proxy.state.scope import ANONYMOUS, scope_of
from proxy.state.seal import Sealer

PLAIN = Sealer(None, seal=False)
KEYED = Sealer(bytes(range(32)), seal=True)

ONE_CREDENTIAL = [
    ({"authorization": "Bearer sk-one"}, ""),
    ({"authorization": "bearer sk-one"}, ""),
    ({"authorization": "BEARER   sk-one "}, ""),
    ({"x-api-key": "sk-one"}, ""),
    ({"x-goog-api-key": "sk-one"}, ""),
    ({"api-key": "sk-one"}, ""),
    ({}, "key=sk-one"),
    ({}, "alt=sse&key=sk-one"),
    ({}, "%6Bey=sk-one"),  # (the name escaped: the upstream decodes it as ``key``)
    ({}, "ke%79=sk-one"),
    ({"x-goog-api-key": ""}, "key=sk-one"),
]


@pytest.mark.parametrize("sealer", [PLAIN, KEYED], ids=["plain", "keyed"])
@pytest.mark.parametrize(("header", "query"), ONE_CREDENTIAL)
def test_every_spelling_of_one_credential_is_one_scope(sealer: Sealer, header: dict[str, str], query: str) -> None:
    scope = scope_of(sealer, header, query)
    assert scope == scope_of(sealer, {"authorization": "Bearer sk-one"}, "")
    assert "sk-one" not in scope and scope != ANONYMOUS


def test_another_credential_or_none_is_another_scope() -> None:
    one = scope_of(KEYED, {"authorization": "Bearer sk-one"}, "")
    assert scope_of(KEYED, {"authorization": "Bearer sk-two"}, "") != one
    assert scope_of(KEYED, {}, "") == ANONYMOUS
    assert scope_of(KEYED, {}, "keys=sk-one") == ANONYMOUS
    assert scope_of(PLAIN, {"authorization": "Bearer sk-one"}, "") != one  # (keyed digests differ)
