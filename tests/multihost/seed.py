"""The multi-host test's data, written on one host after `manage.py migrate`:  python -m tests.multihost.seed

A four-concept dictionary with its sparse index active (no model to load: the web hosts start fast), a gold
collection to train on, a held-out one to evaluate on, a collection of open mentions to decide, and an admin with
an API token. Prints one JSON line: the token, the dictionary's slug, the open mentions' ids, the index's id.
"""

from __future__ import annotations

import json
import os

import django

CONCEPTS = {
    "MESH:D001249": ["Asthma", "Bronchial asthma"],
    "MESH:D006973": ["Hypertension", "High blood pressure"],
    "MESH:D009203": ["Myocardial Infarction", "Heart attack"],
    "MESH:D003924": ["Diabetes Mellitus, Type 2", "Type 2 diabetes"],
}
Doc = tuple[str, str, list[tuple[str, str]]]
TRAIN: list[Doc] = [
    ("1", "Patients with asthma and raised blood pressure were enrolled.",
     [("asthma", "MESH:D001249"), ("raised blood pressure", "MESH:D006973")]),
    ("2", "A cardiac infarction followed the hypertensive crisis.", [("cardiac infarction", "MESH:D009203")]),
    ("3", "Adult onset diabetes and wheezing asthma were common.",
     [("Adult onset diabetes", "MESH:D003924"), ("wheezing asthma", "MESH:D001249")]),
]
HELD_OUT: list[Doc] = [("4", "Bronchial asthma and high blood pressure were noted.",
                        [("Bronchial asthma", "MESH:D001249"), ("high blood pressure", "MESH:D006973")])]
# Open mentions (no gold): what the test's curator decides while hosts die around it.
OPEN: list[Doc] = [(str(5 + i), text, [(mention, "")]) for i, (text, mention) in enumerate([
    ("The child had an attack of asthma at night.", "attack of asthma"),
    ("Her blood pressure was high for years.", "blood pressure was high"),
    ("He survived a heart attack in 2010.", "heart attack"),
    ("Sugar diabetes ran in the family.", "Sugar diabetes"),
])]
SLUG = "mini"


def _collection(dictionary, slug: str, docs: list[Doc], gold: bool):  # type: ignore[no-untyped-def]
    from webapp.corpus.models import Collection, Document, Link, Mention
    from webapp.vocab.models import Concept

    collection = Collection.objects.create(slug=slug, title=slug, dictionary=dictionary, has_gold=gold)
    for external_id, text, mentions in docs:
        document = Document.objects.create(collection=collection, external_id=external_id, text=text)
        for mention_text, concept_id in mentions:
            start = text.index(mention_text)
            mention = Mention.objects.create(document=document, start=start, end=start + len(mention_text),
                                             text=mention_text, mention_type="Disease")
            if gold:
                concept = Concept.objects.get(version__dictionary=dictionary, concept_id=concept_id)
                Link.objects.create(mention=mention, concept=concept, concept_ref=concept_id, origin=Link.Origin.GOLD)
    return collection


def seed() -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from webapp.corpus.models import Mention
    from webapp.curation.services import suggest_for_collection
    from webapp.people.tokens import issue_token
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.models import Concept, Dictionary, DictionaryVersion, Name

    dictionary = Dictionary.objects.create(slug=SLUG, title="Mini")
    version = DictionaryVersion.objects.create(dictionary=dictionary, release="1", source_format="medic", checksum="m" * 64)
    for concept_id, names in CONCEPTS.items():
        concept = Concept.objects.create(version=version, concept_id=concept_id, preferred_name=names[0])
        for i, name in enumerate(names):
            Name.objects.create(concept=concept, text=name, normalized=name.lower(), is_preferred=i == 0)
    _collection(dictionary, "gold", TRAIN, gold=True)
    _collection(dictionary, "dev", HELD_OUT, gold=True)
    work = _collection(dictionary, "work", OPEN, gold=False)
    index = activate_index(build_index(create_index_version(version, None)).pk)
    suggest_for_collection(work.pk)
    admin = get_user_model().objects.create_user("admin", password=os.environ.get("ADMIN_PASSWORD") or None,
                                                 is_staff=True, is_superuser=True)
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    token = issue_token(admin, "multi-host test").key
    mentions = list(Mention.objects.filter(document__collection=work).order_by("pk").values_list("pk", flat=True))
    return {"token": token, "dictionary": SLUG, "mentions": mentions, "index": index.pk}


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    django.setup()
    print(json.dumps(seed()), flush=True)
