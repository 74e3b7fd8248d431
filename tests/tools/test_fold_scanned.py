"""A chat request's messages folded in C (``openai_chat._fold_scanned``, taken past ``_FOLD_EACH``
messages) read as the step-by-step fold (``_fold_each``) and as ``parse_request``.

Both folds must decode the same fields in the same order and give the same reading (system texts in
order, whether they are kept, the last user's text), or both decline: roles of any type, several
system and developer messages anywhere, no user message, contents that do not decode.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.wire.conversation_delta import Reading
from proxy.wire.openai_chat import OpenAIChat, _fold_each, _fold_scanned, _QuickMessage
from tests.wire.test_quick_view import _CONTENT, _agrees

_ROLES = st.sampled_from(["system", "developer", "user", "assistant", "tool", "user", "assistant", None, 7, "",
                          "System", "DEVELOPER", "function", "\u017fystem"])
_MESSAGE = st.fixed_dictionaries({"role": _ROLES, "content": st.one_of(_CONTENT, st.text(max_size=8))})
_MESSAGES = st.lists(_MESSAGE, min_size=0, max_size=40)


def _quick(messages: list[dict[str, Any]]) -> list[_QuickMessage]:
    return msgspec.json.decode(json.dumps(messages).encode(), type=list[_QuickMessage])


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(messages=_MESSAGES, before=st.sampled_from([(), ("earlier",)]), kept=st.booleans(),
       last=st.sampled_from(["", "before"]))
def test_the_scanned_fold_reads_as_the_stepped_one(messages: list[dict[str, Any]], before: tuple[str, ...],
                                                   kept: bool, last: str) -> None:
    read = Reading("m", None, before, last, kept)
    quick = _quick(messages)
    assert _fold_scanned(read, quick) == _fold_each(read, quick)


def test_a_lone_surrogate_declines_both() -> None:
    quick = _quick([{"role": "system", "content": "a"}, {"role": "user", "content": "b"}])
    bad = msgspec.Raw(b'"\\ud800"')
    quick[1].content = bad
    read = Reading("m", None, (), "", True)
    assert _fold_each(read, quick) is None and _fold_scanned(read, quick) is None


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(messages=st.lists(_MESSAGE, min_size=9, max_size=40))
def test_long_requests_get_the_whole_view(messages: list[dict[str, Any]]) -> None:
    _agrees(OpenAIChat(), json.dumps({"model": "m", "messages": messages}).encode())
