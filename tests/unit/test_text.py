"""BioSyn preprocessing: normalisation, Schwartz & Hearst abbreviations, composite splitting."""

from __future__ import annotations

import pytest

from linker.abbreviations import expand_abbreviation, find_abbreviations
from linker.composites import split_composite
from linker.text import Preprocessor, TextConfig, normalize

HNPCC_DOC = (
    "Germline mutations in MSH2 cause hereditary nonpolyposis colorectal cancer (HNPCC). "
    "Most HNPCC families carry a mutation."
)


def test_normalize_lowercases_strips_punctuation_and_collapses_spaces() -> None:
    assert normalize("Breast-Ovarian  Cancer, type 1 (BROVCA1).") == "breast ovarian cancer type 1 brovca1"


def test_normalize_handles_unicode_punctuation_and_is_idempotent() -> None:
    once = normalize("Alzheimer\u2019s disease \u2013 early onset")
    assert once == "alzheimer s disease early onset"
    assert normalize(once) == once


def test_normalize_american_spelling_and_html_entities() -> None:
    assert normalize("Haemolytic anaemia with oedema") == "hemolytic anemia with edema"
    assert normalize("Wilms&apos; tumour") == "wilms tumor"
    assert normalize("aerosol shoe") == "aerosol shoe"
    assert normalize("anaemia", TextConfig(american_spelling=False)) == "anaemia"


def test_normalize_steps_can_be_switched_off() -> None:
    cfg = TextConfig(lowercase=False, remove_punctuation=False, american_spelling=False)
    assert normalize("  Von Hippel-Lindau  disease ", cfg) == "Von Hippel-Lindau disease"


def test_abbreviation_long_form_then_short_form() -> None:
    assert find_abbreviations(HNPCC_DOC) == {"HNPCC": "hereditary nonpolyposis colorectal cancer"}


def test_abbreviation_first_letter_must_start_a_word() -> None:
    abbrs = find_abbreviations("Patients with adenomatous polyposis coli (APC) were studied.")
    assert abbrs == {"APC": "adenomatous polyposis coli"}


def test_abbreviation_short_then_long_variant() -> None:
    abbrs = find_abbreviations("Mutations of the DMD (Duchenne muscular dystrophy) gene are common.")
    assert abbrs == {"DMD": "Duchenne muscular dystrophy"}


def test_abbreviation_word_initials_win_over_a_shorter_backward_match() -> None:
    abbrs = find_abbreviations("A milder form, attenuated adenomatous polyposis coli (AAPC), was seen.")
    assert abbrs == {"AAPC": "attenuated adenomatous polyposis coli"}


def test_abbreviation_plural_short_form_also_defines_the_singular() -> None:
    abbrs = find_abbreviations("Deaths from cocaine-induced excited delirium (EDDs) were studied.")
    assert abbrs["EDDs"] == abbrs["EDD"] == "excited delirium"


def test_abbreviation_backward_matching_skips_words_without_letters_of_the_short_form() -> None:
    abbrs = find_abbreviations("We studied the ataxia telangiectasia (AT) locus.")
    assert abbrs == {"AT": "ataxia telangiectasia"}


@pytest.mark.parametrize(
    "text",
    [
        "The patients (n = 12) were treated.",  # no letters matching, more than two words
        "Tumours were found in the kidney (p < 0.05).",  # not a short form
        "A mutation was found (see Table 2).",  # long form cannot be matched backwards
        "Breast cancer (BRCA1) carriers.",  # 'B', 'R', 'C', 'A' and a '1' not in the long form
    ],
)
def test_abbreviation_negative_cases(text: str) -> None:
    assert find_abbreviations(text) == {}


def test_expand_whole_mention_and_tokens() -> None:
    abbrs = find_abbreviations(HNPCC_DOC)
    assert expand_abbreviation("HNPCC", abbrs) == "hereditary nonpolyposis colorectal cancer"
    assert expand_abbreviation("HNPCC families", abbrs) == "hereditary nonpolyposis colorectal cancer families"
    assert expand_abbreviation("hnpcc", abbrs) == "hnpcc"  # abbreviations are case-sensitive


