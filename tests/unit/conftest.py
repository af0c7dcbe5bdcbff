"""Fixtures for the linker's unit tests: the real MiniLM (loaded once per session) and a tiny dictionary
written by the tests themselves."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# A knowledge base small enough to reason about by hand: ids are exact in the assertions.
TINY_DICTIONARY = """\
D001943||Breast Neoplasms|breast cancer|breast tumor|mammary carcinoma
D010051||Ovarian Neoplasms|ovarian cancer|ovary tumour
D003920||Diabetes Mellitus|diabetes|DM
D003924||Diabetes Mellitus, Type 2|type 2 diabetes|NIDDM|adult onset diabetes
D001260||Ataxia Telangiectasia|Louis-Bar syndrome|AT
D006816||Huntington Disease|Huntington chorea|huntingtons disease
D015179||Colorectal Neoplasms|colorectal cancer|colorectal carcinoma
D009101||Multiple Myeloma|myeloma|plasma cell myeloma
"""


@pytest.fixture(scope="session")
def minilm():  # type: ignore[no-untyped-def]
    """The base encoder, shared by all tests: tests that train must work on a ``copy.deepcopy`` of it."""
    import torch

    from linker.encoders import TransformerEncoder

    torch.set_num_threads(2)
    return TransformerEncoder()


@pytest.fixture(scope="session")
def tiny_dictionary_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dictionary") / "tiny_medic.txt"
    path.write_text(TINY_DICTIONARY, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_table(tiny_dictionary_file: Path):  # type: ignore[no-untyped-def]
    from linker.dictionary import NameTable
    from linker.dictionary_formats import iter_dnorm_dictionary

    return NameTable.from_records(iter_dnorm_dictionary(tiny_dictionary_file))
