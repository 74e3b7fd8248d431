"""National identity numbers by region, for the ``pii`` guardrail's ``regions`` option.

Data only: per ISO 3166 region, the shapes its national ids take in text (with the separators
people write) and the ``python-stdnum`` module whose ``is_valid`` checks the number's own
checksum and structure. A candidate is reported only when stdnum accepts it. Many of these are
bare digit runs of 9-13 digits with a one-in-ten or one-in-eleven checksum: a region whose ids
are bare digits blocks about one random number of that length in ten, so choose the regions
whose people the service talks to.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NationalId:
    name: str
    """The regex group name and the category reported: ``<region>_<id>``."""
    regex: str
    validator: str
    """A ``stdnum`` module path; its ``is_valid`` decides."""
    anchor: tuple[str, int] | None = None
    """An anchor for shapes that do not open with digits (see ``pii._ANCHORS``)."""


_S = "[ .-]?"  # an optional group separator
NATIONAL_IDS: dict[str, tuple[NationalId, ...]] = {
    "DE": (NationalId("de_idnr", rf"[1-9]\d{_S}\d{{3}}{_S}\d{{3}}{_S}\d{{3}}", "stdnum.de.idnr"),),
    "FR": (NationalId("fr_nir", rf"[12]{_S}\d{{2}}{_S}(?:0[1-9]|1[0-2]|[2-9]\d){_S}(?:\d{{2}}|2[AB]){_S}\d{{3}}{_S}\d{{3}}{_S}\d{{2}}",
                      "stdnum.fr.nir"),),
    "ES": (NationalId("es_dni", r"\d{8}-?[A-Za-z]", "stdnum.es.dni"),
           NationalId("es_nie", r"[XYZxyz]-?\d{7}-?[A-Za-z]", "stdnum.es.nie")),
    # A person's code fiscale (16 characters) or a company's (11 digits, its VAT number).
    "IT": (NationalId("it_cf", r"[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]|\d{11}", "stdnum.it.codicefiscale",
                      anchor=(r"[A-Z]{6}\d{2}", 0)),),
    "NL": (NationalId("nl_bsn", r"\d{4}\.?\d{2}\.?\d{3}", "stdnum.nl.bsn"),),
    "BE": (NationalId("be_nn", r"\d{2}[ .]?\d{2}[ .]?\d{2}[ .-]?\d{3}[ .-]?\d{2}", "stdnum.be.nn"),),
    "SE": (NationalId("se_pnr", r"(?:19|20)?\d{6}[-+]?\d{4}", "stdnum.se.personnummer"),),
    "DK": (NationalId("dk_cpr", r"\d{6}-?\d{4}", "stdnum.dk.cpr"),),
    "FI": (NationalId("fi_hetu", r"\d{6}[-+A-FU-Ya-fu-y]\d{3}[0-9A-Ya-y]", "stdnum.fi.hetu"),),
    "NO": (NationalId("no_fnr", r"\d{6} ?\d{5}", "stdnum.no.fodselsnummer"),),
    "PL": (NationalId("pl_pesel", r"\d{11}", "stdnum.pl.pesel"),),
    "PT": (NationalId("pt_cc", r"\d{8} ?\d ?[A-Z]{2}\d", "stdnum.pt.cc"),),
    "CH": (NationalId("ch_ahv", r"756\.?\d{4}\.?\d{4}\.?\d{2}", "stdnum.ch.ssn"),),
    "IE": (NationalId("ie_pps", r"\d{7}[A-Wa-w][A-Za-z]?", "stdnum.ie.pps"),),
    "BR": (NationalId("br_cpf", r"\d{3}\.?\d{3}\.?\d{3}-?\d{2}", "stdnum.br.cpf"),),
    "MX": (NationalId("mx_curp", r"[A-Z]{4}\d{6}[HM][A-Z]{5}[0-9A-Z]\d", "stdnum.mx.curp",
                      anchor=(r"[A-Z]{4}\d{2}", 0)),),
    "CA": (NationalId("ca_sin", r"\d{3}[ -]?\d{3}[ -]?\d{3}", "stdnum.ca.sin"),),
    "AU": (NationalId("au_tfn", r"\d{3} ?\d{3} ?\d{2,3}", "stdnum.au.tfn"),),
    "IN": (NationalId("in_aadhaar", r"[2-9]\d{3} ?\d{4} ?\d{4}", "stdnum.in_.aadhaar"),),
    "CN": (NationalId("cn_ric", r"\d{17}[\dX]", "stdnum.cn.ric"),),
    "KR": (NationalId("kr_rrn", r"\d{6}-?\d{7}", "stdnum.kr.rrn"),),
    "JP": (NationalId("jp_mynumber", r"\d{4} ?\d{4} ?\d{4}", "stdnum.jp.in_"),),
    "ZA": (NationalId("za_id", r"\d{6}[ -]?\d{4}[ -]?\d{2}[ -]?\d|\d{6}[ -]\d{7}", "stdnum.za.idnr"),),
    "TR": (NationalId("tr_tckn", r"[1-9]\d{10}", "stdnum.tr.tckimlik"),),
    "IL": (NationalId("il_id", r"\d{7,8}-?\d", "stdnum.il.idnr"),),
}
# Regions whose national phone formats count when the policy names none (``+<cc>`` numbers
# count in every region); their national ids beyond US SSNs and UK NINOs need ``regions``.
DEFAULT_REGIONS = ("US", "GB", "FR", "DE")


def validator(module: str) -> Callable[[str], bool]:
    """The module's ``is_valid``, made total: a number that makes the library raise counts as an id.

    The text is the model's, so any input reaches it; python-stdnum 2.2's ``cn.ric`` raises
    ``KeyError`` on an id whose checksum holds but whose area code its table lacks some data for
    (one in 30 well-formed ids). Raising would end the stream with an error; passing would let a
    well-formed id through. The shape matched and the library did not refuse it: it is withheld."""
    is_valid: Callable[[str], bool] = importlib.import_module(module).is_valid

    def total(text: str) -> bool:
        try:
            return is_valid(text)
        except Exception:  # noqa: BLE001 - any library failure on model text: withheld, never raised
            return True

    return total
