"""The run command: bring the whole workbench up on one machine.

    python -m webapp.launcher run [--data FOLDER] [--host 127.0.0.1] [--port 8000]
    python -m webapp.launcher stop        # stops all the run command started, then the embedded PostgreSQL and Redis

With no DATABASE_URL / CELERY_BROKER_URL it starts (or reuses) the embedded PostgreSQL and Redis, migrates,
loads the demo data (or imports a data folder), makes sure an admin account exists, starts two Celery workers
(:func:`worker_argvs`: one for the long work of queues default and gpu, with the beat schedule embedded; one for the
short work of the interactive queue) and the web server, prints the URL and the admin login, and stops the workers
and the web server on Ctrl-C or SIGTERM. It records its pid and its children's in the data folder
(:mod:`webapp.launched`), so that `stop` ends them before the embedded services.

A worker that dies is restarted (:class:`webapp.supervision.Supervisor`): after 1 s, then 2, 4 ... up to 30 s while it keeps
dying within a minute of starting, each restart said on the terminal; after 5 such crashes in a row it is
left stopped with a message saying so, and the web server keeps serving. Only the web server stopping ends
the run command. The launcher also sweeps lost jobs itself (:mod:`webapp.jobs.sweeper`), so
a run whose worker died is failed within 25 s even while no worker runs.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from webapp import embedded, launched
from webapp.celery import DEFAULT_QUEUE, GPU_QUEUE, INTERACTIVE_QUEUE
from webapp.supervision import Child, Supervisor, supervise


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
    from webapp.core.roles import ADMIN
    from webapp.demo.load import load_demo, load_folder

    if data is not None:
        load_folder(data)
    else:
        load_demo(embedded.data_dir() / "demo")
    _ensure_indexes(dense=data is None)
    from webapp.core.help import build_site, is_built

    if not is_built() and not build_site():
        print("  (the documentation at /help/ is not built: `scripts/docs build`)", flush=True)

    username = os.environ.get("ADMIN_USERNAME", "admin")
    password, _generated = _admin_password()
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"is_staff": True, "is_superuser": True})
    if created or not user.check_password(password):
        user.set_password(password)
        user.is_staff = user.is_superuser = True
        user.save()
    # get_or_create: the role groups come from a data migration, which a database flushed since (a test run) lacks.
    user.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
    return username, password


def _ensure_indexes(dense: bool) -> None:
    """Give every dictionary without an active index one, and suggest links for its open mentions.

    The demo dictionary is small, so it gets the dense zero-shot index; a data folder's dictionaries get
    a sparse index at once (seconds for MEDIC), and `manage.py build_index` builds dense or trained ones.
    """
    from webapp.corpus.models import Collection
    from webapp.curation.services import suggest_for_collection
    from webapp.linking.models import IndexVersion
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
    from webapp.linking.models import EncoderModel

    folder = default_base_model().resolve()
    encoder, _ = EncoderModel.objects.get_or_create(
        name=f"zero-shot-{folder.parent.name}".lower().replace("_", "-")[:120],
        defaults={"method": EncoderModel.Method.ZERO_SHOT, "base_model": str(folder), "artifact_path": str(folder)},
    )
    return encoder


def _wait_for_workers(names: list[str], timeout: float = 60.0, alive: Callable[[], bool] = lambda: True) -> bool:
    """Whether every worker of ``names`` answered a ping within ``timeout`` seconds (while ``alive``)."""
    from webapp.celery import app

    deadline = time.monotonic() + timeout
    waiting = set(names)
    while time.monotonic() < deadline and alive():
        for reply in app.control.ping(destination=sorted(waiting), timeout=1.0) or []:
            waiting -= set(reply)
        if not waiting:
            return True
        time.sleep(0.5)
    return False


def web_server_argv(python: str, host: str, port: int, workers: int, logs: Path) -> list[str]:
    """The web server's command line (bench/load.py starts the same one)."""
    # --config: the metrics of several workers (webapp.gunicorn_conf sets and empties PROMETHEUS_MULTIPROC_DIR).
    return [python, "-m", "gunicorn", "webapp.wsgi", "--config", "python:webapp.gunicorn_conf", "--bind", f"{host}:{port}",
            "--workers", str(workers), "--threads", "4",
            "--access-logfile", str(logs / "access.log"), "--error-logfile", str(logs / "web.log"), "--timeout", "120"]


