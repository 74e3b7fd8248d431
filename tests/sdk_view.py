"""What a client shows of one streamed answer, as the official SDKs' stream helpers assemble it: the
judge of the client-view suites (``test_client_view``) and of the differential fuzzer
(``test_differential_fuzz``).

Each ``*_view`` makes one streamed request through the proxy with the SDK's accumulating helper
(openai ``chat.completions.stream`` and ``responses.stream``, anthropic ``messages.stream``,
google-genai ``generate_content_stream``, whose chunks the caller joins) and returns every text the
client could show: each event it yields (with the snapshots the helpers attach to deltas), the
accumulated final object, its ``output_text`` / joined text, and the text of the error it raised. An
SDK that raises still showed what it yielded before.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

SYSTEM = "You are a helpful assistant."


@dataclass
class View:
    """Everything one client showed of an answer."""

    shown: list[str] = field(default_factory=list)
    error: Exception | None = None
    final: Any = None
    """The helper's accumulated result (None when the SDK raised before it was complete)."""

    def text(self) -> str:
        return "\n".join(self.shown)

    def shows(self, marker: str) -> bool:
        return marker in self.text()


def _collect(run: Callable[[View], None]) -> View:
    view = View()
    try:
        with warnings.catch_warnings():  # pydantic warns serialising a final response the SDK rebuilt
            warnings.simplefilter("ignore")
            run(view)
    except Exception as exc:  # noqa: BLE001 - what the SDK raises is part of what the client sees
        view.error = exc
        view.shown += [str(exc), repr(getattr(exc, "body", ""))]
    return view


@functools.cache
def _openai(base: str) -> openai.OpenAI:
    """One client per proxy (a google-genai client costs ~0.1 s to make: the fuzzer makes many calls)."""
    return openai.OpenAI(base_url=base + "/v1", api_key="sk-test", max_retries=0)


@functools.cache
def _anthropic(base: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)


@functools.cache
def _genai(base: str) -> genai.Client:
    return genai.Client(api_key="gk", http_options=types.HttpOptions(base_url=base, api_version="v1beta"))


def responses_view(base: str, system: str = SYSTEM, user: str = "hello") -> View:
    client = _openai(base)

    def run(view: View) -> None:
        with client.responses.stream(model="m", instructions=system, input=user) as stream:
            tokens: list[Any] = []  # the logprobs of the text deltas, in arrival order
            try:
                for ev in stream:
                    view.shown.append(ev.to_json(indent=None))
                    if ev.type == "response.output_text.delta":
                        tokens += ev.logprobs or []
                    elif ev.type == "response.output_text.done":  # a part's logprobs, each list whole
                        view.shown += _token_runs(ev.logprobs)
                    elif ev.type == "response.content_part.done" and ev.part.type == "output_text":
                        view.shown += _token_runs(ev.part.logprobs)
                    elif ev.type == "response.output_item.done" and ev.item.type == "message":
                        view.shown += [t for c in ev.item.content if c.type == "output_text"
                                       for t in _token_runs(c.logprobs)]
                final = stream.get_final_response()
            finally:  # what a client reading the running snapshot shows (its items in arrival order)
                view.shown += _token_runs(tokens)
                snapshot = getattr(stream._state, "_ResponseStreamState__current_snapshot", None)
                if snapshot is not None:
                    view.shown.append("".join(c.text for o in snapshot.output if o.type == "message"
                                              for c in o.content if c.type == "output_text"))
        view.final = final
        view.shown += [final.to_json(indent=None), final.output_text]
        view.shown += [t for o in final.output if o.type == "message" for c in o.content
                       if c.type == "output_text" for t in _token_runs(c.logprobs)]
    return _collect(run)


def chat_view(base: str, system: str = SYSTEM, user: str = "hello") -> View:
    client = _openai(base)

    def run(view: View) -> None:
        msgs: Any = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        with client.chat.completions.stream(model="m", messages=msgs) as stream:
            for ev in stream:
                view.shown.append(ev.to_json(indent=None))
            final = stream.get_final_completion()
        view.final = final
        view.shown.append(final.to_json(indent=None))
        view.shown += [c.message.content or "" for c in final.choices]
        view.shown += [t for c in final.choices for t in _token_texts(c.logprobs)]
    return _collect(run)


def _token_texts(logprobs: Any) -> list[str]:
    """``_token_runs`` of a chat choice's logprobs (its content's and its refusal's)."""
    return [*_token_runs(getattr(logprobs, "content", None)), *_token_runs(getattr(logprobs, "refusal", None))]


