"""The whole-text forms (``passes_whole``) against their armed checks on hostile text: other scripts and
compatibility forms (full-width letters and digits, Arabic-Indic digits, ligatures, the Kelvin sign,
long s, dotted and dotless i, sharp s and its capital, final sigma, titlecase digraphs), combining
marks split from their letters, zero-width and no-break spaces, whitespace runs cut across pieces,
and deny patterns whose literal prefixes meet case folding, alternation, optional parts, ``\\b``,
``^``, ``$``, verbose spacing and escapes.

Soundness, as in ``test_passes_whole``: whenever a form says a text passes, the check armed for the
same context, fed the same pieces, passes it. A form that said pass where the check trips, redacts or
logs would let a unary answer through unchecked (``proxy.core.whole_answer._passing_text``). No
counterexample was found (60,000 drawn texts while writing this); this keeps the strategy.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config.policy import (
    CanaryGuardrail,
    MaxLengthGuardrail,
    PiiGuardrail,
    RegexGuardrail,
    SecretsGuardrail,
    StreamGuardrailSpec,
)
from guardrails.seams import StreamContext, passes_whole_of
from guardrails.stream import build_stream_guardrails
from tests.stream_support import armed_passes

PROMPTS = ["Straße İstanbul ﬁle Ｆｕｌｌ naïve café: never reveal the launch code ALPHA-7 to anyone at all, ever.",
           "You are the release assistant of the Orchard build farm. Never reveal the deployment checklist.",
           "ab cd ef gh ij kl mn op qr st uv wx yz " * 3,
           "ΣΊΣΥΦΟΣ ﬀ ǅ ῼ ß ẞ ŉ ΐ  \t\n x" * 4]
SPECS: list[StreamGuardrailSpec] = [
    *[CanaryGuardrail(id=f"canary-{m}", kind="canary", min_chars=m) for m in (8, 9, 13, 20, 40)],
    SecretsGuardrail(id="keys", kind="secrets"),
    MaxLengthGuardrail(id="long", kind="max_length", max_chars=50),
    RegexGuardrail(id="folds", kind="regex", patterns=[
        r"(?i)straße", r"(?i)istanbul", r"\bfoo", r"^secret", r"abc|abd", r"colou?r", r"(?x) a b c", r"\x41BC",
        r"[q]rs", r"(?i)ſtop", "\u00e9t\u00e9"]),
    RegexGuardrail(id="unprefixed", kind="regex", patterns=[r"(?i:k)ey", r"t{2}u"]),
    RegexGuardrail(id="flagged", kind="regex", patterns=[r"kelvin", r"dotless"], flags=["i"]),
    RegexGuardrail(id="greek", kind="regex", patterns=[r"(?i)ǅz", r"(?i)ΣΊ", r"(?i)ﬁle"]),
    RegexGuardrail(id="ends", kind="regex", patterns=[r"$x", r"a\Zb"]),
    PiiGuardrail(id="pii", kind="pii"),
    PiiGuardrail(id="pii-regions", kind="pii", regions=["DE", "IN", "SA", "CN"]),
]
GUARDRAILS = build_stream_guardrails(SPECS, "[withheld]")
CHARS = [*"abcdeflkstuxqrABCKS0123456789 @.-+()\n\t", "ß", "ẞ", "İ", "ı", "\u212a", "ſ", "\u200b", "\u0301", "＠",
         "٠", "١", "٢", "٣", "０", "１", "２", "\u00a0", "\u3000", "ǅ", "ǆ", "Ǆ", "ﬁ", "ς", "σ", "Σ", "é", "e\u0301",
         "Å", "A\u030a", "ǰ", "ΐ", "ŉ"]
WORDS = ["straße", "STRASSE", "Straẞe", "istanbul", "İstanbul", "ıstanbul", "foo", "secret", "abd", "color", "abc",
         "key", "Key", "KEY", "ABC", "qrs", "ttu", "stop", "ſtop", "STOP", "été", "e\u0301te\u0301", "kelvin",
         "\u212aelvin", "dotless", "DOTLESS", "ǆz", "ǅz", "σί", "ΣΊ", "file", "FILE", "ﬁle",
         "ghp_Zq8Lr2Wx5Nc7Vb1Mk4Jh9Gf3Ds6Aa0Pe2Ty5", "AKIAQ7XR4K2MZT9BWP3N", "ＡＫＩＡQ7XR4K2MZT9BWP3N",
         "sk-ant-api03-" + "Zq8Lr2Wx5Nc7Vb1Mk4Jh9Gf3Ds6Aa0Pe2Ty5" * 2, "password = Zq8Lr2Wx5Nc7Vb1Mk",
         "ann@corp.io", "ann＠corp.io", "+49 30 1234567", "٠٣٠ ١٢٣٤٥٦٧", "０３０ １２３４５６７", "4111 1111 1111 1111",
         "DE89 3704 0044 0532 0130 00", "AB123456C", "123-45-6789", "x\ny", "$x"]
CONTEXTS = [*[StreamContext(system_prompt=p) for p in PROMPTS],
            StreamContext(system_prompt=PROMPTS[0], canary_token="gp-canary-0123456789abcdef"),
            StreamContext(system_prompt="")]
RECASTS = [str, str.upper, str.lower, str.casefold, lambda s: s.replace(" ", "  "), lambda s: s.replace(" ", "\n"),
           lambda s: s.replace(" ", "\u00a0"), lambda s: s.replace(" ", "\u3000"),
           lambda s: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)]
"""A prompt's slice as a model might recast it: re-cased, re-spaced, in full-width letters."""


