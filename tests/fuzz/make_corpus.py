"""Write the standing fuzz corpus: ``corpus/<importer>/`` holds malformed files every importer must refuse,
``seeds/`` one valid small file per importer for the mutation fuzzer (tests/integration/test_fuzz_corpus.py).

The files are committed; this script is how they were made, and how a case is added: add it to ``CASES``
below and run ``python tests/fuzz/make_corpus.py`` from the project root. Each importer folder gets an
``expected.toml`` saying, per file, the error the import raises, the line it names (when the format has
lines) and what else the message must say (the field, the value at fault). A brat case is a folder (the test
zips it, as an upload is); a ``.zip`` case is used as it is (a damaged archive).
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import struct
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
SEEDS = HERE / "seeds"

# The fuzz test lowers IMPORT_MAX_DOCUMENT_CHARS to this, so that "too long" cases stay small files.
DOCUMENT_CHARS = 10_000


def pseudo_words(n: int) -> str:
    """``n`` characters of letters and spaces that do not repeat: PostgreSQL compresses a run of one letter
    to almost nothing, which would hide a name too long for an index."""
    x, out = 1, []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append("abcdefghijklmnopqrstuvwxyz "[(x >> 16) % 27])
    return "L" + "".join(out[1:])  # starts with a letter: no leading blank for a reader to strip


LONG = pseudo_words(12_000)  # longer than a document may be (in the test) and than a name may be


@dataclass
class Case:
    name: str  # file name (or brat folder name)
    content: bytes | str | dict[str, bytes | str]  # a dict: the files of a brat folder
    error: str  # ParseError, FormatError, ValueError or LimitExceeded
    says: list[str] = field(default_factory=list)
    line: int | None = None
    sniff: bool = False  # dictionaries: import without naming the format, as the job does when none is given


# --- valid seeds ----------------------------------------------------------------------------------------

TITLE = "Asthma attack in children"
ABSTRACT = "Gout and diabetes mellitus were seen."
TEXT = f"{TITLE} {ABSTRACT}"


def span(text: str, word: str) -> tuple[int, int]:
    start = text.index(word)
    return start, start + len(word)


def pubtator_seed() -> str:
    a, g, d = span(TEXT, "Asthma"), span(TEXT, "Gout"), span(TEXT, "diabetes mellitus")
    return (
        f"7|t|{TITLE}\n7|a|{ABSTRACT}\n"
        f"7\t{a[0]}\t{a[1]}\tAsthma\tDisease\tD001249\n"
        f"7\t{g[0]}\t{g[1]}\tGout\tDisease\tD006073\n"
        f"7\t{d[0]}\t{d[1]}\tdiabetes mellitus\tDisease\tD003920|D003924\tdiabetes|mellitus\n"
        "7\tCID\tD001249\tD006073\n"
        "\n"
        "8|t|Seizures\n8|a|Febrile seizures in 12 infants.\n"
        "8\t0\t8\tSeizures\tDisease\t-1\n"
        "\n"
    )


def bioc_xml_seed() -> str:
    a, g = span(TEXT, "Asthma"), span(TEXT, "Gout")
    return (
        "<?xml version='1.0' encoding='utf-8'?>\n"
        "<collection><source>fuzz</source><date>2025-01-01</date><key>fuzz.key</key>\n"
        "<document><id>7</id>\n"
        f"<passage><infon key=\"type\">title</infon><offset>0</offset><text>{TITLE}</text>\n"
        f"<annotation id=\"1\"><infon key=\"type\">Disease</infon><infon key=\"identifier\">D001249</infon>"
        f"<location offset=\"{a[0]}\" length=\"{a[1] - a[0]}\"/><text>Asthma</text></annotation>\n"
        "</passage>\n"
        f"<passage><infon key=\"type\">abstract</infon><offset>{len(TITLE) + 1}</offset><text>{ABSTRACT}</text>\n"
        f"<annotation id=\"2\"><infon key=\"type\">Disease</infon><infon key=\"identifier\">D006073</infon>"
        f"<location offset=\"{g[0]}\" length=\"{g[1] - g[0]}\"/><text>Gout</text></annotation>\n"
        "</passage>\n"
        "</document>\n"
        "<document><id>8</id>\n"
        "<passage><offset>0</offset><text>Seizures</text>\n"
        "<annotation id=\"1\"><infon key=\"type\">Disease</infon><location offset=\"0\" length=\"8\"/><text>Seizures</text></annotation>\n"
        "</passage>\n"
        "</document>\n"
        "</collection>\n"
    )


def bioc_json_document(doc_id: object = "7", offset: object = 0, length: object = 6, text: object = "Asthma") -> dict:
    g = span(TEXT, "Gout")  # "Asthma" is at 0-6
    return {
        "id": doc_id, "infons": {}, "relations": [], "annotations": [],
        "passages": [
            {"offset": 0, "infons": {"type": "title"}, "text": TITLE, "sentences": [], "relations": [],
             "annotations": [{"id": "1", "infons": {"type": "Disease", "identifier": "D001249"}, "text": text,
                              "locations": [{"offset": offset, "length": length}]}]},
            {"offset": len(TITLE) + 1, "infons": {"type": "abstract"}, "text": ABSTRACT, "sentences": [], "relations": [],
             "annotations": [{"id": "2", "infons": {"type": "Disease", "identifier": "D006073"}, "text": "Gout",
                              "locations": [{"offset": g[0], "length": g[1] - g[0]}]}]},
        ],
    }


def bioc_json_collection(*documents: dict) -> dict:
    return {"source": "fuzz", "date": "2025-01-01", "key": "fuzz.key", "infons": {}, "documents": list(documents)}


def bioc_json_seed() -> str:
    return json.dumps(bioc_json_collection(bioc_json_document()), indent=1) + "\n"


def jsonl_line(**overrides: object) -> str:
    a = span(TEXT, "Asthma")
    doc: dict = {
        "id": "7", "title": TITLE, "text": TEXT, "metadata": {"source": "fuzz"},
        "mentions": [{"start": a[0], "end": a[1], "text": "Asthma", "type": "Disease",
                      "links": [{"part": 0, "concept_id": "D001249", "nil": False}]}],
    }
    doc.update(overrides)
    return json.dumps(doc)


def jsonl_seed() -> str:
    g = span(TEXT, "Gout")
    second = jsonl_line(id="8", mentions=[{"start": g[0], "end": g[1], "text": "Gout", "type": "Disease", "links": [{"nil": True}]}])
    return jsonl_line() + "\n" + second + "\n"


BRAT_TEXT = "Asthma attack in children.\nGout was seen.\n"


def brat_seed() -> dict[str, str]:
    return {
        "doc1.txt": BRAT_TEXT,
        "doc1.ann": "T1\tDisease 0 6\tAsthma\nN1\tReference T1 MESH:D001249\tAsthma\nT2\tDisease 27 31\tGout\n#1\tAnnotatorNotes T1\tnote\n",
        "doc2.txt": "Seizures in infants.",
        "doc2.ann": "T1\tDisease 0 8\tSeizures\nN1\tReference T1 MESH:D012640\tSeizures\n",
    }


MEDIC_HEADER = (
    "# The Comparative Toxicogenomics Database (CTD) - a slice written for the fuzz corpus\n"
    "#\n"
    "# Report created: Wed Jan 01 00:00:00 UTC 2025\n"
    "#\n"
    "# Fields:\n"
    "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"
    "#\n"
)
MEDIC_ROWS = [
    "Diabetes Mellitus\tMESH:D003920\tDO:DOID:9351\tA group of disorders.\tMESH:D044882\tC18.452.394.750\tC18.452.394\tDiabetes|Diabetes Mellitus\tMetabolic disease",
    "Diabetes Mellitus, Type 2\tMESH:D003924\tOMIM:125853\t\tMESH:D003920\t\t\tNIDDM|Type 2 Diabetes\tMetabolic disease",
    "Diseases\tMESH:C\t\t\t\t\t\t\t",
    "Glucose Metabolism Disorders\tMESH:D044882\t\t\tMESH:C\t\t\t\tMetabolic disease",
]


def medic_seed(rows: list[str] | None = None) -> str:
    return MEDIC_HEADER + "".join(r + "\n" for r in (MEDIC_ROWS if rows is None else rows))


DNORM_LINES = [
    "C565588||Epidermolysis Bullosa With Diaphragmatic Hernia",
    "C567755|613097||Tooth Agenesis, Selective, 6|STHAG6",
    "D003920||Diabetes Mellitus|Diabetes",
    "D003924||Diabetes Mellitus, Type 2",
    "D003924||NIDDM",
]


def dnorm_seed(lines: list[str] | None = None) -> str:
    return "".join(line + "\n" for line in (DNORM_LINES if lines is None else lines))


OBO_HEADER = "format-version: 1.2\ndata-version: fuzz/2025-01-01\nsubsetdef: core \"Core terms\"\nontology: fz\n\n"
OBO_TERMS = [
    "[Term]\nid: FZ:0000001\nname: All\n",
    "[Term]\nid: FZ:0000118\nname: Phenotypic abnormality\nis_a: FZ:0000001 ! All\nsubset: core\n",
    '[Term]\nid: FZ:0001250\nname: Seizure\nalt_id: FZ:0002279\ndef: "An intermittent abnormality." [PMID:1]\n'
    'synonym: "Epileptic seizure" RELATED []\nis_a: FZ:0000118 ! Phenotypic abnormality\n',
    "[Term]\nid: FZ:0000003\nname: obsolete term\nis_obsolete: true\n",
]


def obo_seed(terms: list[str] | None = None, header: str = OBO_HEADER) -> str:
    return header + "\n".join(OBO_TERMS if terms is None else terms) + "\n[Typedef]\nid: part_of\nname: part of\n"


UMLS_FIXTURE = HERE.parent / "fixtures" / "umls" / "2099AA" / "META"  # an invented release (UMLS is licensed)


def umls_seed(drop: tuple[str, ...] = (), **replace: list[str]) -> dict[str, str]:
    """The fixture release's RRF files (a folder the test zips, as an upload is), with files dropped or replaced
    by lists of lines (keyword: the file's name without .RRF)."""
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted(UMLS_FIXTURE.glob("*.RRF")) if p.name not in drop}
    for stem, lines in replace.items():
        files[f"{stem}.RRF"] = "".join(line + "\n" for line in lines)
    return files


