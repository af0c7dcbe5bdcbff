"""Short demo abstracts written for the workbench, with gold disease mentions marked inline.

Markup: ``[[mention text|ids|type]]`` where ids follow the PubTator conventions ("D001943|D010051" for a
composite, "-1" for no concept). ``render_pubtator`` turns them into a PubTator file with exact offsets.
"""

from __future__ import annotations

import re

DOCUMENTS: list[tuple[str, str, str]] = [
    (
        "demo-1",
        "[[Type 2 diabetes|D003924|SpecificDisease]] and [[hypertension|D006973|SpecificDisease]] in older adults.",
        "Patients with [[non-insulin-dependent diabetes mellitus|D003924|SpecificDisease]] ([[NIDDM|D003924|SpecificDisease]]) "
        "often develop [[high blood pressure|D006973|SpecificDisease]]. Both conditions raise the risk of "
        "[[myocardial infarction|D009203|SpecificDisease]] and [[stroke|D020521|SpecificDisease]]. "
        "Weight loss reduced the incidence of [[chronic kidney disease|D051436|SpecificDisease]] in [[obese|D009765|Modifier]] participants.",
    ),
    (
        "demo-2",
        "Inherited risk of [[breast and ovarian cancer|D001943|D010051|CompositeMention]].",
        "Germline mutations explain a share of familial [[breast cancer|D001943|SpecificDisease]]. Carriers also face "
        "a raised risk of [[ovarian tumours|D010051|SpecificDisease]] and, less often, [[colon cancer|D003110|SpecificDisease]]. "
        "Screening programmes for [[hereditary cancers|D009369|DiseaseClass]] differ between countries.",
    ),
    (
        "demo-3",
        "Cognitive decline in [[Parkinson's disease|D010300|SpecificDisease]].",
        "[[Dementia|D003704|DiseaseClass]] affects many people with [[Parkinson disease|D010300|SpecificDisease]] ([[PD|D010300|SpecificDisease]]). "
        "Its course differs from [[Alzheimer's disease|D000544|SpecificDisease]] ([[AD|D000544|SpecificDisease]]), and from the chorea of "
        "[[Huntington's disease|D006816|SpecificDisease]]. [[Depression|D003866|SpecificDisease]] is a frequent companion.",
    ),
    (
        "demo-4",
        "[[Cystic fibrosis|D003550|SpecificDisease]] lung disease in children.",
        "Children with [[cystic fibrosis|D003550|SpecificDisease]] ([[CF|D003550|SpecificDisease]]) suffer repeated "
        "[[pneumonia|D011014|SpecificDisease]]. Unlike [[asthma|D001249|SpecificDisease]], airway obstruction in CF "
        "is not reversible, and [[liver cirrhosis|D008103|SpecificDisease]] may develop in adolescence.",
    ),
    (
        "demo-5",
        "Infections after travel.",
        "Returning travellers with fever were tested for [[malaria|D008288|SpecificDisease]], "
        "[[influenza|D007251|SpecificDisease]] and [[tuberculosis|D014376|SpecificDisease]]. "
        "Two had undiagnosed [[HIV infection|D015658|SpecificDisease]] and one had [[hepatitis C|D006526|SpecificDisease]].",
    ),
    (
        "demo-6",
        "[[Inflammatory bowel disease|D015212|DiseaseClass]] and joint pain.",
        "In [[Crohn's disease|D003424|SpecificDisease]] and [[ulcerative colitis|D003093|SpecificDisease]], "
        "[[arthritis|D001168|DiseaseClass]] is the most common extra-intestinal sign. It must be told apart from "
        "[[rheumatoid arthritis|D001172|SpecificDisease]] and from a [[sickle cell crisis|D000755|SpecificDisease]]; "
        "one patient had a rare [[syndrome of unknown cause|-1|SpecificDisease]].",
    ),
]

_MARK = re.compile(r"\[\[([^|\]]+)\|([^\]]+)\|([A-Za-z]+)\]\]")


def _strip(marked: str, offset: int) -> tuple[str, list[tuple[int, int, str, str, str]]]:
    """Plain text and (start, end, text, type, ids) with offsets shifted by ``offset``."""
    plain: list[str] = []
    spans: list[tuple[int, int, str, str, str]] = []
    pos = 0
    length = 0
    for m in _MARK.finditer(marked):
        before = marked[pos : m.start()]
        plain.append(before)
        length += len(before)
        text, ids, mtype = m.group(1), m.group(2), m.group(3)
        spans.append((offset + length, offset + length + len(text), text, mtype, ids))
        plain.append(text)
        length += len(text)
        pos = m.end()
    plain.append(marked[pos:])
    return "".join(plain), spans


def render_pubtator() -> str:
    """The demo documents as a PubTator file (offsets count the title, one space, then the abstract)."""
    out: list[str] = []
    for doc_id, marked_title, marked_abstract in DOCUMENTS:
        title, title_spans = _strip(marked_title, 0)
        abstract, abstract_spans = _strip(marked_abstract, len(title) + 1)
        out.append(f"{doc_id}|t|{title}")
        out.append(f"{doc_id}|a|{abstract}")
        for start, end, text, mtype, ids in title_spans + abstract_spans:
            out.append(f"{doc_id}\t{start}\t{end}\t{text}\t{mtype}\t{ids}")
        out.append("")
    return "\n".join(out) + "\n"
