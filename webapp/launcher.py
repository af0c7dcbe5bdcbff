"""The run command: bring the whole workbench up on one machine.

    python -m webapp.launcher run [--data FOLDER] [--host 127.0.0.1] [--port 8000]
    python -m webapp.launcher stop        # stops the embedded PostgreSQL and Redis

With no DATABASE_URL / CELERY_BROKER_URL it starts (or reuses) the embedded PostgreSQL and Redis, migrates,
loads the demo data (or imports a data folder), makes sure an admin account exists, starts one Celery
worker (queues default and gpu, with the beat schedule embedded) and the web server, prints the URL and the admin login, and stops the
worker and the web server on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from webapp import embedded

PROJECT_ROOT = embedded.PROJECT_ROOT


def _prepare_environment() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Resolve the embedded services once and hand their URLs to every child process.
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = embedded.postgres_url()
    if not os.environ.get("CELERY_BROKER_URL"):
        os.environ["CELERY_BROKER_URL"] = embedded.redis_url()


def _admin_password() -> tuple[str, bool]:
    """ADMIN_PASSWORD if set; otherwise a random one, generated once and kept in var/admin_password."""
    given = os.environ.get("ADMIN_PASSWORD")
    if given:
        return given, False
    path = embedded.data_dir() / "admin_password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(12))
        path.chmod(0o600)
    return path.read_text().strip(), True


def _setup(data: Path | None) -> tuple[str, str]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)
    from webapp.demo.load import load_demo, load_folder

    if data is not None:
        load_folder(data)
    else:
        load_demo(embedded.data_dir() / "demo")
    _ensure_indexes(dense=data is None)

    username = os.environ.get("ADMIN_USERNAME", "admin")
    password, _generated = _admin_password()
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"is_staff": True, "is_superuser": True})
    if created or not user.check_password(password):
        user.set_password(password)
        user.is_staff = user.is_superuser = True
        user.save()
    user.groups.add(Group.objects.get(name="admin"))
    return username, password


def _ensure_indexes(dense: bool) -> None:
    """Give every dictionary without an active index one, and suggest links for its open mentions.

    The demo dictionary is small, so it gets the dense zero-shot index; a data folder's dictionaries get
    a sparse index at once (seconds for MEDIC), and `manage.py build_index` builds dense or trained ones.
    """
    from webapp.corpus.models import Collection
    from webapp.curation.services import suggest_for_collection
    from webapp.training.models import IndexVersion
    from webapp.training.services import activate_index, build_index, create_index_version
    from webapp.vocab.models import Dictionary

    for dictionary in Dictionary.objects.order_by("slug"):
        if IndexVersion.objects.filter(dictionary=dictionary, state=IndexVersion.State.ACTIVE).exists():
            continue
        version = dictionary.latest_version()
        if version is None:
            continue
        encoder = _zero_shot_encoder() if dense else None
        kind = "dense zero-shot + sparse" if dense else "sparse"
        print(f"building a {kind} index for {dictionary.slug} ...", flush=True)
        index = build_index(create_index_version(version, encoder))
        activate_index(index.pk)
        for collection in Collection.objects.filter(dictionary=dictionary):
            count = suggest_for_collection(collection.pk)
            print(f"suggested links for {count} mentions of {collection.slug}", flush=True)


def _zero_shot_encoder():  # type: ignore[no-untyped-def]
    from linker.encoders.transformer import default_base_model
    from webapp.training.models import EncoderModel

    folder = default_base_model().resolve()
    encoder, _ = EncoderModel.objects.get_or_create(
        name=f"zero-shot-{folder.parent.name}".lower().replace("_", "-")[:120],
        defaults={"method": EncoderModel.Method.ZERO_SHOT, "base_model": str(folder), "artifact_path": str(folder)},
    )
    return encoder


def _wait_for_worker(timeout: float = 60.0) -> bool:
    from webapp.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if app.control.ping(timeout=1.0):
            return True
        time.sleep(0.5)
    return False


def run(data: Path | None, host: str, port: int, workers: int) -> int:
    _prepare_environment()
    print("Preparing the database and data ...", flush=True)
    username, password = _setup(data)
    logs = embedded.data_dir() / "log"
    logs.mkdir(exist_ok=True)
    python = sys.executable
    worker = subprocess.Popen(
        # -B: the one worker also runs the beat schedule (webapp.celery: the stale training run sweep).
        [python, "-m", "celery", "-A", "webapp", "worker", "-Q", "default,gpu", "-c", "1", "-n", "worker@%h", "-B",
         "-s", str(embedded.data_dir() / "celerybeat-schedule"), "--loglevel", "INFO"],
        cwd=PROJECT_ROOT,
        stdout=open(logs / "worker.log", "ab"),
        stderr=subprocess.STDOUT,
    )
    web = subprocess.Popen(
        [python, "-m", "gunicorn", "webapp.wsgi", "--bind", f"{host}:{port}", "--workers", str(workers), "--threads", "4",
         "--access-logfile", str(logs / "access.log"), "--error-logfile", str(logs / "web.log"), "--timeout", "120"],
        cwd=PROJECT_ROOT,
    )
    children = [web, worker]

    def stop(*_: object) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()

    signal.signal(signal.SIGTERM, lambda *a: (stop(), sys.exit(0)))
    worker_ok = _wait_for_worker()
    print()
    print(f"  EL Workbench is running at http://{host}:{port}/")
    print(f"  Log in as {username!r} with password {password!r}")
    print(f"  Worker: {'ready' if worker_ok else 'NOT answering, see ' + str(logs / 'worker.log')}; logs in {logs}")
    print("  Press Ctrl-C to stop (the embedded database keeps running; `python -m webapp.launcher stop` ends it).")
    print(flush=True)
    try:
        while all(child.poll() is None for child in children):
            time.sleep(1)
        failed = [c.args[2] if len(c.args) > 2 else c.args for c in children if c.poll() is not None]
        print(f"A process stopped unexpectedly: {failed}; see {logs}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webapp.launcher", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="start the workbench with demo data (or --data FOLDER)")
    run_p.add_argument("--data", type=Path, help="import the dictionaries and PubTator files of this folder instead of the demo data")
    run_p.add_argument("--host", default="127.0.0.1")
    run_p.add_argument("--port", type=int, default=8000)
    run_p.add_argument("--web-workers", type=int, default=2)
    sub.add_parser("stop", help="stop the embedded PostgreSQL and Redis")
    args = parser.parse_args(argv)
    if args.command == "stop":
        embedded.stop_redis()
        stopped = embedded.stop_postgres()
        print("embedded PostgreSQL and Redis stopped" if stopped else "embedded Redis stopped (no embedded PostgreSQL was running)")
        return 0
    if args.data is not None and not args.data.is_dir():
        parser.error(f"--data {args.data}: not a folder")
    return run(args.data, args.host, args.port, args.web_workers)


if __name__ == "__main__":
    sys.exit(main())
