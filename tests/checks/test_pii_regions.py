"""PII on kept libraries: phones in every region (libphonenumber), checksummed ids by region
(python-stdnum), IBANs with dashes or a word after them, several cards on a line, lowercase
NINOs, and no email out of URL userinfo."""

from __future__ import annotations

import importlib
import re

import phonenumbers
import pytest

from config.policy import PiiGuardrail
from guardrails.seams import DeltaCheck, StreamContext
from guardrails.stream.pii import PiiProvider, iban_end
from guardrails.stream.pii_regions import DEFAULT_REGIONS, NATIONAL_IDS
from tests.stream_support import one_char, random_chunks, run

CTX = StreamContext(system_prompt="")
ALL_REGIONS = sorted(NATIONAL_IDS) + ["US", "GB"]


def arm(regions: list[str] | None = None, **spec: object) -> DeltaCheck:
    provider = PiiProvider(PiiGuardrail(id="pii", kind="pii", action="redact", regions=regions or [],  # type: ignore[arg-type]
                                        **spec), "[withheld]")
    check = provider.arm(CTX)
    assert check is not None
    return check


def redacted(text: str, regions: list[str] | None = None) -> list[tuple[str, str]]:
    out = run(arm(regions), one_char(text))
    return [(text[s:e], mask) for s, e, mask in out.redactions]


@pytest.mark.parametrize("region", ["US", "GB", "DE", "FR", "JP", "BR", "IN", "AU", "NG", "KR", "MX", "ZA", "SE", "EG"])
def test_international_phones_in_any_region(region: str) -> None:
    for kind in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
        number = phonenumbers.example_number_for_type(region, kind)
        assert number is not None
        text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
        assert redacted(f"call {text} today") == [(text, "[phone]")]


@pytest.mark.parametrize("region", DEFAULT_REGIONS)
def test_national_phones_of_the_default_regions(region: str) -> None:
    number = phonenumbers.example_number_for_type(region, phonenumbers.PhoneNumberType.MOBILE)
    assert number is not None
    text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
    assert redacted(f"call {text} today") == [(text, "[phone]")]


def _documented_ids(module: str) -> list[str]:
    mod = importlib.import_module(module)
    return [v for v in re.findall(r">>> (?:validate|compact|format)\('([^']+)'\)", mod.__doc__ or "")
            if mod.is_valid(v)]


@pytest.mark.parametrize("region", sorted(NATIONAL_IDS))
def test_national_ids_of_the_chosen_region(region: str) -> None:
    found = 0
    for nid in NATIONAL_IDS[region]:
        for value in _documented_ids(nid.validator):
            if re.fullmatch(nid.regex, value):
                assert redacted(f"id {value} ok", [region]) == [(value, "[id]")], value
                assert (value, "[id]") not in redacted(f"id {value} ok"), value  # ids need their region
                found += 1
    if not found:
        pytest.skip("no documented example in this python-stdnum version")


def test_ibans_with_dashes_and_a_word_after_them() -> None:
    assert redacted("pay DE89-3704-0044-0532-0130-00 now") == [("DE89-3704-0044-0532-0130-00", "[iban]")]
    assert redacted("IBAN BE68 5390 0754 7034 EUR") == [("BE68 5390 0754 7034", "[iban]")]
    assert redacted("IBAN BE68 5390 0754 7034 BANK transfer") == [("BE68 5390 0754 7034", "[iban]")]
    assert iban_end("BE68 5390 0754 7034 BANK") == len("BE68 5390 0754 7034")


def test_several_cards_on_one_line() -> None:
    text = "cards 4111111111111111 5500000000000004 and 4012 8888 8888 1881 4111-1111-1111-1111."
    assert [m for _, m in redacted(text)] == ["[card]"] * 4


def test_lowercase_nino() -> None:
    assert redacted("NI ab 12 34 56 c ok") == [("ab 12 34 56 c", "[nino]")]


@pytest.mark.parametrize("text", [
    "postgres://bob:hunter22@db.internal:5432/app", "https://alice:s3cret@example.org/x",
    "ftp://anonymous@ftp.gnu.org/gnu/", "redis://:p4ss@cache:6379", "amqp://guest:guest@rabbit:5672/",
])
def test_url_userinfo_is_not_an_email(text: str) -> None:
    assert redacted(f"connect to {text} then") == []


