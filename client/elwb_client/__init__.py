"""A small client for the entity-linking workbench's REST API: import files of documents, start corpus runs, follow
jobs with their progress, and stream exports to files. Django-free: it needs only ``requests``.

>>> from elwb_client import Client
>>> client = Client("http://127.0.0.1:8000", token="3f1c...")            # doctest: +SKIP
>>> job = client.wait(client.start_corpus_run("notes"), progress=True)    # doctest: +SKIP
>>> client.export("notes", "notes.jsonl", format="jsonl")                 # doctest: +SKIP
"""

from elwb_client.client import Client
from elwb_client.errors import ApiError, ClientError, JobCancelled, JobEnded, JobFailed, WaitTimeout
from elwb_client.formats import FORMATS, UnknownFormat, guess_format
from elwb_client.jobs import ImportReport, Job, ProgressPrinter

__all__ = ["FORMATS", "ApiError", "Client", "ClientError", "ImportReport", "Job", "JobCancelled", "JobEnded", "JobFailed",
           "ProgressPrinter", "UnknownFormat", "WaitTimeout", "guess_format"]
__version__ = "0.1.0"