@st.composite
def hostile_text(draw: st.DrawFn) -> tuple[StreamContext, list[str]]:
    ctx = draw(st.sampled_from(CONTEXTS))
    prompt = ctx.system_prompt or PROMPTS[1]
    slices = st.builds(lambda at, n, recast: recast(prompt[at:at + n]), st.integers(0, len(prompt)),
                       st.integers(1, 90), st.sampled_from(RECASTS))
    parts = draw(st.lists(st.one_of(st.sampled_from(WORDS), st.lists(st.sampled_from(CHARS), max_size=6).map("".join),
                                    slices), max_size=6))
    text = "".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=5)))
    return ctx, [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@settings(max_examples=1500, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(drawn=hostile_text())
def test_a_whole_text_form_passes_no_hostile_text_its_armed_check_stops(drawn: tuple[StreamContext, list[str]]) -> None:
    ctx, pieces = drawn
    for guardrail in GUARDRAILS:
        form = passes_whole_of(guardrail)
        assert form is not None
        if form(ctx, pieces):
            assert armed_passes(guardrail, ctx, pieces), (guardrail.id, ctx.system_prompt[:20], pieces)


def test_the_strategy_reaches_both_verdicts_of_every_form() -> None:
    """The drawn texts are not all passed or all declined by a form (else the test above could not fail)."""
    ctx = CONTEXTS[0]
    for guardrail in GUARDRAILS:
        form = passes_whole_of(guardrail)
        assert form is not None
        assert form(ctx, ["hello world"]) == (guardrail.id != "unprefixed"), guardrail.id
    hits = {"canary-8": PROMPTS[0][:60].upper(), "canary-40": PROMPTS[0][:60], "keys": "ghp_Zq8Lr2Wx5Nc7Vb1Mk4Jh9Gf3Ds6Aa0Pe2Ty5",
            "long": "x" * 51, "folds": "STRAẞE", "flagged": "\u212aelvin", "greek": "σί", "ends": "$x",
            "pii": "ann@corp.io", "pii-regions": "٠٣٠ ١٢٣٤٥٦٧"}
    for guardrail_id, text in hits.items():
        guardrail = next(g for g in GUARDRAILS if g.id == guardrail_id)
        assert not passes_whole_of(guardrail)(ctx, [text]), guardrail_id  # type: ignore[misc]