def umls_lines(stem: str) -> list[str]:
    return (UMLS_FIXTURE / f"{stem}.RRF").read_text(encoding="utf-8").splitlines()


def pubmed_article(pmid: str = "7", title: str = TITLE, abstract: str = ABSTRACT) -> str:
    body = f"<Abstract><AbstractText Label=\"RESULTS\">{abstract}</AbstractText></Abstract>" if abstract else ""
    return (
        f"<PubmedArticle><MedlineCitation Status=\"MEDLINE\" Owner=\"NLM\">\n<PMID Version=\"1\">{pmid}</PMID>\n"
        f"<Article><ArticleTitle>{title}</ArticleTitle>\n{body}\n</Article>\n</MedlineCitation>\n"
        "<PubmedData><PublicationStatus>ppublish</PublicationStatus></PubmedData></PubmedArticle>\n"
    )


def pubmed_set(*items: str) -> str:
    return '<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n' + "".join(items) + "</PubmedArticleSet>\n"


def pubmed_seed() -> str:
    deletion = "<DeleteCitation>\n<PMID Version=\"1\">9</PMID>\n</DeleteCitation>\n"
    return pubmed_set(pubmed_article(), pubmed_article("8", "Seizures", "Febrile seizures in 12 infants."), deletion)


def pubannotation_document(**overrides: object) -> dict:
    a = span(TEXT, "Asthma")
    document = {
        "text": TEXT, "sourcedb": "PubMed", "sourceid": "7",
        "denotations": [{"id": "T1", "span": {"begin": a[0], "end": a[1]}, "obj": "D001249"}],
        "attributes": [{"id": "A1", "subj": "T1", "pred": "type", "obj": "Disease"}],
    }
    document.update(overrides)
    return document


def pubannotation_seed() -> str:
    return json.dumps([pubannotation_document(), pubannotation_document(sourceid="8", denotations=[])], indent=1)


def text_seed() -> str:
    return f"{TITLE}\n\n{ABSTRACT}\n"


SEED_FILES: dict[str, tuple[str, str | dict[str, str]]] = {
    "pubtator": ("pubtator.txt", pubtator_seed()),
    "bioc-xml": ("bioc.xml", bioc_xml_seed()),
    "bioc-json": ("bioc.json", bioc_json_seed()),
    "jsonl": ("documents.jsonl", jsonl_seed()),
    "brat": ("brat", brat_seed()),
    "medic": ("CTD_diseases.tsv", medic_seed()),
    "dnorm": ("dnorm.txt", dnorm_seed()),
    "text": ("note.txt", text_seed()),
    "pubmed-xml": ("pubmed24n0001.xml", pubmed_seed()),
    "pubannotation": ("pubannotation.json", pubannotation_seed()),
    "obo": ("terms.obo", obo_seed()),
    "umls": ("2099AA", umls_seed()),
}

# --- shared malformations -------------------------------------------------------------------------------

BINARY = (bytes(range(128, 256)) + bytes(range(128))) * 4  # every byte value, the first not UTF-8
LATIN1 = "Sj\u00f6gren syndrome".encode("latin-1")  # b"Sj\xf6gren": a Latin-1 file, not UTF-8
UTF16 = "7|t|Asthma\n".encode("utf-16")  # a byte-order mark FF FE, then NULs between the letters