def _token_runs(entries: Any) -> list[str]:
    """What a client that renders logprobs shows: the tokens joined, and per rank the alternatives
    joined (a UI that offers the second choice of every token shows that run)."""
    entries = entries or []
    ranks = max((len(e.top_logprobs or []) for e in entries), default=0)
    spelled = bytes(b for e in entries for b in getattr(e, "bytes", None) or []).decode("utf-8", "replace")
    return ["".join(e.token or "" for e in entries), spelled,  # (bytes: the text as the API docs say to rebuild it)
            *("".join(e.top_logprobs[r].token or "" for e in entries if len(e.top_logprobs or []) > r)
              for r in range(ranks))]


def anthropic_view(base: str, system: str = SYSTEM, user: str = "hello") -> View:
    client = _anthropic(base)

    def run(view: View) -> None:
        with client.messages.stream(model="claude-opus-4-8", max_tokens=100, system=system,
                                    messages=[{"role": "user", "content": user}]) as stream:
            for ev in stream:
                view.shown.append(ev.to_json(indent=None))
            final = stream.get_final_message()
        view.final = final
        view.shown += [final.to_json(indent=None), "".join(b.text for b in final.content if b.type == "text")]
    return _collect(run)


def gemini_view(base: str, system: str = SYSTEM, user: str = "hello") -> View:
    client = _genai(base)
    cfg = types.GenerateContentConfig(system_instruction=system)

    def run(view: View) -> None:
        # per candidate (by its index), each run a client shows joined over the chunks: the answer, the
        # thoughts, the code it ran and what that printed, the chosen tokens and each rank of the others
        texts: dict[tuple[int, str], str] = {}
        said = ""  # what ``print(chunk.text, end="")`` shows: each chunk's first candidate, by position
        try:
            for chunk in client.models.generate_content_stream(model="m", contents=user, config=cfg):
                view.shown.append(chunk.model_dump_json())
                said += chunk._get_text() or ""
                for n, cand in enumerate(chunk.candidates or []):
                    for lane, text in _gemini_runs(cand):
                        key = (n if cand.index is None else cand.index, lane)
                        texts[key] = texts.get(key, "") + text
        finally:
            view.shown += [*texts.values(), said]
    return _collect(run)


def _gemini_runs(cand: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for part in (cand.content.parts if cand.content else None) or []:
        out.append(("thought" if part.thought else "text", part.text or ""))
        if part.executable_code:
            out.append(("code", part.executable_code.code or ""))
        if part.code_execution_result:
            out.append(("output", part.code_execution_result.output or ""))
    if lp := cand.logprobs_result:
        out.append(("chosen", "".join(c.token or "" for c in lp.chosen_candidates or [])))
        for top in lp.top_candidates or []:
            out += [(f"rank{r}", c.token or "") for r, c in enumerate(top.candidates or [])]
    return out


VIEWS: dict[str, Callable[..., View]] = {"chat": chat_view, "responses": responses_view,
                                         "anthropic": anthropic_view, "gemini": gemini_view}


def unary_view(api: str, base: str, system: str = SYSTEM, user: str = "hello") -> View:
    """The same for a request without streaming: the SDK's parsed object and the text it offers."""

    def run(view: View) -> None:
        if api == "chat":
            msgs: Any = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            c = _openai(base).chat.completions.create(model="m", messages=msgs)
            view.shown += [c.to_json(indent=None), *(ch.message.content or "" for ch in c.choices)]
            view.shown += [t for ch in c.choices for t in _token_texts(ch.logprobs)]
        elif api == "responses":
            r = _openai(base).responses.create(model="m", instructions=system, input=user)
            view.shown += [r.to_json(indent=None), r.output_text]
            view.shown += _token_runs([lp for o in r.output if o.type == "message" for c in o.content
                                       if c.type == "output_text" for lp in c.logprobs or []])
        elif api == "anthropic":
            m = _anthropic(base).messages.create(model="claude-opus-4-8", max_tokens=100, system=system,
                                                 messages=[{"role": "user", "content": user}])
            view.shown += [m.to_json(indent=None), "".join(b.text for b in m.content if b.type == "text")]
        else:
            g = _genai(base).models.generate_content(
                model="m", contents=user, config=types.GenerateContentConfig(system_instruction=system))
            view.shown.append(g.model_dump_json())
            for cand in g.candidates or []:
                runs: dict[str, str] = {}
                for lane, text in _gemini_runs(cand):
                    runs[lane] = runs.get(lane, "") + text
                view.shown += runs.values()
    return _collect(run)
