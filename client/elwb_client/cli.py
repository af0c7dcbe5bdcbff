"""``python -m elwb_client import|run|wait|cancel|export ...``: the client for shell pipelines.

The server and the credentials come from the environment: ``ELWB_URL`` (``http://127.0.0.1:8000``) and
``ELWB_TOKEN``, or ``ELWB_USERNAME`` and ``ELWB_PASSWORD`` (traded for a new token on each call: prefer a token).
Progress goes to stderr; what a later step needs (a job's id, an import's report) to stdout. The exit status is 0
when it worked, 1 when the server refused or a job failed or was cancelled, 2 for a wrong command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from elwb_client.client import Client
from elwb_client.errors import ClientError, WaitTimeout
from elwb_client.formats import FORMATS, UnknownFormat
from elwb_client.jobs import Job


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m elwb_client", description=__doc__.split("\n\n")[0] if __doc__ else None,
                                     epilog="Environment: ELWB_URL, and ELWB_TOKEN or ELWB_USERNAME + ELWB_PASSWORD.")
    commands = parser.add_subparsers(dest="command", required=True)

    p = commands.add_parser("import", help="upload a file of documents into a collection; prints the report (JSON)")
    p.add_argument("collection", help="the collection's slug (it must exist)")
    p.add_argument("file", help="the file to upload")
    p.add_argument("--format", choices=FORMATS, help="the file's format (default: guessed from its name and content)")
    p.add_argument("--dictionary", help="resolve the file's ids in this dictionary (default: the collection's)")

    p = commands.add_parser("run", help="start a corpus run; prints its job id")
    p.add_argument("collection")
    p.add_argument("--documents", choices=("all", "unannotated"), default="all")
    p.add_argument("--concept", action="append", default=[], dest="concepts", help="a concept its links may name (repeat)")
    p.add_argument("--concepts-file", help="concept ids, one a line, added to --concept")
    p.add_argument("--root", action="append", default=[], dest="roots", help="a subtree root (repeat)")
    p.add_argument("--type", action="append", default=[], dest="mention_types", help="a mention type (repeat)")
    p.add_argument("--chunk-size", type=int, help="documents per chunk (default: the server's)")
    p.add_argument("--wait", action="store_true", help="wait for the run to end, with progress on stderr")
    _wait_options(p)

    p = commands.add_parser("wait", help="wait for a job to end, with progress on stderr")
    p.add_argument("job", type=int, help="the job's id")
    _wait_options(p)

    p = commands.add_parser("cancel", help="cancel a job")
    p.add_argument("job", type=int)

    p = commands.add_parser("export", help="stream a collection's documents to a file")
    p.add_argument("collection")
    p.add_argument("out", help="the file to write ('-': stdout)")
    p.add_argument("--as", dest="format", default="jsonl", choices=[f for f in FORMATS if f != "text"])
    p.add_argument("--links", choices=("decided", "gold", "curator", "all"))
    p.add_argument("--ids", choices=("dictionary", "source"))
    p.add_argument("--suggestions", action="store_true", help="add the model's best where a part has no other link")
    return parser


def _wait_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--poll", type=float, default=2.0, help="seconds between looks at the job (default 2)")
    p.add_argument("--timeout", type=float, help="give up waiting after this many seconds (the job goes on)")
    p.add_argument("--quiet", action="store_true", help="no progress line")


def client_from_env(parser: argparse.ArgumentParser) -> Client:
    url = os.environ.get("ELWB_URL", "").strip()
    if not url:
        parser.error("set ELWB_URL to the workbench's address (http://127.0.0.1:8000)")
    token = os.environ.get("ELWB_TOKEN", "").strip()
    username, password = os.environ.get("ELWB_USERNAME"), os.environ.get("ELWB_PASSWORD")
    if not token and not (username and password):
        parser.error("set ELWB_TOKEN (an API token), or ELWB_USERNAME and ELWB_PASSWORD")
    return Client(url, token=token or None, username=None if token else username, password=None if token else password)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        client = client_from_env(parser)
        return _run(client, args)
    except (ClientError, UnknownFormat, OSError) as exc:
        print(f"elwb: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("elwb: interrupted (a job it started goes on; cancel it with `cancel`)", file=sys.stderr)
        return 130


def _run(client: Client, args: argparse.Namespace) -> int:
    if args.command == "import":
        report = client.import_file(args.collection, args.file, format=args.format, dictionary=args.dictionary)
        print(f"elwb: {report.message}", file=sys.stderr)
        print(json.dumps(report.data))
        return 0
    if args.command == "run":
        concepts = list(args.concepts)
        if args.concepts_file:
            with open(args.concepts_file, encoding="utf-8") as fh:
                concepts += [line.strip() for line in fh if line.strip()]
        job = client.start_corpus_run(args.collection, documents=args.documents, concepts=concepts, roots=args.roots,
                                      mention_types=args.mention_types, chunk_size=args.chunk_size)
        print(job.id, flush=True)
        return _wait(client, job, args) if args.wait else 0
    if args.command == "wait":
        return _wait(client, args.job, args)
    if args.command == "cancel":
        job = client.cancel(args.job)
        print(f"elwb: {job.describe()}: {job.state}" + (" (stopping)" if job.data.get("cancel_requested") else ""),
              file=sys.stderr)
        return 0
    filters = {"links": args.links, "ids": args.ids, "suggestions": True if args.suggestions else None}
    filters = {k: v for k, v in filters.items() if v is not None}
    if args.out == "-":
        written = client.export(args.collection, sys.stdout.buffer, format=args.format, **filters)
        sys.stdout.buffer.flush()
    else:
        written = client.export(args.collection, args.out, format=args.format, **filters)
    print(f"elwb: {written:,} bytes written to {args.out if args.out != '-' else 'stdout'}", file=sys.stderr)
    return 0


def _wait(client: Client, job: Job | int, args: argparse.Namespace) -> int:
    try:
        done = client.wait(job, progress=not args.quiet, poll=args.poll, timeout=args.timeout)
    except WaitTimeout as exc:
        print(f"elwb: {exc}", file=sys.stderr)
        return 1
    print(f"elwb: {done.describe()} succeeded ({done.progress_text()})", file=sys.stderr)
    return 0