def test_expand_drops_a_parenthesised_short_form_after_its_long_form() -> None:
    abbrs = find_abbreviations(HNPCC_DOC)
    mention = "hereditary nonpolyposis colorectal cancer (HNPCC)"
    assert expand_abbreviation(mention, abbrs) == "hereditary nonpolyposis colorectal cancer"


def test_expand_plural_short_form() -> None:
    assert expand_abbreviation("DMDs", {"DMD": "Duchenne muscular dystrophy"}) == "Duchenne muscular dystrophy"


@pytest.mark.parametrize(
    ("mention", "parts"),
    [
        ("breast and ovarian cancer", ["breast cancer", "ovarian cancer"]),
        ("breast or ovarian cancer", ["breast cancer", "ovarian cancer"]),
        ("breast and/or ovarian cancer", ["breast cancer", "ovarian cancer"]),
        ("Duchenne/Becker muscular dystrophy", ["Duchenne muscular dystrophy", "Becker muscular dystrophy"]),
        ("breast/ovarian cancer", ["breast cancer", "ovarian cancer"]),
        (
            "colorectal, endometrial, and ovarian cancers",
            ["colorectal cancers", "endometrial cancers", "ovarian cancers"],
        ),
        ("colon and some other cancers", ["colon cancers", "cancers"]),
        ("ataxia-telangiectasia or breast cancer", ["ataxia-telangiectasia", "breast cancer"]),
        ("cancer of the renal pelvis and bladder", ["cancer of the renal pelvis", "cancer of the bladder"]),
        ("deficiency of C6 and C7", ["deficiency of C6", "deficiency of C7"]),
        ("pancreatic cysts and tumors", ["pancreatic cysts", "pancreatic tumors"]),
        ("familial breast and ovarian cancer", ["familial breast cancer", "familial ovarian cancer"]),
        (
            "demyelination in the central and peripheral nervous system",
            ["demyelination in the central nervous system", "demyelination in the peripheral nervous system"],
        ),
        ("inherited and sporadic forms of the cancer", ["inherited forms of the cancer", "sporadic forms of the cancer"]),
        ("colorectal, breast and head and neck cancers", ["colorectal cancers", "breast cancers", "head and neck cancers"]),
    ],
)
def test_split_composite(mention: str, parts: list[str]) -> None:
    assert split_composite(mention) == parts


@pytest.mark.parametrize(
    "mention",
    [
        "breast cancer",
        "ataxia-telangiectasia",
        "HNPCC",
        "type 2 diabetes",
        "sudden, unexplained death",  # commas alone are an adjective list
        "head and neck cancer",  # a fixed coordination
        "heart rate and cardiac output",  # two phrases, no shared head
        "complement deficiencies (C2 and C7)",  # parentheses are left alone
    ],
)
def test_split_leaves_simple_mentions_alone(mention: str) -> None:
    assert split_composite(mention) == [mention]


def test_preprocessor_expands_splits_and_normalises() -> None:
    pre = Preprocessor()
    abbrs = pre.abbreviations("Carriers of breast and ovarian cancer (BOC) genes. BOC is common.")
    assert abbrs == {"BOC": "breast and ovarian cancer"}
    assert pre.mention_queries("BOC", abbrs) == ["breast cancer", "ovarian cancer"]
    assert pre.mention_queries("Breast-cancer") == ["breast cancer"]


def test_preprocessor_respects_switches() -> None:
    pre = Preprocessor(TextConfig(resolve_abbreviations=False, split_composites=False))
    assert pre.abbreviations(HNPCC_DOC) == {}
    assert pre.mention_queries("breast and ovarian cancer") == ["breast and ovarian cancer"]