def gz(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return gzip.compress(data, mtime=0)


def corrupt_gz(text: str) -> bytes:
    """A gzip stream whose deflate data is damaged (not merely cut short): zlib fails mid-stream."""
    data = bytearray(gz(text))
    for i in range(20, min(len(data) - 8, 60)):
        data[i] ^= 0x5A
    return bytes(data)


def big_text() -> str:
    # Incompressible enough that corrupt_gz really damages the deflate stream, not a stored block.
    return "".join(f"{i}\t{(i * 7919) % 10007}\tterm {i * 31 % 97}\n" for i in range(400))


def pubtator_cases() -> list[Case]:
    seed = pubtator_seed()
    head = f"7|t|{TITLE}\n7|a|{ABSTRACT}\n"
    return [
        Case("empty.txt", "", "FormatError", ["no documents: the file is empty"]),
        Case("blank-lines-only.txt", "\n\n   \n", "FormatError", ["no documents"]),
        Case("truncated-annotation.txt", head + "7\t0\t6\tAsth", "ParseError", ["expected 'PMID start end text type [ids]', found 4 columns"], line=3),
        Case("latin1.txt", b"7|t|" + LATIN1 + b"\n7|a|x\n", "ParseError", ["not UTF-8 text"], line=1),
        Case("invalid-utf8-line-3.txt", head.encode() + b"7\t0\t6\tAsthma\tDis\xe9ase\tD1\n", "ParseError", ["not UTF-8 text"], line=3),
        Case("utf16.txt", UTF16, "ParseError", ["not UTF-8 text"], line=1),
        Case("nul-in-title.txt", "7|t|Asthma\x00 attack\n7|a|x\n", "ParseError", ["field 'title' contains a NUL character"], line=1),
        Case("nul-in-type.txt", head + "7\t0\t6\tAsthma\tDis\x00ease\tD001249\n", "ParseError", ["field 'type' contains a NUL character"], line=3),
        Case("binary-garbage.txt", BINARY, "ParseError", ["not UTF-8 text"], line=1),
        Case("bioc-xml-given-as-pubtator.txt", bioc_xml_seed(), "ParseError", ["annotation line before any 'PMID|t|title' line"], line=1),
        Case("span-out-of-range.txt", head + "7\t0\t400\tAsthma\tDisease\tD001249\n", "ParseError", ["span 0-400 outside the document text (length 63)"], line=3),
        Case("negative-offset.txt", head + "7\t-5\t6\tAsthma\tDisease\tD001249\n", "ParseError", ["span -5-6 outside the document text"], line=3),
        Case("non-numeric-offset.txt", head + "7\tzero\t6\tAsthma\tDisease\tD001249\n", "ParseError", ["offsets 'zero' '6' are not integers"], line=3),
        Case("huge-offset.txt", head + "7\t0\t" + "9" * 5000 + "\tAsthma\tDisease\tD001249\n", "ParseError", ["are not integers"], line=3),
        Case("missing-columns.txt", head + "7\t0\t6\tAsthma\n", "ParseError", ["found 4 columns"], line=3),
        Case("span-text-mismatch.txt", head + "7\t0\t6\tGout!!\tDisease\tD001249\n", "ParseError", ["span 0-6 reads 'Asthma' in the text, the file says 'Gout!!'"], line=3),
        Case("annotation-of-another-document.txt", head + "8\t0\t6\tAsthma\tDisease\tD001249\n", "ParseError", ["annotation for '8' inside document 7"], line=3),
        Case("abstract-without-title.txt", "7|a|Gout\n", "ParseError", ["abstract of 7 without its title line"], line=1),
        Case("annotation-before-title.txt", "7\t0\t6\tAsthma\tDisease\tD1\n" + seed, "ParseError", ["annotation line before any 'PMID|t|title' line"], line=1),
        Case("document-id-too-long.txt", "1" * 200 + "|t|Asthma\n", "ParseError", ["a document id must have 1 to 120 characters"], line=1),
        Case("mention-type-too-long.txt", head + "7\t0\t6\tAsthma\t" + "T" * 100 + "\tD001249\n", "ParseError", ["mention type", "is longer than 64"], line=3),
        Case("concept-id-too-long.txt", head + "7\t0\t6\tAsthma\tDisease\t" + "D" * 300 + "\n", "ParseError", ["is longer than"], line=3),
        Case("too-many-composite-parts.txt", head + "7\t0\t6\tAsthma\tDisease\t" + "|" * 32768 + "\n", "ParseError", ["field 'part' must be 0 to 32767 (found 32768)"], line=3),
        Case("absurdly-long-title.txt", f"7|t|{LONG}\n7|a|x\n", "ParseError", ["the document text is 12,002 characters, over the 10,000-character limit (IMPORT_MAX_DOCUMENT_CHARS)"], line=1),
        Case("truncated.txt.gz", gz(seed)[:60], "ParseError", ["unreadable or truncated file"]),
        Case("corrupt.txt.gz", corrupt_gz(big_text()), "ParseError", ["unreadable or truncated file"]),
        Case("not-gzip.txt.gz", seed, "ParseError", ["unreadable or truncated file (Not a gzipped file"], line=1),
    ]


def bioc_xml_cases() -> list[Case]:
    seed = bioc_xml_seed()
    lines = seed.splitlines(keepends=True)
    return [
        Case("empty.xml", "", "FormatError", ["not well-formed XML"], line=1),
        Case("header-only.xml", "<?xml version='1.0' encoding='utf-8'?>\n", "FormatError", ["not well-formed XML"]),
        Case("empty-collection.xml", "<?xml version='1.0'?>\n<collection><source/><date/><key/></collection>\n", "FormatError", ["no documents"]),
        Case("truncated.xml", seed[: len(seed) // 2], "FormatError", ["not well-formed XML"]),
        Case("unclosed-tag.xml", seed.replace("</document>\n<document>", "<document>", 1), "FormatError", ["not well-formed XML"]),
        Case("latin1.xml", "".join(lines[:3]).encode() + b"<passage><offset>0</offset><text>" + LATIN1 + b"</text></passage></document></collection>\n", "FormatError", ["not UTF-8 text"], line=4),
        Case("nul-byte.xml", seed.replace("Asthma attack", "Asthma\x00attack"), "FormatError", ["not well-formed XML"], line=4),
        Case("binary-garbage.xml", BINARY, "FormatError", ["not UTF-8 text"], line=1),
        Case("pubtator-given-as-bioc.xml", pubtator_seed(), "FormatError", ["not well-formed XML"], line=1),
        Case("json-given-as-bioc.xml", bioc_json_seed(), "FormatError", ["not well-formed XML"], line=1),
        Case("not-a-collection.xml", "<?xml version='1.0'?>\n<html><body>Asthma</body></html>\n", "FormatError", ["not a BioC collection", "<html>"]),
        Case("document-without-id.xml", seed.replace("<id>7</id>", ""), "FormatError", ["document #1", "the document has no id"]),
        Case("span-out-of-range.xml", seed.replace('offset="0" length="6"', 'offset="0" length="600"', 1), "FormatError", ["document 7 / annotation 1", "span 0-600 outside the document text"]),
        Case("negative-location.xml", seed.replace('offset="0" length="6"', 'offset="-3" length="9"', 1), "FormatError", ["document 7 / annotation 1", "span -3-6 outside"]),
        Case("non-numeric-passage-offset.xml", seed.replace("<offset>0</offset>", "<offset>zero</offset>", 1), "FormatError", ["document 7 / passage 1", "field 'offset' must be an integer (found 'zero')"]),
        Case("missing-passage-offset.xml", seed.replace("<offset>0</offset>", "", 1), "FormatError", ["document 7 / passage 1", "field 'offset' must be an integer (found None)"]),
        Case("non-numeric-length.xml", seed.replace('length="6"', 'length="six"', 1), "FormatError", ["document 7 / annotation 1", "location field 'length' must be an integer (found 'six')"]),
        Case("annotation-without-id.xml", seed.replace('<annotation id="1">', "<annotation>", 1), "FormatError", ["document 7", "annotation", "no id"]),
        Case("location-without-offset.xml", seed.replace('offset="0" length="6"', 'length="6"', 1), "FormatError", ["document 7 / annotation 1", "location field 'offset'"]),
        Case("annotation-without-location.xml", seed.replace('<location offset="0" length="6"/>', "", 1), "FormatError", ["document 7 / annotation 1", "the annotation has no location"]),
        Case("span-text-mismatch.xml", seed.replace("<text>Asthma</text>", "<text>Gout!!</text>", 1), "FormatError", ["document 7 / annotation 1", "span 0-6 reads 'Asthma' in the text, the file says 'Gout!!'"]),
        Case("overlapping-passages.xml", seed.replace(f"<offset>{len(TITLE) + 1}</offset>", "<offset>3</offset>", 1), "FormatError", ["document 7 / passage 2", "overlaps the text before it"]),
        Case("huge-passage-offset.xml", seed.replace(f"<offset>{len(TITLE) + 1}</offset>", "<offset>1000000000000</offset>", 1), "FormatError", ["document 7 / passage 2", "field 'offset' is 1,000,000,000,000 characters, over the 10,000-character limit"]),
        Case("absurdly-long-text.xml", seed.replace(ABSTRACT, LONG, 1), "FormatError", ["document 7 / passage 2", "over the 10,000-character limit (IMPORT_MAX_DOCUMENT_CHARS)"]),
        Case("entity-expansion.xml", billion_laughs(), "FormatError", ["not well-formed XML"]),
        Case("external-entity.xml", "<?xml version='1.0'?>\n<!DOCTYPE collection [<!ENTITY x SYSTEM \"file:///etc/hostname\">]>\n"
             "<collection><document><id>1</id><passage><offset>0</offset><text>&x;</text></passage></document></collection>\n",
             "FormatError", ["not well-formed XML", "Entity 'x' not defined"], line=3),
        Case("deeply-nested.xml", "<collection>" + "<infon>" * 1000 + "</infon>" * 1000 + "</collection>", "FormatError", ["not well-formed XML"]),
    ]


def billion_laughs() -> str:
    entities = ['<!ENTITY a "' + "a" * 64 + '">']
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        entities.append(f'<!ENTITY {name} "' + f"&{prev};" * 20 + '">')
    return (
        "<?xml version='1.0'?>\n<!DOCTYPE collection [\n" + "\n".join(entities) + "\n]>\n"
        "<collection><document><id>1</id><passage><offset>0</offset><text>&h;</text></passage></document></collection>\n"
    )


def bioc_json_cases() -> list[Case]:
    seed = bioc_json_seed()
    doc = bioc_json_document()

    def with_doc(**changes: object) -> str:
        return json.dumps(bioc_json_collection({**doc, **changes}), indent=1) + "\n"

    def with_passage(index: int, **changes: object) -> str:
        passages = [dict(p) for p in doc["passages"]]
        passages[index].update(changes)
        return with_doc(passages=passages)

    def deep(levels: int) -> str:
        return "[" * levels + "]" * levels

    return [
        Case("empty.json", "", "FormatError", ["not BioC JSON"], line=1),
        Case("empty-collection.json", json.dumps(bioc_json_collection()), "FormatError", ["no documents"]),
        Case("truncated.json", seed[: len(seed) // 2], "FormatError", ["not BioC JSON"]),
        Case("latin1.json", b"{\n\"source\": \"" + LATIN1 + b"\",\n\"documents\": []}\n", "FormatError", ["not UTF-8 text"], line=2),
        Case("nul-in-text.json", with_passage(1, text="Gout and diabetes\u0000"), "FormatError", ["document 7", "field 'text' contains a NUL character"]),
        Case("lone-surrogate.json", with_passage(0, text="Asthma \ud800ttack in children"), "FormatError", ["document 7", "field 'title' contains a lone surrogate (U+D800)"]),
        Case("binary-garbage.json", BINARY, "FormatError", ["not UTF-8 text"], line=1),
        Case("pubtator-given-as-bioc.json", pubtator_seed(), "FormatError", ["not BioC JSON"], line=1),
        Case("xml-given-as-bioc.json", bioc_xml_seed(), "FormatError", ["not BioC JSON"], line=1),
        Case("top-level-array.json", "[]\n", "FormatError", ["not a BioC JSON collection"]),
        Case("top-level-string.json", '"documents"\n', "FormatError", ["not a BioC JSON collection"]),
        Case("missing-documents.json", '{"source": "", "date": "", "key": "", "infons": {}}\n', "FormatError", ["documents"]),
        Case("documents-not-a-list.json", '{"source": "", "date": "", "key": "", "infons": {}, "documents": 5}\n', "FormatError", ["documents"]),
        Case("document-without-id.json", with_doc(id=""), "FormatError", ["document #1", "the document has no id"]),
        Case("passage-offset-null.json", with_passage(0, offset=None), "FormatError", ["document 7 / passage 1", "field 'offset' must be an integer (found None)"]),
        Case("passage-offset-nan.json", with_passage(1, offset=float("nan")), "FormatError", ["document 7 / passage 2", "field 'offset' must be an integer (found nan)"]),
        Case("location-length-string.json", json.dumps(bioc_json_collection(bioc_json_document(length="six"))), "FormatError", ["document 7 / annotation 1", "location field 'length' must be an integer (found 'six')"]),
        Case("span-out-of-range.json", json.dumps(bioc_json_collection(bioc_json_document(length=600))), "FormatError", ["document 7 / annotation 1", "span 0-600 outside the document text"]),
        Case("negative-offset.json", json.dumps(bioc_json_collection(bioc_json_document(offset=-3, length=9))), "FormatError", ["document 7 / annotation 1", "span -3-6 outside"]),
        Case("span-text-mismatch.json", json.dumps(bioc_json_collection(bioc_json_document(text="Gout!!"))), "FormatError", ["document 7 / annotation 1", "span 0-6 reads 'Asthma'"]),
        Case("text-a-number.json", with_passage(0, text=12), "FormatError", ["document 7 / passage 1", "field 'text' must be a string (found 12)"]),
        Case("document-id-an-object.json", with_doc(id={"a": 1}), "FormatError", ["document #1", "field 'id' must be a string (found {'a': 1})"]),
        Case("passage-offset-a-string.json", with_passage(0, offset="0"), "FormatError", ["document 7 / passage 1", "field 'offset' must be an integer (found '0')"]),
        Case("huge-integer.json", seed.replace('"offset": 0', '"offset": ' + "9" * 5000, 1), "FormatError", ["not BioC JSON"]),
        Case("huge-passage-offset.json", with_passage(1, offset=10**12), "FormatError", ["document 7 / passage 2", "over the 10,000-character limit"]),
        Case("deeply-nested.json", '{"source": "", "infons": {"x": ' + deep(5000) + '}, "documents": []}\n', "FormatError", ["nested too deeply"], line=1),
        Case("absurdly-long-text.json", with_passage(1, text=LONG), "FormatError", ["document 7 / passage 2", "over the 10,000-character limit (IMPORT_MAX_DOCUMENT_CHARS)"]),
    ]


def jsonl_cases() -> list[Case]:
    good = jsonl_line()
    mention = json.loads(good)["mentions"][0]

    def line2(**overrides: object) -> str:
        return good + "\n" + jsonl_line(**{"id": "8", **overrides}) + "\n"

    def m2(**changes: object) -> str:
        return line2(mentions=[{**mention, **changes}])

    return [
        Case("empty.jsonl", "", "FormatError", ["no documents"]),
        Case("blank-lines-only.jsonl", "\n \n\n", "FormatError", ["no documents"]),
        Case("truncated.jsonl", good + "\n" + good[: len(good) // 2], "FormatError", ["not JSON"], line=2),
        Case("latin1.jsonl", good.encode() + b"\n" + good.encode() + b"\n{\"id\": \"" + LATIN1 + b"\", \"text\": \"x\"}\n", "FormatError", ["not UTF-8 text"], line=3),
        Case("utf16.jsonl", good.encode("utf-16"), "FormatError", ["not UTF-8 text"], line=1),
        Case("binary-garbage.jsonl", BINARY, "FormatError", ["not UTF-8 text"], line=1),
        Case("nul-byte-raw.jsonl", good + "\n" + good.replace("Asthma attack", "Asthma\x00attack", 1) + "\n", "FormatError", ["not JSON"], line=2),
        Case("nul-escaped-in-text.jsonl", line2(text=TEXT.replace(" ", "\u0000", 1)), "FormatError", ["field 'text' contains a NUL character"], line=2),
        Case("lone-surrogate.jsonl", line2(title="Asthma \udc80"), "FormatError", ["field 'title'", "surrogate"], line=2),
        Case("pubtator-given-as-jsonl.jsonl", pubtator_seed(), "FormatError", ["not JSON"], line=1),
        Case("bioc-json-given-as-jsonl.jsonl", bioc_json_seed(), "FormatError", ["not JSON"], line=1),
        Case("top-level-array.jsonl", good + "\n[1, 2]\n", "FormatError", ["expected one JSON object per line"], line=2),
        Case("missing-text.jsonl", good + '\n{"id": "8"}\n', "FormatError", ["missing field 'text'"], line=2),
        Case("missing-id.jsonl", good + '\n{"text": "Gout."}\n', "FormatError", ["missing field 'id'"], line=2),
        Case("id-a-list.jsonl", line2(id=["8"]), "FormatError", ["field 'id' has the wrong type (list)"], line=2),
        Case("start-a-string.jsonl", m2(start="0"), "FormatError", ["mention 1", "field 'start' has the wrong type (str)"], line=2),
        Case("start-a-boolean.jsonl", m2(start=False), "FormatError", ["mention 1", "field 'start' has the wrong type (bool)"], line=2),
        Case("negative-start.jsonl", m2(start=-1), "FormatError", ["mention 1", "span -1-6 outside the text"], line=2),
        Case("span-out-of-range.jsonl", m2(end=400), "FormatError", ["mention 1", "span 0-400 outside the text (length 63)"], line=2),
        Case("span-text-mismatch.jsonl", m2(text="Gout!!"), "FormatError", ["mention 1", "span 0-6 reads 'Asthma' in the text, the line says 'Gout!!'"], line=2),
        Case("link-without-concept.jsonl", m2(links=[{"part": 0}]), "FormatError", ["mention 1: link 1", "a link needs a concept_id or nil: true"], line=2),
        Case("link-part-out-of-range.jsonl", m2(links=[{"part": -1, "concept_id": "D1"}]), "FormatError", ["mention 1", "field 'part' must be 0 to 32767 (found -1)"], line=2),
        Case("part-linked-twice.jsonl", m2(links=[{"concept_id": "D1"}, {"concept_id": "D2"}]), "FormatError", ["mention 1", "a composite part is linked twice"], line=2),
        Case("part-texts-nested.jsonl", m2(part_texts=[["a"]]), "FormatError", ["mention 1", "field 'part_texts' must be a list of texts"], line=2),
        Case("metadata-a-list.jsonl", line2(metadata=[1]), "FormatError", ["field 'metadata' has the wrong type (list)"], line=2),
        Case("huge-integer.jsonl", good + "\n" + good.replace('"start": 0', '"start": ' + "9" * 5000, 1) + "\n", "FormatError", ["not JSON"], line=2),
        Case("deeply-nested.jsonl", good + '\n{"id": "8", "text": "Gout.", "metadata": {"a": ' + "[" * 5000 + "]" * 5000 + "}}\n", "FormatError", ["field 'metadata' is nested too deeply"], line=2),
        Case("document-id-too-long.jsonl", line2(id="1" * 200), "FormatError", ["a document id must have 1 to 120 characters"], line=2),
        Case("mention-type-too-long.jsonl", m2(type="T" * 100), "FormatError", ["mention 1", "is longer than 64"], line=2),
        Case("absurdly-long-text.jsonl", line2(text=LONG, mentions=[]), "FormatError", ["the document text is 12,000 characters, over the 10,000-character limit"], line=2),
    ]


def brat_cases() -> list[Case]:
    seed = brat_seed()

    def with_ann(ann: str | bytes, text: str | bytes = BRAT_TEXT) -> dict[str, bytes | str]:
        return {**seed, "doc1.txt": text, "doc1.ann": ann}

    ok = "T1\tDisease 0 6\tAsthma\n"
    archive = zip_of(seed)
    return [
        Case("no-documents", {"doc1.ann": ok}, "FormatError", ["no documents"]),
        Case("span-out-of-range", with_ann(ok + "T2\tDisease 27 400\tGout\n"), "FormatError", ["doc1.ann", "span 27-400 outside the text (length 42)"], line=2),
        Case("negative-offset", with_ann(ok + "T2\tDisease -27 31\tGout\n"), "FormatError", ["doc1.ann", "expected 'T<n><TAB>Type start end[;start end]<TAB>text'"], line=2),
        Case("non-numeric-offset", with_ann(ok + "T2\tDisease twenty 31\tGout\n"), "FormatError", ["doc1.ann", "expected 'T<n><TAB>Type start end"], line=2),
        Case("missing-text-column", with_ann("T1\tDisease 0 6\n"), "FormatError", ["doc1.ann", "expected 'T<n><TAB>Type start end"], line=1),
        Case("span-text-mismatch", with_ann("T1\tDisease 0 6\tGout!!\n"), "FormatError", ["doc1.ann", "span 0-6 reads 'Asthma' in the text, the file says 'Gout!!'"], line=1),
        Case("duplicate-id", with_ann(ok + "T1\tDisease 27 31\tGout\n"), "FormatError", ["doc1.ann", "T1 is defined twice"], line=2),
        Case("reference-to-missing-span", with_ann(ok + "N1\tReference T9 MESH:D1\tx\n"), "FormatError", ["doc1.ann", "Reference to T9, which is not a text-bound annotation"]),
        Case("malformed-reference", with_ann(ok + "N1\tReference T1\n"), "FormatError", ["doc1.ann", "expected 'N<n><TAB>Reference T<n> DB:ID<TAB>name'"], line=2),
        Case("latin1-text", with_ann(ok, b"Asthma attack in " + LATIN1 + b".\n"), "FormatError", ["doc1.txt", "not UTF-8 text"], line=1),
        Case("invalid-utf8-ann", with_ann(ok.encode() + b"T2\tDisease 27 31\tG\xffout\n"), "FormatError", ["doc1.ann", "not UTF-8 text"], line=2),
        Case("nul-in-text", with_ann(ok, "Asthma\x00attack.\n"), "FormatError", ["doc1.txt", "field 'text' contains a NUL character"]),
        Case("huge-offset", with_ann(ok + "T2\tDisease 0 " + "9" * 5000 + "\tGout\n"), "FormatError", ["doc1.ann", "outside the text"], line=2),
        Case("mention-type-too-long", with_ann("T1\t" + "T" * 100 + " 0 6\tAsthma\n"), "FormatError", ["doc1.ann", "is longer than 64"], line=1),
        Case("absurdly-long-text", with_ann(ok, "Asthma " + LONG), "FormatError", ["doc1.txt", "over the 10,000-character limit (IMPORT_MAX_DOCUMENT_CHARS)"]),
        Case("not-a-zip.zip", pubtator_seed(), "FormatError", ["expected a zip archive of .txt and .ann files"]),
        Case("truncated-archive.zip", archive[: len(archive) // 2], "FormatError", ["expected a zip archive"]),
        Case("damaged-member.zip", damaged_member(seed), "FormatError", ["doc1.txt", "damaged zip member"]),
        Case("encrypted-member.zip", patched_zip(seed, flags=0x1), "FormatError", ["doc1.txt", "cannot read the zip member", "encrypted"]),
        Case("unknown-compression.zip", patched_zip(seed, method=99), "FormatError", ["doc1.txt", "cannot read the zip member"]),
        Case("declared-zip-bomb.zip", patched_zip(seed, declared_size=300_000_000), "LimitExceeded",
             ["doc1.ann expands to 300,000,000 bytes, over the 200,000,000-byte limit (IMPORT_MAX_DECOMPRESSED_BYTES)"]),
    ]


def zip_of(files: Mapping[str, bytes | str], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2025, 1, 1, 0, 0, 0))  # fixed: the same bytes on every run
            info.compress_type = method
            content = files[name]
            archive.writestr(info, content.encode() if isinstance(content, str) else content)
    return buffer.getvalue()


def damaged_member(files: dict[str, str]) -> bytes:
    """A stored (uncompressed) archive whose first member's bytes were changed after its CRC was written."""
    data = bytearray(zip_of(files, zipfile.ZIP_STORED))
    at = bytes(data).index(b"Asthma attack")  # in doc1.txt (doc1.ann only says "Asthma")
    data[at] ^= 0x20
    return bytes(data)


def patched_zip(files: dict[str, str], *, flags: int = 0, method: int | None = None, declared_size: int | None = None) -> bytes:
    """A stored archive whose headers were edited afterwards: flag bits set (0x1: encrypted), another compression
    method, or (first member, central directory only) a declared size the member does not have."""
    data = bytearray(zip_of(files, zipfile.ZIP_STORED))
    first = True
    for signature, flags_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = data.find(signature)
        while at >= 0:
            struct.pack_into("<H", data, at + flags_at, struct.unpack_from("<H", data, at + flags_at)[0] | flags)
            if method is not None:
                struct.pack_into("<H", data, at + method_at, method)
            if declared_size is not None and signature == b"PK\x01\x02" and first:
                struct.pack_into("<I", data, at + 24, declared_size)  # the uncompressed size
                first = False
            at = data.find(signature, at + 4)
    return bytes(data)


def medic_cases() -> list[Case]:
    rows = MEDIC_ROWS
    first = MEDIC_HEADER.count("\n") + 1  # the line of the first row

    def with_row(row: str, at: int = 1) -> str:
        return medic_seed(rows[:at] + [row] + rows[at:])

    return [
        Case("empty.tsv", "", "ValueError", ["no concepts: the file holds only header or comment lines"]),
        Case("header-only.tsv", MEDIC_HEADER, "ValueError", ["no concepts: the file holds only header or comment lines (a download cut short?)"]),
        Case("truncated-row.tsv", medic_seed(rows[:1]) + "Diabetes Mellitus, Type 2\tMESH:D0039", "ParseError", ["expected 9 tab-separated columns, found 2"], line=first + 1),
        Case("missing-columns.tsv", with_row("Gout\tMESH:D006073\t\t\t"), "ParseError", ["expected 9 tab-separated columns, found 5"], line=first + 1),
        Case("spaces-for-tabs.tsv", with_row(rows[1].replace("\t", "    ")), "ParseError", ["expected 9 tab-separated columns, found 1"], line=first + 1),
        Case("empty-name.tsv", with_row("\tMESH:D006073\t\t\t\t\t\t\t"), "ParseError", ["empty DiseaseName"], line=first + 1),
        Case("malformed-id.tsv", with_row("Gout\tD006073\t\t\t\t\t\t\t"), "ParseError", ["DiseaseID 'D006073' is not MESH:... or OMIM:..."], line=first + 1),
        Case("duplicate-id.tsv", medic_seed(rows + [rows[0].replace("Diabetes Mellitus\t", "Diabetes\t", 1)]), "ParseError", ["DiseaseID MESH:D003920 appears twice"], line=first + 4),
        Case("latin1.tsv", medic_seed(rows[:2]).encode() + LATIN1 + b"\tMESH:D012859\t\t\t\t\t\t\t\n", "ParseError", ["not UTF-8 text"], line=first + 2),
        Case("nul-in-name.tsv", with_row("Go\x00ut\tMESH:D006073\t\t\t\t\t\t\t"), "ParseError", ["concept MESH:D006073: field 'preferred_name' contains a NUL character"], line=first + 1),
        Case("binary-garbage.tsv", BINARY, "ParseError", ["not UTF-8 text"], line=1),
        Case("pubtator-given-as-medic.tsv", pubtator_seed(), "ParseError", ["expected 9 tab-separated columns, found 1"], line=1),
        Case("obo-given-as-medic.tsv", obo_seed(), "ParseError", ["expected 9 tab-separated columns, found 1"], line=1),
        Case("unrecognisable-format.tsv", "Gout, a disease\nAsthma\n", "ParseError", ["cannot tell the dictionary format"], line=1, sniff=True),
        Case("id-too-long.tsv", with_row("Gout\tMESH:D" + "0" * 200 + "\t\t\t\t\t\t\t"), "ParseError", ["is longer than 100 characters"], line=first + 1),
        Case("slim-mapping-too-long.tsv", with_row("Gout\tMESH:D006073\t\t\t\t\t\t\t" + "S" * 300), "ParseError", ["known type", "is longer than 200 characters"], line=first + 1),
        Case("absurdly-long-synonym.tsv", with_row("Gout\tMESH:D006073\t\t\t\t\t\t" + LONG + "\t"), "ParseError", ["concept MESH:D006073: field 'synonyms' holds a name of 12,000 characters"], line=first + 1),
        Case("truncated.tsv.gz", gz(medic_seed())[:80], "ParseError", ["unreadable or truncated file"]),
        Case("corrupt.tsv.gz", corrupt_gz(MEDIC_HEADER + big_text()), "ParseError", ["unreadable or truncated file"]),
    ]


def dnorm_cases() -> list[Case]:
    lines = DNORM_LINES
    return [
        Case("empty.txt", "", "ValueError", ["no concepts"]),
        Case("blank-lines-only.txt", "\n\n \n", "ValueError", ["no concepts"]),
        Case("no-separator.txt", dnorm_seed(lines[:2] + ["D006073|Gout"] + lines[2:]), "ParseError", ["expected 'ID[|ID...]||Name[|Synonym...]' (no '||' found)"], line=3),
        Case("truncated-line.txt", dnorm_seed(lines[:3]) + "D0039", "ParseError", ["no '||' found"], line=4),
        Case("no-id.txt", dnorm_seed(["||Gout"] + lines), "ParseError", ["no concept id before '||'"], line=1),
        Case("malformed-id.txt", dnorm_seed(lines + ["D00!6073||Gout"]), "ParseError", ["malformed concept id 'D00!6073'"], line=6),
        Case("no-name.txt", dnorm_seed(lines + ["D006073||"]), "ParseError", ["no name after '||'"], line=6),
        Case("duplicate-id.txt", dnorm_seed(lines + ["C565588||Again"]), "ParseError", ["concept id C565588 appears twice"], line=6),
        Case("latin1.txt", dnorm_seed(lines[:2]).encode() + b"D012859||" + LATIN1 + b"\n", "ParseError", ["not UTF-8 text"], line=3),
        Case("nul-in-name.txt", dnorm_seed(lines + ["D006073||Go\x00ut"]), "ParseError", ["concept MESH:D006073: field 'preferred_name' contains a NUL character"], line=6),
        Case("binary-garbage.txt", BINARY, "ParseError", ["not UTF-8 text"], line=1),
        Case("pubtator-given-as-dnorm.txt", pubtator_seed(), "ParseError", ["no '||' found"], line=1),
        Case("medic-given-as-dnorm.txt", medic_seed(), "ParseError", ["no '||' found"], line=1),
        Case("id-too-long.txt", dnorm_seed(lines + ["D" + "0" * 200 + "||Gout"]), "ParseError", ["is longer than 100 characters"], line=6),
        Case("absurdly-long-name.txt", dnorm_seed(lines + ["D006073||" + LONG]), "ParseError", ["concept MESH:D006073: field 'preferred_name' holds a name of 12,000 characters"], line=6),
        Case("truncated.txt.gz", gz(dnorm_seed())[:40], "ParseError", ["unreadable or truncated file"]),
    ]


def obo_cases() -> list[Case]:
    terms = OBO_TERMS
    start = OBO_HEADER.count("\n") + 1  # the line of the first [Term]

    cut = OBO_HEADER + "\n".join(terms[:2]) + "\n[Term]\nid: FZ:0001250\nna"  # a download cut mid-line

    def term_line(index: int) -> int:
        return start + sum(t.count("\n") + 1 for t in terms[:index])

    return [
        Case("empty.obo", "", "ParseError", ["not an OBO file (no format-version header and no [Term] stanza)"], line=1),
        Case("header-only.obo", OBO_HEADER, "ValueError", ["no concepts: the file holds no [Term] stanza, or only obsolete ones"]),
        Case("only-obsolete-terms.obo", obo_seed([terms[3]]), "ValueError", ["no [Term] stanza, or only obsolete ones"]),
        Case("truncated-mid-stanza.obo", cut, "ParseError", ["expected 'tag: value', found 'na'"], line=cut.count("\n") + 1),
        Case("malformed-stanza-header.obo", obo_seed([terms[0], "[Term\nid: FZ:2\nname: Two\n"]), "ParseError", ["malformed stanza header '[Term'"], line=term_line(1)),
        Case("line-without-colon.obo", obo_seed([terms[0], "[Term]\nid: FZ:2\nname Two\n"]), "ParseError", ["expected 'tag: value', found 'name Two'"], line=term_line(1) + 2),
        Case("term-without-id.obo", obo_seed([terms[0], "[Term]\nname: Two\n"]), "ParseError", ["[Term] without an id"], line=term_line(1)),
        Case("term-without-name.obo", obo_seed([terms[0], "[Term]\nid: FZ:2\n"]), "ParseError", ["term FZ:2 has no name"], line=term_line(1)),
        Case("duplicate-id.obo", obo_seed(terms + [terms[0]]), "ParseError", ["term FZ:0000001 defined twice"], line=term_line(4)),
        Case("malformed-synonym.obo", obo_seed([terms[0], "[Term]\nid: FZ:2\nname: Two\nsynonym: Two things EXACT []\n"]), "ParseError", ["malformed synonym in FZ:2: 'Two things EXACT []'"], line=term_line(1)),
        Case("latin1.obo", obo_seed(terms[:1]).encode() + b"[Term]\nid: FZ:2\nname: " + LATIN1 + b"\n", "ParseError", ["not UTF-8 text"], line=obo_seed(terms[:1]).count("\n") + 3),
        Case("nul-in-name.obo", obo_seed([terms[0], "[Term]\nid: FZ:2\nname: T\x00wo\n"]), "ParseError", ["concept FZ:2: field 'preferred_name' contains a NUL character"], line=term_line(1)),
        Case("binary-garbage.obo", BINARY, "ParseError", ["not UTF-8 text"], line=1),
        Case("pubtator-given-as-obo.obo", pubtator_seed(), "ParseError", ["expected 'tag: value', found '7|t|Asthma attack in children'"], line=1),
        Case("medic-given-as-obo.obo", medic_seed(), "ParseError", ["expected 'tag: value'"], line=1),
        Case("id-too-long.obo", obo_seed([terms[0], "[Term]\nid: FZ:" + "0" * 200 + "\nname: Two\n"]), "ParseError", ["is longer than 100 characters"], line=term_line(1)),
        Case("subset-too-long.obo", obo_seed([terms[0], "[Term]\nid: FZ:2\nname: Two\nsubset: " + "s" * 300 + "\n"]), "ParseError", ["known type", "is longer than 200 characters"], line=term_line(1)),
        Case("absurdly-long-synonym.obo", obo_seed([terms[0], f'[Term]\nid: FZ:2\nname: Two\nsynonym: "{LONG}" EXACT []\n']), "ParseError", ["concept FZ:2: field 'synonyms' holds a name of 12,000 characters"], line=term_line(1)),
        Case("truncated.obo.gz", gz(obo_seed())[:70], "ParseError", ["unreadable or truncated file"]),
    ]


def tar_gz_of(files: Mapping[str, bytes | str]) -> bytes:
    """A .tar.gz archive of the files (fixed times and owners: the same bytes on every run)."""
    import tarfile

    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as archive:
        for name in sorted(files):
            content = files[name]
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def text_cases() -> list[Case]:
    note = text_seed()
    two = {"a.txt": note, "b.txt": "Gout was seen.\n"}
    return [
        Case("empty.txt", "", "FormatError", ["the file holds no text (empty, or only blanks)"]),
        Case("blanks-only.txt", "\n \n\t\n", "FormatError", ["the file holds no text"]),
        Case("binary.txt", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\x00<<>>", "FormatError", ["a NUL byte at byte 22", "binary file"], line=3),
        Case("latin1.txt", note.encode() + LATIN1 + b" was seen.\n", "FormatError", ["not UTF-8 text"], line=4),
        Case("utf16.txt", "Asthma at night.\n".encode("utf-16"), "FormatError", ["a NUL byte", "binary file"], line=1),
        Case("binary-garbage.txt", BINARY, "FormatError", ["a NUL byte at byte 128", "binary file"], line=1),
        Case("absurdly-long.txt", LONG, "FormatError", ["12,000 characters", "IMPORT_MAX_DOCUMENT_CHARS"]),
        Case("not-a-zip.zip", note, "FormatError", ["expected a zip archive of .txt files"]),
        Case("truncated-archive.zip", zip_of(two)[:60], "FormatError", ["expected a zip archive"]),
        Case("no-text-members.zip", zip_of({"a.pdf": "%PDF", "notes/readme.md": "#"}), "FormatError", ["no .txt files in the archive"]),
        Case("empty-member.zip", zip_of({"a.txt": note, "b.txt": ""}), "FormatError", ["b.txt", "the file holds no text"]),
        Case("binary-member.zip", zip_of({"a.txt": note, "b.txt": b"MZ\x90\x00\x03"}), "FormatError", ["b.txt", "a NUL byte", "binary file"], line=1),
        Case("latin1-member.zip", zip_of({"a.txt": note, "b.txt": b"line one\n" + LATIN1}), "FormatError", ["b.txt", "not UTF-8 text"], line=2),
        Case("encrypted-member.zip", patched_zip(two, flags=0x1), "FormatError", ["a.txt", "cannot read the zip member", "encrypted"]),
        Case("declared-zip-bomb.zip", patched_zip(two, declared_size=3_000_000_000), "LimitExceeded", ["IMPORT_MAX_DECOMPRESSED_BYTES"]),
        Case("truncated.tar.gz", tar_gz_of(two)[:50], "FormatError", ["expected a .tar.gz archive of .txt files"]),
        Case("no-text-members.tar.gz", tar_gz_of({"a.pdf": "%PDF"}), "FormatError", ["no .txt files in the archive"]),
        Case("binary-member.tar.gz", tar_gz_of({"a.txt": note, "b.txt": b"\x00\x01"}), "FormatError", ["b.txt", "a NUL byte"], line=1),
    ]


def umls_cases() -> list[Case]:
    conso, sty, rel, hier = (umls_lines(stem) for stem in ("MRCONSO", "MRSTY", "MRREL", "MRHIER"))

    def conso_with(at: int, line: str) -> list[str]:  # line ``at`` (1-based) replaced
        return [*conso[: at - 1], line, *conso[at:]]

    first = conso[0].split("|")

    def row(**fields: str) -> str:  # the first row with some columns changed
        cols = dict(zip("CUI LAT TS LUI STT SUI ISPREF AUI SAUI SCUI SDUI SAB TTY CODE STR SRL SUPPRESS CVF".split(), first, strict=False))  # not the empty piece after the last pipe
        cols.update(fields)
        return "|".join(cols.values()) + "|"

    english = [line for line in conso if "|ENG|" in line]
    return [
        Case("bad-cui", umls_seed(MRCONSO=conso_with(1, row(CUI="X9000001"))), "ParseError", ["MRCONSO.RRF", "CUI 'X9000001' is not C followed by 7 digits"], line=1),
        Case("too-few-fields", umls_seed(MRCONSO=conso_with(2, conso[1].rsplit("|", 3)[0] + "||")), "ParseError", ["expected 18 fields (CUI|LAT|TS|", "found 17"], line=2),
        Case("no-trailing-pipe", umls_seed(MRCONSO=conso_with(3, conso[2][:-1])), "ParseError", ["expected 18 fields", "found 17"], line=3),
        Case("not-sorted", umls_seed(MRCONSO=[conso[3], *conso[:3], *conso[4:]]), "ParseError", ["CUI C9000001 comes after C9000002", "sorted by CUI"], line=2),
        Case("bad-aui", umls_seed(MRCONSO=conso_with(1, row(AUI="9000001"))), "ParseError", ["AUI '9000001' is not A followed by digits"], line=1),
        Case("latin1-name", {**umls_seed(drop=("MRCONSO.RRF",)), "MRCONSO.RRF": ("\n".join(conso[:4]) + "\n").encode() + row(CUI="C9000003", STR="x").encode().replace(b"|x|", b"|" + LATIN1 + b"|") + b"\n"}, "ParseError", ["not UTF-8 text"], line=5),
        Case("nul-in-name", umls_seed(MRCONSO=conso_with(1, row(STR="Zorb\x00lax"))), "ParseError", ["concept C9000001: field 'preferred_name' contains a NUL character"], line=1),
        Case("empty-name", umls_seed(MRCONSO=conso_with(1, row(STR=""))), "ParseError", ["CUI C9000001: empty STR"], line=1),
        Case("absurdly-long-name", umls_seed(MRCONSO=conso_with(1, row(STR=LONG))), "ParseError", ["concept C9000001: field 'preferred_name' holds a name of 12,000 characters"], line=1),
        Case("no-english-name", umls_seed(MRCONSO=[line for line in conso if "|ENG|" not in line]), "ValueError", ["MRCONSO.RRF: no concepts: no row is left after the filters (languages ENG"]),
        Case("no-mrconso", umls_seed(drop=("MRCONSO.RRF",)), "ValueError", ["not a UMLS release", "holds no MRCONSO.RRF"]),
        Case("mrsty-bad-tui", umls_seed(MRSTY=[*sty[:2], sty[2].replace("|T184|", "|184|"), *sty[3:]]), "ParseError", ["MRSTY.RRF", "TUI '184' is not T followed by 3 digits"], line=3),
        Case("mrsty-nul-in-label", umls_seed(MRSTY=[sty[0].replace("Disease", "Dis\x00ease"), *sty[1:]]), "ParseError", ["MRSTY.RRF", "TUI T047: STY contains a NUL character"], line=1),
        Case("mrhier-bad-paui", umls_seed(MRHIER=[*hier[:1], hier[1].replace("|A9000001|MSH", "|X1|MSH"), *hier[2:]]), "ParseError", ["MRHIER.RRF", "PAUI 'X1' is not A followed by digits"], line=2),
        Case("mrhier-too-many-fields", umls_seed(MRHIER=[*hier, hier[0] + "extra|"]), "ParseError", ["MRHIER.RRF", "expected 9 fields", "found 10"], line=len(hier) + 1),
        Case("mrrel-bad-cui2", umls_seed(drop=("MRHIER.RRF",), MRREL=[rel[0].replace("|PAR|C9000001|", "|PAR|C900000|"), *rel[1:]]), "ParseError", ["MRREL.RRF", "CUI2 'C900000' is not C followed by 7 digits"], line=1),
        Case("only-english-rows-cut-short", umls_seed(MRCONSO=english[:2] + [english[2][:30]]), "ParseError", ["expected 18 fields", "found 6"], line=3),
        Case("sniffed-zip-without-mrconso", {"notes.txt": "Zorblax disorder\n"}, "ParseError", ["a folder or a .zip is read as a UMLS release", "holds no MRCONSO.RRF"], line=1, sniff=True),
        Case("damaged-member.zip", damaged_umls_member(), "ValueError", ["damaged-member.zip/MRCONSO.RRF: unreadable or damaged file"]),
    ]


def damaged_umls_member() -> bytes:
    """A stored archive of the fixture release whose MRCONSO bytes were changed after its CRC was written."""
    data = bytearray(zip_of(umls_seed(), zipfile.ZIP_STORED))
    at = bytes(data).index(b"Zorblax disorder")
    data[at] ^= 0x20
    return bytes(data)


def pubmed_xml_cases() -> list[Case]:
    good = pubmed_seed()
    return [
        Case("empty.xml", "", "FormatError", ["not well-formed XML"], line=1),
        Case("no-articles.xml", pubmed_set(), "FormatError", ["no PubmedArticle or DeleteCitation"]),
        Case("truncated.xml", good[: good.index("Seizures")], "FormatError", ["not well-formed XML", "cut short"]),
        Case("truncated.xml.gz", gz(good[: good.index("Seizures")]), "FormatError", ["not well-formed XML"]),
        Case("corrupt.xml.gz", corrupt_gz(pubmed_set(*(pubmed_article(str(i), big_text()[i:i + 80]) for i in range(60)))),
             "FormatError", ["gzip stream is damaged"]),
        Case("missing-pmid.xml", pubmed_set(pubmed_article().replace('<PMID Version="1">7</PMID>', "")), "FormatError",
             ["PubmedArticle #1", "has no PMID"]),
        Case("no-title-or-abstract.xml", pubmed_set(pubmed_article(title="", abstract="")), "FormatError",
             ["PubmedArticle 7", "neither a title nor an abstract"]),
        Case("pmid-too-long.xml", pubmed_set(pubmed_article(pmid="9" * 200)), "FormatError", ["a document id must have"]),
        Case("text-too-long.xml", pubmed_set(pubmed_article(abstract=LONG)), "FormatError", ["PubmedArticle 7", "over the 10,000-character limit"]),
        Case("latin1.xml", pubmed_set(pubmed_article(title="Sjogren")).encode().replace(b"Sjogren", LATIN1),
             "FormatError", ["not well-formed XML"], line=5),
        Case("binary-garbage.xml", BINARY, "FormatError", ["not well-formed XML"], line=1),
        Case("mismatched-tag.xml", good.replace("</ArticleTitle>", "</Title>", 1), "FormatError", ["not well-formed XML"], line=5),
        Case("bioc-given-as-pubmed.xml", bioc_xml_seed(), "FormatError", ["no PubmedArticle or DeleteCitation"]),
        Case("pubtator-given-as-pubmed.xml", pubtator_seed(), "FormatError", ["not well-formed XML"], line=1),
    ]


def pubannotation_cases() -> list[Case]:
    one = pubannotation_document

    def doc(**overrides: object) -> str:
        return json.dumps(one(**overrides))

    return [
        Case("empty.json", "", "FormatError", ["not JSON"], line=1),
        Case("empty-array.json", "[]", "FormatError", ["no documents"]),
        Case("truncated.json", pubannotation_seed()[:60], "FormatError", ["not JSON"]),
        Case("latin1.json", b'{"text": "' + LATIN1 + b'", "sourceid": "7"}', "FormatError", ["not UTF-8 text"], line=1),
        Case("binary-garbage.json", BINARY, "FormatError", ["not UTF-8 text"], line=1),
        Case("a-number.json", "3", "FormatError", ["document #1", "an object with a string 'text'"]),
        Case("missing-text.json", json.dumps({"sourceid": "7"}), "FormatError", ["an object with a string 'text'"]),
        Case("missing-sourceid.json", doc(sourceid=""), "FormatError", ["has no 'sourceid'"]),
        Case("span-outside-text.json", doc(denotations=[{"id": "T1", "span": {"begin": 0, "end": 999}, "obj": "D1"}]),
             "FormatError", ["denotation T1", "outside the document text"]),
        Case("span-not-integers.json", doc(denotations=[{"id": "T1", "span": {"begin": "0", "end": 3}}]),
             "FormatError", ["denotation T1", "'begin': integer"]),
        Case("denotations-not-array.json", doc(denotations={"T1": 1}), "FormatError", ["field 'denotations' must be an array"]),
        Case("nul-in-text.json", doc(text=TEXT.replace(" ", "\u0000", 1)), "FormatError", ["contains a NUL character"]),
        Case("bioc-given-as-pubannotation.json", bioc_json_seed(), "FormatError", ["an object with a string 'text'"]),
        Case("text-too-long.json", doc(text=LONG, denotations=[]), "FormatError", ["document 7", "over the 10,000-character limit"]),
    ]


CASES = {
    "pubtator": pubtator_cases,
    "bioc-xml": bioc_xml_cases,
    "bioc-json": bioc_json_cases,
    "jsonl": jsonl_cases,
    "brat": brat_cases,
    "medic": medic_cases,
    "dnorm": dnorm_cases,
    "obo": obo_cases,
    "text": text_cases,
    "umls": umls_cases,
    "pubmed-xml": pubmed_xml_cases,
    "pubannotation": pubannotation_cases,
}

HEADER = """\
# What each file of this folder must be refused with, by the {importer} importer (written by
# tests/fuzz/make_corpus.py: add a case there). `error` is the exception's class, `line` the line the message
# names (when the file has lines), `says` what else it must contain; every message names the file too.
# A refused file leaves the database as it was (tests/integration/test_fuzz_corpus.py).
"""


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string with ASCII escapes is a TOML basic string


def write_folder(folder: Path, files: dict[str, bytes | str]) -> None:
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).write_bytes(content.encode() if isinstance(content, str) else content)


def main() -> None:
    shutil.rmtree(CORPUS, ignore_errors=True)
    shutil.rmtree(SEEDS, ignore_errors=True)
    SEEDS.mkdir(parents=True)
    for importer, (name, content) in SEED_FILES.items():
        target = SEEDS / importer / name
        if isinstance(content, dict):
            write_folder(target, dict(content))
        else:
            target.parent.mkdir(parents=True)
            target.write_bytes(content.encode())
    for importer, make in CASES.items():
        folder = CORPUS / importer
        folder.mkdir(parents=True)
        entries = [HEADER.format(importer=importer)]
        cases = make()
        assert len({c.name for c in cases}) == len(cases), f"{importer}: two cases of one name"
        for case in cases:
            if isinstance(case.content, dict):
                write_folder(folder / case.name, case.content)
            else:
                data = case.content.encode("utf-8", "surrogatepass") if isinstance(case.content, str) else case.content
                (folder / case.name).write_bytes(data)
            entry = [f"\n[{toml_string(case.name)}]", f"error = {toml_string(case.error)}"]
            if case.line is not None:
                entry.append(f"line = {case.line}")
            entry.append("says = [" + ", ".join(toml_string(s) for s in case.says) + "]")
            if case.sniff:
                entry.append("sniff = true")
            entries.append("\n".join(entry) + "\n")
        (folder / "expected.toml").write_text("".join(entries), encoding="utf-8")
        print(f"{importer}: {len(cases)} cases")


if __name__ == "__main__":
    main()
