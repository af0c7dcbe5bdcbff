"""Benchmark: how much curator decisions improve the linker (issue #15); print one JSON object.

    python bench/learning_loop.py [--steps 100,300,1000] [--random-steps 100,300] [--no-retrain]
                                  [--keep-base DIR | --base-artifact DIR] [--no-record]

On a throwaway database, with the workbench's own services and no worker (every step runs in this process):

1. setup: CTD MEDIC imported as ``ctd``; NCBI Disease train imported as a gold collection; BC5CDR development
   imported as the "new collection" (its gold links are only read by this script, never trained on: no run lists
   it). A BioSyn run with the CPU defaults trains the base linker on NCBI train alone; its index is activated
   and the BC5CDR-dev Disease mentions are linked (stored suggestions, as curators see them).
2. each order (the review queue's, i.e. the smallest margin between the top two first, then a random order
   with a fixed seed): decisions replayed from gold through :func:`webapp.curation.services.decisions.decide`,
   the same service the curation screen calls (accept when the top suggestion is gold, else relink to gold),
   up to each step's count; then
   - ``live``: the open mentions are linked again by the same index, which now holds the curators' synonyms;
   - ``retrained`` (unless ``--no-retrain``): a BioSyn run on NCBI train plus every decision so far (its hard
     negatives included), continuing from the base run's encoder (synonym pre-training skipped: the base had it),
     its index activated and the open mentions linked again.
   Acc@1 is measured on the untouched rest (the Disease mentions not decided yet), against the base model's
   Acc@1 on the same mentions, so each step's delta compares like with like. Between orders the decisions,
   curator synonyms and links are removed and the base index is active again.

Acc@1 here is the stored top-1 per part against the gold concept (a composite is right only if every part is);
mentions whose gold concept is not in CTD (NIL, -1) are left out. Goal (issue #15): >= +2 Acc@1 points after the
first 100 decisions, a monotone curve, and the queue ahead of random order.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import shutil
import sys
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

describe_machine = importlib.import_module("bench.import").describe_machine

RESULTS = ROOT / "bench" / "RESULTS.md"
DICTIONARY = "medic/CTD_diseases.tsv.gz"
TRAIN = "ncbi-disease/NCBItrainset_corpus.txt"
NEW = "bc5cdr/CDR_DevelopmentSet.PubTator.txt"
TYPE = "Disease"
SEED = 13


def main(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["TASK_QUEUE_OVERRIDE"] = f"bench-loop-{uuid.uuid4().hex[:8]}"  # nothing here waits for a worker
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    # Every module this run reaches, imported now: a long run must not pick up a half-edited checkout later.
    for module in ("webapp.curation.services.suggestions", "webapp.curation.services.auto_accept",
                   "webapp.curation.services.decisions", "webapp.curation.selectors", "webapp.training.execution",
                   "webapp.training.runs", "webapp.training.services", "webapp.linking.registry", "linker.biosyn",
                   "linker.methods.biosyn", "linker.calibration", "linker.linker", "linker.recipe"):
        importlib.import_module(module)

    data = Path(args.data)
    missing = [rel for rel in (DICTIONARY, TRAIN, NEW) if not (data / rel).is_file()]
    if missing:
        raise SystemExit(f"missing data files under {data}: {', '.join(missing)}")
    machine = describe_machine(connection)
    load_start = round(os.getloadavg()[0], 1)
    original_name = connection.settings_dict["NAME"]
    database = f"bench_loop_{os.getpid()}"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = database
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    artifacts = Path(settings.ARTIFACT_ROOT) / f"bench-loop-{os.getpid()}"
    settings.ARTIFACT_ROOT = artifacts
    t_start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            setup, base_index = prepare(data, args.base_artifact, args.keep_base)
            orders: dict[str, Any] = {}
            plan = [("queue", args.steps), ("random", args.random_steps)]
            for name, steps in plan:
                if not steps:
                    continue
                if orders:
                    reset(base_index)
                orders[name] = replay(name, steps, base_index, retrain=not args.no_retrain)
    finally:
        connection.close()
        connection.creation.destroy_test_db(original_name, verbosity=0)
        shutil.rmtree(artifacts, ignore_errors=True)
    result = {
        "benchmark": "learning_loop",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine,
        "load_avg_1m_at_start": load_start,
        "note": args.note,
        "wall_s": round(time.perf_counter() - t_start, 1),
        "setup": setup,
        "orders": orders,
        "goal": {"acc1_gain_after_100": 0.02, "monotone": True, "queue_beats_random": True},
        "verdict": verdict(orders),
    }
    if args.record:
        append_results(result)
    return result


# --- setup ------------------------------------------------------------------------------------------------------


def prepare(data: Path, base_artifact: Path | None, keep_base: Path | None) -> tuple[dict[str, Any], Any]:
    from django.core.management import call_command

    from webapp.corpus.models import Collection
    from webapp.linking.models import EncoderModel, IndexVersion
    from webapp.training.services import activate_index
    from webapp.vocab.models import Dictionary

    timings: dict[str, Any] = {}
    t0 = time.perf_counter()
    _say("importing CTD MEDIC, NCBI train and BC5CDR dev ...")
    call_command("import_dictionary", str(data / DICTIONARY), "--slug", "ctd", verbosity=0)
    call_command("import_documents", str(data / TRAIN), "--collection", "ncbi-train", "--dictionary", "ctd", verbosity=0)
    call_command("import_documents", str(data / NEW), "--collection", "bc5cdr-dev", "--dictionary", "ctd", verbosity=0)
    timings["import_s"] = round(time.perf_counter() - t0, 1)
    if base_artifact is not None:
        # A base trained by an earlier run of this script (--keep-base): served as an imported linker.
        _say(f"serving the base linker of {base_artifact} ...")
        ctd = Dictionary.objects.get(slug="ctd")
        encoder = EncoderModel.objects.create(name="bench-base", method=EncoderModel.Method.IMPORTED, base_model="",
                                              artifact_path=str(base_artifact))
        index = IndexVersion.objects.create(dictionary=ctd, dictionary_version=ctd.latest_version(), encoder=encoder,
                                            artifact_path=str(base_artifact), state=IndexVersion.State.READY)
        timings["base"] = str(base_artifact)
    else:
        _say("training the base linker on NCBI train (BioSyn, CPU defaults) ...")
        t0 = time.perf_counter()
        base = train(Collection.objects.get(slug="ncbi-train"), params={}, base_model="")
        timings["base_train_s"] = round(time.perf_counter() - t0, 1)
        timings["base_run"] = base.pk
        index = base.index_version
        if keep_base is not None:
            shutil.copytree(index.artifact_path, keep_base, dirs_exist_ok=True)
            timings["base_kept_in"] = str(keep_base)
    activate_index(index.pk)
    t0 = time.perf_counter()
    relink()
    timings["link_s"] = round(time.perf_counter() - t0, 1)
    timings["mentions"] = len(gold_by_mention())
    return timings, index


def train(collection: Any, params: dict[str, Any], base_model: str) -> Any:
    from webapp.training.execution import run_training
    from webapp.training.runs import start_run
    from webapp.vocab.models import Dictionary

    run = start_run(Dictionary.objects.get(slug="ctd"), [collection], params=params, base_model=base_model, send=False)
    state = run_training(run.pk)
    run.refresh_from_db()
    if state != "succeeded":
        raise RuntimeError(f"training run {run.pk} {state}: {run.error}")
    return run


def relink() -> None:
    """Link the new collection's open Disease mentions with the active index (as the suggestion task does)."""
    from webapp.corpus.models import Mention
    from webapp.curation.services.suggestions import suggest_links

    suggest_links(Mention.objects.filter(document__collection__slug="bc5cdr-dev", mention_type=TYPE), "ctd")