def test_mailto_is_an_email() -> None:
    assert redacted("write mailto:carol@corp-mail.io now") == [("carol@corp-mail.io", "[email]")]


@pytest.mark.parametrize("text", [
    "version 1.2.3.4", "v2.10.4-rc.1", "2024-01-15", "15/01/2024", "01.02.2024", "2024-01-15T10:20:30Z",
    "192.168.100.200", "10.0.0.1", "255.255.255.0", "3f786850e387550fdab836ed7e6dc881de23001b",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "550e8400-e29b-41d4-a716-446655440000",
    "ts=1700000000000", "port 8080, pid 12345", "ISBN 978-3-16-148410-0", "lat 48.8584, lon 2.2945",
    "08.11.1978 04:29:57", "logged 2019-03-04 10:20:30", "build 20220513", "on 13052022",  # date, time; date stamps
])
def test_near_misses_with_every_region_armed(text: str) -> None:
    assert redacted(f"see {text} here", ALL_REGIONS) == []


def test_unknown_region_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown regions"):
        PiiProvider(PiiGuardrail(id="p", kind="pii", regions=["XX"]), "")


def test_chunking_does_not_change_regional_redactions() -> None:
    text = "id 36574261809, call +49 30 901820, IBAN DE89-3704-0044-0532-0130-00, done."
    expected = run(arm(["DE"]), [text]).redactions
    assert len(expected) == 3
    for seed in range(5):
        assert run(arm(["DE"]), random_chunks(text, seed)).redactions == expected


@pytest.mark.parametrize("region", ["BO", "GI", "AD", "BT", "CL", "HU", "KZ", "CW", "CM", "BY", "NO", "AT", "JP", "IN"])
def test_national_phones_of_a_chosen_region(region: str) -> None:
    """libphonenumber's example numbers in their national format: short numbers, bare runs where the
    region writes them so, a trunk digit before an area code in parentheses."""
    for kind in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
        number = phonenumbers.example_number_for_type(region, kind)
        assert number is not None
        text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL)
        assert redacted(f"call {text} today", [region]) == [(text, "[phone]")], text


@pytest.mark.parametrize("text", [
    "order 1234 5678 shipped",       # valid digits in Germany, but not written with the trunk 0
    "ticket 2015550123 closed",      # a US number is written in groups
    "the range 30 1234567 is free",
])
def test_national_format_must_be_the_regions_own(text: str) -> None:
    assert redacted(text, ["DE", "US"]) == []


def test_written_with_the_trunk_prefix_or_in_groups() -> None:
    assert redacted("call 030 1234567 now", ["DE"]) == [("030 1234567", "[phone]")]
    assert redacted("call 1-800-555-0199 now", ["US"]) == [("1-800-555-0199", "[phone]")]


@pytest.mark.parametrize(("region", "value"), [
    ("ES", "x-2482300w"), ("BE", "85 07 30 033 28"), ("BE", "85.07.30-033 28"), ("FI", "131052a308t"),
    ("SE", "8803200016"), ("DK", "2110625629"), ("ZA", "750330 5044089"), ("IL", "3933742-3"),
    ("ZA", "750330 5044 08 9"), ("BR", "39053344705"),     # stdnum's own format; a CPF without dots
])
def test_national_ids_in_the_forms_people_write(region: str, value: str) -> None:
    assert redacted(f"id {value} ok", [region]) == [(value, "[id]")]


def test_an_id_the_library_raises_on_is_withheld_not_an_error() -> None:
    # A well-formed Chinese resident id (checksum holds) whose area code python-stdnum's table lacks a
    # county for: its is_valid raises KeyError.
    number = "611430199001017062"
    assert redacted(f"my id is {number} ok", ["CN"]) == [(number, "[id]")]


@pytest.mark.parametrize("text", [
    "| BenchmarkGithubAll | 10000 | 164367 ns/op | 84448 B/op |",  # counts: valid German numbers, bare
    "https://avatars.githubusercontent.com/u/164261630?v=4",         # nine digits after a "/"
    "linkedin.com/posts/activity-6963242628536487936-trAp/",         # a Luhn-valid slug
])
def test_numbers_in_code_and_docs_are_not_personal_data(text: str) -> None:
    """Found in the benign corpus (``bench.pii_benign``): a bare run without the trunk prefix is no
    German phone; another kind's reading of a candidate keeps that kind's own left boundary; a card
    does not begin right after a word and a dash."""
    assert redacted(f"see {text} here") == []

