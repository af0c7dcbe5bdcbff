"""The :class:`Client`: the workbench's REST API (``/api/``) for pipelines, over ``requests``.

Every call answers with the API's own data or raises :class:`~elwb_client.errors.ApiError` carrying the HTTP
status and the server's message. Jobs (imports of server files, corpus runs) are followed with :meth:`Client.wait`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import requests

from elwb_client.errors import ApiError, ClientError, JobCancelled, JobFailed, WaitTimeout, error_message
from elwb_client.formats import guess_format
from elwb_client.jobs import ImportReport, Job, ProgressPrinter
from elwb_client.multipart import MultipartFile

Progress = Callable[[Job], None]
CHUNK_BYTES = 1 << 16
TOKEN_NAME = "elwb_client"
_NO_ENDPOINT = "no such API endpoint"  # the API's JSON 404 for a path it does not have (an older server)
EXPORT_PARAMETERS = ("as", "links", "ids", "suggestions")  # what the export action reads; the stream also filters


class Client:
    """A session with one workbench. ``base_url`` is the server (``http://127.0.0.1:8000``; a trailing ``/api`` is
    accepted too). Authenticate with an API ``token`` (a named token made on the API tokens page, or by
    ``manage.py create_api_token``), or with ``username`` and ``password``, traded at once for a new token by
    ``POST /api/auth/token/``. ``timeout`` is each request's connect and read timeout in seconds (for an export
    or an upload the time to the first byte, not to the last)."""

    def __init__(self, base_url: str, token: str | None = None, username: str | None = None,
                 password: str | None = None, *, timeout: float = 60.0, session: requests.Session | None = None) -> None:
        base = base_url.rstrip("/")
        self.base_url = base[: -len("/api")] if base.endswith("/api") else base
        self.timeout = timeout
        self.session = session or requests.Session()
        self.session.headers.setdefault("User-Agent", f"elwb-client ({requests.utils.default_user_agent()})")
        self.token: str | None = None
        self._streaming_export: bool | None = None  # whether the server has the streaming export (None: not asked yet)
        if token:
            self.use_token(token)
        elif username is not None and password is not None:
            try:
                self.login(username, password)
            except BaseException:
                self.close()  # no one can close a client that was never made
                raise
        elif username is not None or password is not None:
            raise ValueError("give both username and password, or a token")

    def close(self) -> None:
        """Close the session's connections (``with Client(...) as client:`` does it at the end of the block)."""
        self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- authentication and requests ------------------------------------------------------------------------

    def use_token(self, token: str) -> None:
        """Send ``Authorization: Token <token>`` from now on."""
        self.token = token
        self.session.headers["Authorization"] = f"Token {token}"

    def login(self, username: str, password: str, name: str = TOKEN_NAME) -> str:
        """Trade a username and password for a new named token (``POST /api/auth/token/``), use it, and return it.
        Each call makes a new token: keep it (``client.token``) rather than logging in for every run."""
        self.session.headers.pop("Authorization", None)
        answer = self.request("POST", "auth/token/", json={"username": username, "password": password, "name": name})
        token = str(answer.json()["token"])
        self.use_token(token)
        return token

    def url(self, path: str) -> str:
        """The absolute URL of an API path (``jobs/3/``), or ``path`` itself when it is absolute already."""
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}/api/{path.lstrip('/')}"

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None,
                stream: bool = False, **kwargs: Any) -> requests.Response:
        """One request to the API; :class:`ApiError` for any answer of status 400 or more."""
        url = self.url(path)
        kwargs.setdefault("headers", {}).setdefault("Accept", "application/json")
        response = self.session.request(method, url, params=_query(params), json=json, stream=stream,
                                        timeout=self.timeout, **kwargs)
        if response.status_code >= 400:
            with response:  # read, then handed back to the pool (a streamed answer too)
                raise _api_error(response, method)
        return response

    def get_json(self, path: str, **params: Any) -> Any:
        """``GET`` an API path and return its JSON."""
        return self.request("GET", path, params=params).json()

    # --- collections and documents -------------------------------------------------------------------------

    def collection(self, slug: str) -> dict[str, Any]:
        """The collection ``slug`` (title, dictionary, document count ...); :class:`ApiError` 404 when there is none
        this token may see."""
        return dict(self.get_json(f"collections/{_segment(slug)}/"))

    def create_collection(self, slug: str, title: str, dictionary: str | None = None, *, detection: str | None = None,
                          description: str = "") -> dict[str, Any]:
        """Create a collection (admins); ``detection`` is which detectors run on documents imported without
        mentions (``matcher+tagger``, ``matcher``, ``tagger``, ``off``)."""
        body: dict[str, Any] = {"slug": slug, "title": title, "description": description}
        if dictionary is not None:
            body["dictionary"] = dictionary
        if detection is not None:
            body["detection"] = detection
        return dict(self.request("POST", "collections/", json=body).json())

    def iter_documents(self, collection: str, page_size: int = 500, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every document of the collection (without text), page after page by the answers' ``next`` links:
        ``/api/collections/<slug>/documents/`` (an opaque cursor: a walk meets each document once while documents
        are added) where the server has it, ``/api/documents/?collection=<slug>`` otherwise. ``filters`` are more
        query parameters (``external_id``; ``changed_since``, ``model_version``, ``detection_state``,
        ``mention_status`` where the server has them). An unknown collection is an :class:`ApiError` 404."""
        params: dict[str, Any] = {"page_size": page_size, **filters}
        path = f"collections/{_segment(collection)}/documents/"
        try:
            page = self.request("GET", path, params=params).json()
        except ApiError as exc:
            if exc.status != 404 or exc.message != _NO_ENDPOINT:
                raise
            self.collection(collection)  # an older server: an unknown collection is a 404 there too, not no documents
            page = self.request("GET", "documents/", params={"collection": collection, **params}).json()
        while True:
            if isinstance(page, list):  # an unpaginated list
                yield from page
                return
            yield from page.get("results", [])
            following = page.get("next")  # it carries every parameter itself
            if not following:
                return
            page = self.request("GET", following).json()

    def document(self, document_id: int) -> dict[str, Any]:
        """One document with its text and its first mentions (``GET /api/documents/<id>/``)."""
        return dict(self.get_json(f"documents/{int(document_id)}/"))

    # --- imports ------------------------------------------------------------------------------------------

    def import_file(self, collection: str, path: str | os.PathLike[str], format: str | None = None,
                    dictionary: str | None = None) -> ImportReport:
        """Upload a file of documents into an existing collection (``POST /api/collections/<slug>/upload/``,
        admins) and return what was imported. The server imports it while the request waits, in one transaction;
        the file is sent from disk as it is read. ``format`` is one of :data:`elwb_client.formats.FORMATS`,
        guessed from the file's name and first bytes when not given; ``dictionary`` resolves its concept ids in
        another dictionary than the collection's. A file the server cannot read is an :class:`ApiError` 400 naming
        the line or field."""
        path = Path(path)
        fields = {"format": format or guess_format(path)}
        if dictionary:
            fields["dictionary"] = dictionary
        with MultipartFile(fields, "file", path) as body:
            response = self.request("POST", f"collections/{_segment(collection)}/upload/", data=body,
                                    headers={"Content-Type": body.content_type})
        return ImportReport.from_json(response.json(), created=response.status_code == 201)

    def import_server_file(self, collection: str, server_path: str, format: str = "pubtator", *,
                           title: str | None = None, dictionary: str | None = None, force: bool = False) -> Job:
        """Queue the import of a file the workers can read (``POST /api/imports/``, admins): for files too large to
        upload, a PubMed baseline file for one. The collection is created when it does not exist. Returns the
        import's job; follow it with :meth:`wait`."""
        body: dict[str, Any] = {"kind": "documents", "path": server_path, "slug": collection, "format": format}
        body.update({k: v for k, v in (("title", title), ("dictionary", dictionary)) if v})
        if force:
            body["force"] = True
        answer = self.request("POST", "imports/", json=body).json()
        return self.job(int(answer["id"]))

    # --- jobs ---------------------------------------------------------------------------------------------

    def job(self, job: Job | int) -> Job:
        """The job as it is now (``GET /api/jobs/<id>/``, admins)."""
        return Job.from_json(self.get_json(f"jobs/{_job_id(job)}/"))

    def start_corpus_run(self, collection: str, documents: str = "all", concepts: Iterable[str] = (),
                         roots: Iterable[str] = (), mention_types: Iterable[str] = (),
                         chunk_size: int | None = None) -> Job:
        """Start a corpus run (``POST /api/corpus-runs/``, admins): detect and link the collection's documents
        (``all`` or ``unannotated``) on the workers, chunk by chunk, its links kept to ``concepts`` and the
        subtrees under ``roots`` where given, and to ``mention_types``. Returns the run's job. A scope the
        dictionary lacks, or a collection whose detectors cannot run, is an :class:`ApiError` 400 saying what to fix."""
        body: dict[str, Any] = {"collection": collection, "documents": documents, "concepts": list(concepts),
                                "roots": list(roots), "mention_types": list(mention_types)}
        if chunk_size is not None:
            body["chunk_size"] = chunk_size
        return Job.from_json(self.request("POST", "corpus-runs/", json=body).json())

    def cancel(self, job: Job | int) -> Job:
        """Cancel a job (``POST /api/jobs/<id>/cancel/``): a queued one at once, a running one at its next step.
        One that cannot be cancelled (finished already) is an :class:`ApiError` 409 saying why."""
        return Job.from_json(self.request("POST", f"jobs/{_job_id(job)}/cancel/").json())

    def wait(self, job: Job | int, progress: Progress | bool | None = None, poll: float = 1.0,
             timeout: float | None = None) -> Job:
        """Poll the job every ``poll`` seconds until it ends, and return it once it has succeeded.

        ``progress``: a callable given the :class:`Job` at each poll, or True for a progress line on stderr
        (:class:`~elwb_client.jobs.ProgressPrinter`). Raises :class:`JobFailed` (with the job's ``error``),
        :class:`JobCancelled`, or :class:`WaitTimeout` after ``timeout`` seconds (the job goes on)."""
        printer = ProgressPrinter() if progress is True else None
        report: Progress | None = printer or (progress if callable(progress) else None)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                current = self.job(job)
                if report is not None:
                    report(current)
                if current.finished:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    raise WaitTimeout(current, float(timeout or 0))
                time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
        finally:
            if printer is not None:
                printer.close()
        if current.state == "failed":
            raise JobFailed(current)
        if current.state == "cancelled":
            raise JobCancelled(current)
        return current

    # --- export -------------------------------------------------------------------------------------------

    def export(self, collection: str, path_or_file: str | os.PathLike[str] | IO[bytes], format: str = "jsonl",
               **filters: Any) -> int:
        """Write the collection's documents in ``format`` (``jsonl``, ``pubtator``, ``bioc-xml``, ``bioc-json``,
        ``brat``, ``pubannotation``, ``pubmed-xml``) to a file path or a binary file object, and return the bytes
        written. ``filters`` are the export's parameters: ``links`` (decided, gold, curator, all), ``ids``
        (dictionary, source), ``suggestions`` (True adds the model's best where a part has no other link), and
        where the server streams exports the document filters (``changed_since``, ``model_version``,
        ``detection_state``, ``mention_status``; an older server refuses them with :class:`ClientError`).

        The answer is streamed to the file in blocks, never held whole in memory. The server's streaming export
        (``/api/collections/<slug>/documents/stream/``) is used where it has one, its ``export`` action otherwise.
        A path is written to ``<path>.part`` and renamed when complete, so a failed export leaves no partial file."""
        params = {"as": format, **filters}
        response = self._export_response(collection, params)
        with response:
            if not isinstance(path_or_file, str | os.PathLike):
                return _copy(response, path_or_file)
            target = Path(path_or_file)
            partial = target.with_name(target.name + ".part")
            try:
                with open(partial, "wb") as fh:
                    written = _copy(response, fh)
                partial.replace(target)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            return written

    def _export_response(self, collection: str, params: dict[str, Any]) -> requests.Response:
        slug = _segment(collection)
        headers = {"Accept": "*/*"}
        if self._streaming_export is not False:
            try:
                response = self.request("GET", f"collections/{slug}/documents/stream/", params=params, stream=True,
                                        headers=headers)
                self._streaming_export = True
                return response
            except ApiError as exc:
                if exc.status == 404 and exc.message == _NO_ENDPOINT:
                    self._streaming_export = False  # an older server: its export action
                elif not (exc.status == 400 and isinstance(exc.body, dict) and set(exc.body) == {"as"}):
                    raise  # (a format the stream does not write, brat for one, comes whole from the export action)
        narrowed = sorted(set(params) - set(EXPORT_PARAMETERS))
        if narrowed:
            raise ClientError(f"this server exports whole collections only: it has no streaming export to narrow by "
                              f"{', '.join(narrowed)} (or not in format {params.get('as')!r})")
        return self.request("GET", f"collections/{slug}/export/", params=params, stream=True, headers=headers)

def _copy(response: requests.Response, fh: IO[bytes]) -> int:
    written = 0
    for chunk in response.iter_content(chunk_size=CHUNK_BYTES):
        fh.write(chunk)
        written += len(chunk)
    return written


def _query(params: dict[str, Any] | None) -> dict[str, Any] | None:
    """Query parameters as the API reads them: booleans as ``true``/``false``, None left out."""
    if params is None:
        return None
    return {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in params.items() if v is not None}


def _segment(slug: str) -> str:
    """A slug as one path segment: quoted, so that a "/" in it cannot reach another endpoint."""
    return quote(slug, safe="")


def _job_id(job: Job | int) -> int:
    return job.id if isinstance(job, Job) else int(job)


def _api_error(response: requests.Response, method: str) -> ApiError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if body is None:
        text = (response.text or "").strip()
        fallback = f"{response.reason or 'error'}" + (f": {text[:300]}" if text and not text.startswith("<") else "")
    else:
        fallback = response.reason or "error"
    return ApiError(response.status_code, error_message(body, fallback), method=method, url=response.url, body=body)