def worker_argvs(python: str, data: Path) -> dict[str, list[str]]:
    """The run command's workers by name: ``worker`` takes the long work (queues default and gpu: imports, training,
    index builds) and runs the beat schedule (-B); ``interactive`` takes the short work someone waits on (evaluations,
    a pasted text's detection, the sweeps: webapp.celery's routes), so that it never waits behind an hour of
    training. Each has one process: the interactive one loads a linker only when a task of its needs one
    (webapp.linking.registry), so an idle machine holds no second copy of a model."""
    celery = [python, "-m", "celery", "-A", "webapp", "worker", "-c", "1", "--loglevel", "INFO"]
    return {
        "worker": [*celery, "-Q", f"{DEFAULT_QUEUE},{GPU_QUEUE}", "-n", "worker@%h",
                   "-B", "-s", str(data / "celerybeat-schedule")],
        "interactive worker": [*celery, "-Q", INTERACTIVE_QUEUE, "-n", "interactive@%h"],
    }


def _record(supervisor: Supervisor) -> None:
    """Write down this launcher and its children (webapp.launched), for `python -m webapp.launcher stop`; a child that
    has already ended is left out (the supervisor restarts it, and records again)."""
    records = [launched.Launched.of("launcher", os.getpid())]
    for child in (supervisor.web, *supervisor.workers):
        if child.pid is not None and child.poll() is None:
            try:
                records.append(launched.Launched.of(child.name, child.pid, child.own_group))
            except psutil.Error:  # ended between the look and the record
                pass
    launched.record(records)


def run(data: Path | None, host: str, port: int, workers: int) -> int:
    _prepare_environment()
    print("Preparing the database and data ...", flush=True)
    username, password = _setup(data)
    logs = embedded.data_dir() / "log"
    logs.mkdir(exist_ok=True)
    python = sys.executable
    children = [Child(name, argv, log=logs / f"{name.replace(' ', '-')}.log", own_group=True)
                for name, argv in worker_argvs(python, embedded.data_dir()).items()]
    web = Child("web server", web_server_argv(python, host, port, workers, logs))
    supervisor = Supervisor(web, children, hint=f" at http://{host}:{port}/")
    supervisor.on_started = lambda: _record(supervisor)

    def on_sigterm(*_: object) -> None:  # `python -m webapp.launcher stop`: as Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        supervisor.start()
        from webapp.jobs.sweeper import start_sweeper

        start_sweeper()  # a dead worker's run is failed even while its worker restarts, or after giving up on it
        ready = _wait_for_workers([f"{argv[argv.index('-n') + 1].split('@')[0]}@{os.uname().nodename}"
                                   for argv in (c.argv for c in children)],
                                  alive=lambda: all(c.poll() is None for c in children))
        print()
        print(f"  EL Workbench is running at http://{host}:{port}/")
        print(f"  Log in as {username!r} with password {password!r}")
        print(f"  Workers: {'ready' if ready else 'NOT all answering, see the worker logs'}; logs in {logs}")
        print("  A worker that dies is restarted; the web server keeps serving meanwhile.")
        print("  Press Ctrl-C to stop (the embedded database keeps running); `python -m webapp.launcher stop` (in "
              "another terminal) stops everything.")
        print(flush=True)
        reason = supervise(supervisor)
        print(f"{reason}; stopping the workers too. See {logs}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stopping short
        supervisor.stop()
        launched.forget(os.getpid())


def stop() -> int:
    """`python -m webapp.launcher stop`: the run command and everything it started, then the embedded services.
    Each line says what was found and is true only once the process is gone (checked by pid)."""
    try:
        if not launched.stop_launched():
            print("launcher: none was running")
    except (RuntimeError, OSError) as exc:
        print(f"launcher NOT stopped: {exc}", file=sys.stderr)
        return 1
    for name, stop_service in (("Redis", embedded.stop_redis), ("PostgreSQL", embedded.stop_postgres)):
        try:
            print(f"embedded {name} stopped" if stop_service() else f"embedded {name}: none was running")
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            print(f"embedded {name} NOT stopped: {exc}", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webapp.launcher", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="start the workbench with demo data (or --data FOLDER)")
    run_p.add_argument("--data", type=Path, help="import the dictionaries and PubTator files of this folder instead of the demo data")
    run_p.add_argument("--host", default="127.0.0.1")
    run_p.add_argument("--port", type=int, default=8000)
    run_p.add_argument("--web-workers", type=int, default=2)
    sub.add_parser("stop", help="stop the run command (its web server and workers), then the embedded PostgreSQL and Redis")
    args = parser.parse_args(argv)
    if args.command == "stop":
        return stop()
    if args.data is not None and not args.data.is_dir():
        parser.error(f"--data {args.data}: not a folder")
    return run(args.data, args.host, args.port, args.web_workers)


if __name__ == "__main__":
    sys.exit(main())
