"""Run inside a checkout of an earlier commit (tests/integration/test_upgrade_from_previous.py copies it there):
migrate a fresh database with that commit's migrations, then make what a team had made with that version, through
its own commands and services where it has them, and print what must survive the upgrade as one line of JSON.

It imports only what the earlier commit had (webapp.core.models.ImportJob, webapp.training.models as one module).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402


def main() -> None:
    import webapp

    # The earlier commit's code, not this checkout's (an editable install could put it on the path too).
    assert Path(webapp.__file__).resolve().is_relative_to(Path.cwd().resolve()), webapp.__file__
    call_command("migrate", verbosity=0)
    from webapp.core.models import ImportJob
    from webapp.corpus.models import Collection, Mention
    from webapp.curation.services import decide
    from webapp.demo.load import write_demo_files
    from webapp.projects.models import Member
    from webapp.projects.services.membership import add_member, create_project
    from webapp.training.models import Evaluation, IndexVersion, TrainingRun
    from webapp.vocab.models import Concept, Dictionary

    users = get_user_model()
    alice = users.objects.create_user(username="alice", password="x-upgrade-test", email="alice@example.org")
    bob = users.objects.create_user(username="bob", password="x-upgrade-test", email="bob@example.org")
    for user in (alice, bob):
        user.groups.add(Group.objects.get_or_create(name="curator")[0])

    folder = Path(tempfile.mkdtemp())
    dictionary_file, documents_file = write_demo_files(folder)
    call_command("import_dictionary", str(dictionary_file), slug="medic-demo", verbosity=0)
    call_command("import_documents", str(documents_file), collection="demo", dictionary="medic-demo", verbosity=0)
    dictionary = Dictionary.objects.get(slug="medic-demo")
    collection = Collection.objects.get(slug="demo")
    jobs = [ImportJob.objects.create(kind="dictionary", path=str(dictionary_file), params={"slug": "medic-demo"},
                                     state="succeeded", progress=10, report={"names": 10}, created_by=alice),
            ImportJob.objects.create(kind="documents", path=str(documents_file), params={"collection": "demo"},
                                     state="failed", message="line 3: no title", created_by=bob)]

    mentions = list(Mention.objects.filter(document__collection=collection).order_by("pk")[:2])
    concept = Concept.objects.filter(version__dictionary=dictionary).order_by("pk").first()
    decide(user=alice, mention_id=mentions[0].pk, action="relink", concept=concept, seen_updated_at=mentions[0].updated_at)
    decide(user=alice, mention_id=mentions[1].pk, action="nil", seen_updated_at=mentions[1].updated_at, part=None)

    index = IndexVersion.objects.create(dictionary=dictionary, dictionary_version=dictionary.latest_version(),
                                        artifact_path="/srv/artifacts/indexes/1", state="ready", name_count=10)
    evaluation = Evaluation.objects.create(index_version=index, collection=collection, state="succeeded",
                                           metrics={"acc@1": 0.61, "acc@5": 0.83}, created_by=alice)
    run = TrainingRun.objects.create(dictionary=dictionary, method="biosyn", params={"epochs": 2}, state="succeeded",
                                     metrics={"acc@1": 0.61}, loss_history=[{"phase": "biosyn", "step": 1, "loss": 0.5}],
                                     index_version=index, created_by=alice,
                                     gate_result={"passed": True, "evaluation": evaluation.pk})
    run.collections.add(collection)
    project = create_project(by=alice, slug="upgrade", title="Upgrade", collection=collection)
    add_member(project, bob, Member.Role.ANNOTATOR, alice)

    from webapp.curation.models import Decision
    print(json.dumps({
        "decisions": [[d.pk, d.mention_id, d.action, d.concept_id, d.user.username]
                      for d in Decision.objects.order_by("pk")],
        "runs": [[run.pk, run.method, run.params, run.metrics, run.loss_history, run.state, run.created_by.username,
                  [c.slug for c in run.collections.all()]]],
        "gate_names_its_evaluation": run.gate_result["evaluation"] == evaluation.pk,
        "evaluations": [[evaluation.index_version_id, evaluation.collection_id, evaluation.metrics, evaluation.state,
                         evaluation.created_by.username]],
        "import_jobs": [[j.kind, j.path, j.params, j.state, j.message, j.created_by.username] for j in jobs],
        "projects": [[project.pk, project.slug, project.collection_id]],
        "members": sorted([m.user.username, m.role] for m in Member.objects.filter(project=project)),
        "documents": collection.documents.count(),
        "mentions": Mention.objects.count(),
        "concepts": Concept.objects.count(),
    }))


if __name__ == "__main__":
    main()