def reset(base_index: Any) -> None:
    """Back to the base: no decisions, curator links or synonyms, the base index active, suggestions as it made them."""
    from django.db import transaction

    from webapp.corpus.models import Link, Mention
    from webapp.curation.models import Decision
    from webapp.linking.registry import forget_all
    from webapp.training.services import activate_index
    from webapp.vocab.models import Name

    with transaction.atomic():
        Decision.objects.all().delete()
        Link.objects.filter(origin__in=[Link.Origin.CURATOR, Link.Origin.MODEL], mention__document__collection__slug="bc5cdr-dev").delete()
        Name.objects.filter(source=Name.Source.CURATOR).delete()
        Mention.objects.filter(document__collection__slug="bc5cdr-dev").update(status=Mention.Status.PENDING)
    activate_index(base_index.pk)
    forget_all()
    relink()


# --- measuring --------------------------------------------------------------------------------------------------


def gold_by_mention() -> dict[int, dict[int, set[int]]]:
    """Mention pk -> part -> gold concept pks, for the new collection's Disease mentions whose every part resolves."""
    from webapp.corpus.models import Link
    from webapp.curation.services.decision_rows import part_count

    out: dict[int, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    links = Link.objects.filter(origin=Link.Origin.GOLD, nil=False, concept__isnull=False,
                                mention__document__collection__slug="bc5cdr-dev", mention__mention_type=TYPE)
    mentions = {}
    for link in links.select_related("mention"):
        out[link.mention_id][link.part].add(link.concept_id)
        mentions[link.mention_id] = link.mention
    return {pk: dict(parts) for pk, parts in out.items() if len(parts) == part_count(mentions[pk])}


def top1_right() -> dict[int, bool]:
    """Open mention pk -> whether every part's stored top-1 suggestion is gold."""
    from webapp.corpus.models import Link
    from webapp.curation.models import OPEN_STATUSES

    gold = gold_by_mention()
    top: dict[int, dict[int, int | None]] = defaultdict(dict)
    for mention_id, part, concept_id in Link.objects.filter(
        origin=Link.Origin.MODEL, rank=1, mention_id__in=list(gold), mention__status__in=OPEN_STATUSES,
    ).values_list("mention_id", "part", "concept_id"):
        top[mention_id][part] = concept_id
    return {pk: all(top[pk].get(p) in ids for p, ids in gold[pk].items()) for pk in top}


def accuracy(right: dict[int, bool], on: set[int]) -> float:
    keys = [pk for pk in on if pk in right]
    return round(sum(right[pk] for pk in keys) / len(keys), 4) if keys else 0.0


# --- replaying decisions ----------------------------------------------------------------------------------------


def replay(order: str, steps: list[int], base_index: Any, retrain: bool) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from webapp.corpus.models import Collection, Mention

    user, _ = get_user_model().objects.get_or_create(username="bench-curator")
    gold = gold_by_mention()
    base_right = top1_right()  # the base model's top-1 on every mention, before any decision
    rng = random.Random(SEED)
    decided: set[int] = set()
    curve = [{"decisions": 0, "rest": len(base_right), "acc1": accuracy(base_right, set(base_right))}]
    collection = Collection.objects.get(slug="bc5cdr-dev")
    ncbi = Collection.objects.get(slug="ncbi-train")
    base_encoder = str(Path(base_index.artifact_path) / "encoder")
    for target in steps:
        t0 = time.perf_counter()
        while len(decided) < target:
            batch = next_mentions(order, collection, gold, decided, target - len(decided), rng)
            if not batch:
                break
            for mention in batch:
                decide_from_gold(user, Mention.objects.get(pk=mention), gold[mention])
                decided.add(mention)
        decide_s = time.perf_counter() - t0
        rest = set(gold) - decided
        point: dict[str, Any] = {"decisions": len(decided), "rest": len(rest), "base_acc1_on_rest": accuracy(base_right, rest)}
        t0 = time.perf_counter()
        relink()
        point["live_acc1"] = accuracy(top1_right(), rest)
        point["live_link_s"] = round(time.perf_counter() - t0, 1)
        if retrain:
            from webapp.training.services import activate_index

            _say(f"{order}: {len(decided)} decisions; retraining ...")
            t0 = time.perf_counter()
            run = train(ncbi, params={"skip_pretrain": True}, base_model=base_encoder)
            point["retrain_s"] = round(time.perf_counter() - t0, 1)
            point["retrain_examples"] = {"curator": run.examples.filter(source="curator", negative=False).count(),
                                         "hard_negatives": run.examples.filter(negative=True).count()}
            activate_index(run.index_version_id)
            relink()
            point["retrained_acc1"] = accuracy(top1_right(), rest)
        best = point.get("retrained_acc1", point["live_acc1"])
        point["gain"] = round(best - point["base_acc1_on_rest"], 4)
        point["decide_s"] = round(decide_s, 1)
        _say(f"{order}: {json.dumps(point)}")
        curve.append(point)
        # The retrained index stays active, as a promotion would leave it: the next decisions are made on its
        # suggestions (the next retrain starts from the base encoder again, with every decision so far).
    return {"curve": curve}


def next_mentions(order: str, collection: Any, gold: dict[int, Any], decided: set[int], n: int, rng: random.Random) -> list[int]:
    """The next ``n`` undecided gold mentions: by the review queue's order, or at random."""
    from webapp.curation.selectors import review_queue

    if order == "queue":
        out = []
        for pk in review_queue(collection).filter(mention_type=TYPE).values_list("pk", flat=True).iterator():
            if pk in gold and pk not in decided:
                out.append(pk)
                if len(out) == n:
                    break
        return out
    left = sorted(set(gold) - decided)
    return rng.sample(left, min(n, len(left)))


def decide_from_gold(user: Any, mention: Any, gold_parts: dict[int, set[int]]) -> None:
    """A curator who knows the gold: accept the top suggestion of each part when it is gold, else relink to gold."""
    from webapp.corpus.models import Link
    from webapp.curation.models import Decision
    from webapp.curation.services.decisions import decide
    from webapp.vocab.models import Concept

    for part, ids in sorted(gold_parts.items()):
        mention.refresh_from_db()
        top = mention.links.filter(origin=Link.Origin.MODEL, part=part, rank=1).values_list("concept_id", flat=True).first()
        if top in ids:
            decide(user=user, mention_id=mention.pk, action=Decision.Action.ACCEPT, seen_updated_at=mention.updated_at,
                   part=part)
        else:
            decide(user=user, mention_id=mention.pk, action=Decision.Action.RELINK, seen_updated_at=mention.updated_at,
                   concept=Concept.objects.get(pk=min(ids)), part=part, via=Decision.Via.SEARCH)


def verdict(orders: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    queue = orders.get("queue", {}).get("curve", [])[1:]
    if queue:
        out["gain_after_first_step"] = queue[0]["gain"]
        out["first_step_goal_met"] = queue[0]["gain"] >= 0.02
        gains = [p["gain"] for p in queue]
        out["monotone"] = all(b >= a for a, b in zip(gains, gains[1:], strict=False))
    rand = {p["decisions"]: p["gain"] for p in orders.get("random", {}).get("curve", [])[1:]}
    if queue and rand:
        out["queue_minus_random"] = {p["decisions"]: round(p["gain"] - rand[p["decisions"]], 4)
                                     for p in queue if p["decisions"] in rand}
    return out


def _say(line: str) -> None:
    print(f"[learning-loop] {line}", file=sys.stderr, flush=True)


def append_results(result: dict[str, Any]) -> None:
    lines = [f"\n## learning loop ({result['date']})\n",
             f"- machine: {result['machine']}; load at start {result['load_avg_1m_at_start']}; wall {result['wall_s']} s",
             f"- setup: `{json.dumps(result['setup'])}`"]
    for name, data in result["orders"].items():
        lines.append(f"- {name} order:")
        lines.append("  | decisions | rest | base Acc@1 on rest | live (synonyms) | retrained | gain |")
        lines.append("  |---|---|---|---|---|---|")
        for p in data["curve"][1:]:
            retrained = f"{p['retrained_acc1']:.4f}" if "retrained_acc1" in p else "—"
            lines.append(f"  | {p['decisions']} | {p['rest']} | {p['base_acc1_on_rest']:.4f} | {p['live_acc1']:.4f} | "
                         f"{retrained} | {p['gain']:+.4f} |")
    lines.append(f"- verdict: `{json.dumps(result['verdict'])}`")
    if result["note"]:
        lines.append(f"- note: {result['note']}")
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _steps(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()] if text else []


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=_steps, default=[100, 300, 1000], help="decisions after which to measure (queue order)")
    parser.add_argument("--random-steps", type=_steps, default=[100, 300, 1000], help="the same in random order ('' to skip)")
    parser.add_argument("--no-retrain", action="store_true", help="measure the live synonyms only")
    parser.add_argument("--base-artifact", type=Path, help="serve this linker folder as the base instead of training one")
    parser.add_argument("--keep-base", type=Path, help="copy the base run's linker folder here (for --base-artifact)")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--note", default="")
    parser.add_argument("--no-record", dest="record", action="store_false")
    print(json.dumps(main(parser.parse_args()), indent=2, default=str))
