"""Two small MEDIC releases written for the release tests, and what changed between them.

2023 -> 2024: Scurvy and Allergic Rhinitis are new; Gout is gone; Hay fever (D004) was merged into Allergic
Rhinitis (D010 lists it as an alternative id); Heart attack (D002) is renamed Myocardial Infarction; Migraine lost
the synonym "Sick headache" and gained "Hemicrania"; Asthma and Rickets are unchanged.
"""

from __future__ import annotations

from pathlib import Path

HEADER = (
    "# The Comparative Toxicogenomics Database (CTD) - a slice written by the release tests\n"
    "#\n"
    "# Report created: {date}\n"
    "#\n"
    "# Fields:\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
    "#\n"
)
# name, id, alt ids, synonyms
RELEASE_2023 = [
    ("Asthma", "MESH:D001", "", "Bronchial asthma"),
    ("Heart attack", "MESH:D002", "", "MI"),
    ("Gout", "MESH:D003", "", ""),
    ("Hay fever", "MESH:D004", "", "Pollinosis"),
    ("Migraine", "MESH:D005", "", "Sick headache"),
    ("Rickets", "MESH:D006", "", ""),
]
RELEASE_2024 = [
    ("Asthma", "MESH:D001", "", "Bronchial asthma"),
    ("Myocardial Infarction", "MESH:D002", "", "Heart attack|MI"),
    ("Migraine", "MESH:D005", "", "Hemicrania"),
    ("Rickets", "MESH:D006", "", ""),
    ("Allergic Rhinitis", "MESH:D010", "MESH:D004", "Hay fever|Pollinosis"),
    ("Scurvy", "MESH:D011", "", ""),
]


def medic(rows: list[tuple[str, str, str, str]], date: str) -> str:
    lines = [f"{name}\t{cid}\t{alt}\t\t\t\t\t{syn}\t" for name, cid, alt, syn in rows]
    return HEADER.format(date=date) + "\n".join(lines) + "\n"


def write_releases(folder: Path) -> tuple[Path, Path]:
    old, new = folder / "CTD_diseases_2023.tsv", folder / "CTD_diseases_2024.tsv"
    old.write_text(medic(RELEASE_2023, "Mon Jan 02 10:00:00 EST 2023"), encoding="utf-8")
    new.write_text(medic(RELEASE_2024, "Tue Jan 02 10:00:00 EST 2024"), encoding="utf-8")
    return old, new
