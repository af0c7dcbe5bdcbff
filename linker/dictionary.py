"""The in-memory name table the retrievers index: one row per (normalised name, concept id).

The same normalised string may belong to several concepts ("ataxia" in MEDIC); it then has one row per
concept, so a retriever that scores rows can rank concepts by their best row. Gold ids of the corpora are
resolved to the dictionary's primary ids here (:meth:`NameTable.resolve_id`): NCBI Disease writes
``D012345`` and ``OMIM:123``, MEDIC TSV writes ``MESH:D012345``, the DNorm release writes bare OMIM numbers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from linker.data import ConceptRecord
from linker.text import TextConfig, normalize

__all__ = ["NameTable", "id_variants"]

_FORMAT_VERSION = 1


def id_variants(raw: str) -> list[str]:
    """Spellings of the same id across our sources, most specific first."""
    raw = raw.strip()
    out = [raw]
    if raw.isdigit():
        out.append(f"OMIM:{raw}")
    upper = raw.upper()
    if upper.startswith("MESH:"):
        out.append(raw[5:])
    elif upper.startswith("OMIM:"):
        out.append(raw[5:])
    elif raw[:1] in ("C", "D") and raw[1:].isdigit():
        out.append(f"MESH:{raw}")
    return out


class NameTable:
    """Rows of (normalised name, concept id, raw name), with id maps."""

    def __init__(self, cfg: TextConfig | None = None) -> None:
        self.cfg = cfg or TextConfig()
        self.names: list[str] = []
        self.concept_ids: list[str] = []
        self.raw_names: list[str] = []
        # How often each row was attested by added data (merged training mentions, curator synonyms): the
        # tie-breaker when several concepts share a name ("dm", "aniridia" in MEDIC).
        self.row_support: list[int] = []
        self.concept_support: dict[str, int] = {}
        # alt id (and prefix variants of primary ids) -> primary concept id
        self.alt_id_map: dict[str, str] = {}
        self.preferred_names: dict[str, str] = {}
        # No (name, concept) -> row map: a concept's few rows are scanned instead (_find_row); the map's 3M tuple
        # keys took ~450 MB of a served linker at UMLS size.
        self._by_concept: dict[str, list[int]] = {}
        self._by_name: dict[str, list[str]] = {}  # normalised name -> the concepts that own it (homonyms)
        # Rows no longer a name of anything, kept in the lists so that every other row keeps its position: a
        # DeltaTable's names taken back (linker.delta), or a table saved when names were taken back in place.
        self.removed: set[int] = set()

    # --- construction ----------------------------------------------------------------------------

    @classmethod
    def from_records(
        cls, records: Iterable[ConceptRecord], cfg: TextConfig | None = None, include_obsolete: bool = False
    ) -> NameTable:
        table = cls(cfg)
        for rec in records:
            if rec.obsolete and not include_obsolete:
                continue
            table._add_concept(rec.concept_id, rec.preferred_name)
            for alt in rec.alt_ids:
                table._map_alt(alt, rec.concept_id)
            for name in rec.all_names():
                table._add_row(name, rec.concept_id)
        return table

    def _add_concept(self, cid: str, preferred: str) -> None:
        self.preferred_names.setdefault(cid, preferred)
        self._by_concept.setdefault(cid, [])

    def _map_alt(self, alt: str, cid: str) -> None:
        for variant in id_variants(alt):
            # Primary ids always win over alt ids; among alt ids the first concept that claims one wins.
            if variant not in self._by_concept:
                self.alt_id_map.setdefault(variant, cid)

    def _add_row(self, raw: str, cid: str) -> int | None:
        name = normalize(raw, self.cfg)
        if not name:
            return None
        if self._find_row(name, cid) is not None:
            return None
        row = len(self.names)
        self.names.append(name)
        self.concept_ids.append(cid)
        self.raw_names.append(raw)
        self.row_support.append(0)
        self._by_concept.setdefault(cid, []).append(row)
        self._by_name.setdefault(name, []).append(cid)
        return row

    def add(self, pairs: Iterable[tuple[str, str]]) -> list[int]:
        """Add (name, concept id) rows; returns the ids of the rows created, in order.

        Names are normalised with the table's config (normalising twice changes nothing, so already
        normalised training mentions are fine). A concept id is mapped to its primary id when it resolves;
        an unknown id becomes a new concept. Pairs already present get no new row (and no row id returned),
        but every pair, new or not, counts once in ``row_support`` and ``concept_support``.
        """
        created: list[int] = []
        for raw, cid in pairs:
            primary = self.resolve_id(cid) or cid
            self._add_concept(primary, raw)
            row = self._add_row(raw, primary)
            if row is not None:
                created.append(row)
            else:
                row = self._find_row(normalize(raw, self.cfg), primary)
            if row is not None:
                self.row_support[row] += 1
                self.concept_support[primary] = self.concept_support.get(primary, 0) + 1
        return created

    # --- lookups -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.names)

    @property
    def concepts(self) -> list[str]:
        """Primary concept ids in insertion order."""
        return list(self._by_concept)

    def has_concept(self, cid: str) -> bool:
        """Whether ``cid`` is a primary concept id of the table (as written: no alt id, no other spelling)."""
        return cid in self._by_concept

    def concept_names(self, cid: str) -> list[int]:
        """Row ids of a concept's names (empty for an unknown id)."""
        primary = self.resolve_id(cid)
        return list(self._by_concept.get(primary, [])) if primary else []

    def tie_key(self, row: int) -> tuple[int, int]:
        """Higher is better among names with equal scores: (row support, concept support)."""
        return self.row_support[row], self.concept_support.get(self.concept_ids[row], 0)

    def concepts_named(self, name: str) -> list[str]:
        """The concepts that own ``name`` (after normalisation), in row order: more than one is a homonym."""
        return list(self._by_name.get(normalize(name, self.cfg), ()))

    def row(self, name: str, cid: str) -> int | None:
        return self._find_row(normalize(name, self.cfg), cid)

    def _find_row(self, name: str, cid: str) -> int | None:
        """The live row of an already normalised name under a concept (a concept has a handful of names)."""
        names = self.names
        for row in self._by_concept.get(cid, ()):
            if names[row] == name:
                return row
        return None

    def resolve_id(self, raw_id: str) -> str | None:
        """Primary concept id for an id as a corpus writes it, or None.

        Tries the id itself, then alt ids, then "MESH:"/"OMIM:" prefix variants (and bare OMIM numbers).
        """
        variants = id_variants(raw_id)
        # Primary ids first, in every spelling, then alt ids: "160900" is the primary OMIM:160900 even
        # where another concept lists OMIM:160900 among its alt ids.
        for variant in variants:
            if variant in self._by_concept:
                return variant
        for variant in variants:
            if variant in self.alt_id_map:
                return self.alt_id_map[variant]
        return None

    # --- persistence -------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        """Write ``name_table.json`` into ``folder`` (created if needed)."""
        path = Path(folder)
        path.mkdir(parents=True, exist_ok=True)
        payload: dict[str, Any] = {
            "format_version": _FORMAT_VERSION,
            "text_config": self.cfg.to_dict(),
            "names": self.names,
            "concept_ids": self.concept_ids,
            "raw_names": self.raw_names,
            "alt_id_map": self.alt_id_map,
            "row_support": self.row_support,
            "concept_support": self.concept_support,
            # Concepts in insertion order, with their preferred names; concepts without rows survive too.
            "concepts": [[cid, self.preferred_names.get(cid, "")] for cid in self._by_concept],
            "removed": sorted(self.removed),
        }
        tmp = path / "name_table.json.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False)
        tmp.replace(path / "name_table.json")

    def copy(self) -> NameTable:
        """An independent copy (rows, supports and id maps), to add names to without touching this one."""
        import copy

        return copy.deepcopy(self)

    @classmethod
    def load(cls, folder: str | Path) -> NameTable:
        with open(Path(folder) / "name_table.json", encoding="utf-8") as fh:
            payload = json.load(fh)
        if payload.get("format_version") != _FORMAT_VERSION:
            raise ValueError(f"{folder}: unsupported name table format {payload.get('format_version')!r}")
        table = cls(TextConfig.from_dict(payload["text_config"]))
        for cid, preferred in payload["concepts"]:
            table._add_concept(sys.intern(cid), preferred)
        table.removed = {int(r) for r in payload.get("removed", ())}  # absent from tables saved before removal existed
        for name, cid, raw in zip(payload["names"], payload["concept_ids"], payload["raw_names"], strict=True):
            row = len(table.names)
            cid = sys.intern(cid)  # one string per concept, not per name (JSON gives each occurrence its own)
            table.names.append(name)
            table.concept_ids.append(cid)
            table.raw_names.append(raw)
            if row in table.removed:
                continue
            table._by_concept.setdefault(cid, []).append(row)
            table._by_name.setdefault(name, []).append(cid)
        table.alt_id_map = dict(payload["alt_id_map"])
        table.row_support = [int(x) for x in payload["row_support"]]
        table.concept_support = {str(k): int(v) for k, v in payload["concept_support"].items()}
        return table
