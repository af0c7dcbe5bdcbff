"""Which files of a ``scripts/run --data`` folder are dictionaries and which are documents."""

from __future__ import annotations

from pathlib import Path

from webapp.demo.load import plan_folder


def test_a_pubtator_file_opening_with_a_blank_line_is_seen_as_documents(tmp_path: Path) -> None:
    # NCBI Disease's own files start with an empty line before the first title.
    (tmp_path / "ncbi_dev.txt").write_text("\n1|t|Breast cancer.\n1|a|An abstract.\n1\t0\t13\tBreast cancer\tSpecificDisease\tD001943\n")
    (tmp_path / "dictionary.txt").write_text("D001943||Breast Neoplasms|breast cancer\n")
    kinds = {item.path.name: item.kind for item in plan_folder(tmp_path)}
    assert kinds == {"dictionary.txt": "dictionary", "ncbi_dev.txt": "documents"}
