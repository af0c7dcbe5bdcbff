"""The admins' import forms: a dictionary file, a file of documents, a plain text. Each validates what the browser
sent (a file within IMPORT_MAX_UPLOAD_BYTES, a slug, a text that is not empty) and hands it to its service in
:mod:`webapp.imports.queueing`, which queues the job."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet

from webapp.core import limits
from webapp.corpus.formats import FORMATS
from webapp.corpus.models import Collection
from webapp.imports.models import ImportJob
from webapp.imports.queueing import queue_dictionary_upload, queue_documents_upload, queue_text
from webapp.vocab.models import Dictionary

# A pasted text travels in the form's body, which Django caps at DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB by default):
# 800,000 characters stay under it even at three bytes each. A longer text goes as a file.
PASTE_MAX_CHARS = 800_000
TEXT_FILE_MAX_BYTES = 50_000_000


class ImportForm(forms.Form):
    """What the three forms share: the upload limit, and the focus on the field the admin has to look at."""

    first_field = ""  # autofocused on a fresh form; empty: the first field
    new_only: tuple[str, ...] = ()  # the fields of a new dictionary or collection, ignored for an existing one

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "file" in self.fields:  # the browser refuses a file over the limit before sending it (imports.js)
            self.fields["file"].widget.attrs["data-max-bytes"] = str(limits.limit(limits.UPLOAD_BYTES))

    def focus(self) -> None:
        """Autofocus the first field with an error (a fresh form: ``first_field``). Django ties each field to its
        help and its error (aria-describedby ``<id>_helptext``, ``<id>_error``); a form-wide error (the task queue
        down) is announced by its alert instead."""
        if self.is_bound:
            first = next((name for name in self.fields if name in self.errors), "")
        else:
            first = self.first_field or next(iter(self.fields), "")
        if first:
            self.fields[first].widget.attrs["autofocus"] = True

    def clean_target(self, choice_field: str, slug_field: str, model: Any, what: str) -> str:
        """The slug of the row chosen in ``choice_field``, or the new one typed in ``slug_field`` (the select's
        empty choice: a new dictionary or collection), refused there when missing or taken."""
        chosen = self.cleaned_data.get(choice_field)
        if chosen is not None:
            # The new one's fields are hidden once an existing one is chosen: what they hold is no error of the form.
            for name in self.new_only:
                self.errors.pop(name, None)
            return str(chosen.slug)
        slug = self.cleaned_data.get(slug_field) or ""
        if not slug:
            if slug_field not in self.errors:  # not typed at all, rather than malformed
                self.add_error(slug_field, f"Give the new {what} a slug, or choose an existing {what} above.")
        elif model.objects.filter(slug=slug).exists():
            self.add_error(slug_field, f"A {what} {slug!r} exists already: choose it above.")
        return str(slug)

    def submit(self, user: Any) -> ImportJob:
        """Queue the import of what the valid form holds."""
        raise NotImplementedError

    @staticmethod
    def check_size(upload: UploadedFile | None, max_bytes: int | None = None) -> None:
        if upload is None:
            return
        name, size = upload.name or "the file", upload.size or 0
        if max_bytes is not None and size > max_bytes:
            raise forms.ValidationError(f"{name} is {size:,} bytes, over the {max_bytes:,}-byte limit of a text file")
        if size > limits.limit(limits.UPLOAD_BYTES):
            raise forms.ValidationError(limits.over(f"{name} is", size, limits.UPLOAD_BYTES, "bytes"))


def upload_field(label: str, help_text: str, required: bool = True) -> forms.FileField:
    return forms.FileField(label=label, help_text=help_text, required=required,
                           error_messages={"required": "Choose a file.", "empty": "The file is empty."})


def _dictionaries_with_releases() -> QuerySet[Dictionary]:
    return Dictionary.objects.filter(versions__isnull=False).distinct().order_by("slug")


class DictionaryImportForm(ImportForm):
    first_field = "file"
    new_only = ("new_slug",)
    file = upload_field("Dictionary file", "MEDIC TSV (CTD_diseases.tsv), DNorm/BioSyn text (ID||name|synonym) or OBO, "
                                           "optionally gzipped (.gz), or a .zip of a UMLS release's META folder (English names of "
                                           "every source). The format is told from its name and first lines.")
    dictionary = forms.ModelChoiceField(
        queryset=Dictionary.objects.order_by("slug"), to_field_name="slug", required=False,
        empty_label="A new dictionary", label="Into dictionary",
        help_text="An existing dictionary gets the file as a new release beside the ones it has; curator synonyms are "
                  "carried over to it and, if the dictionary has an active index, an index over it is queued (not activated).",
    )
    new_slug = forms.SlugField(max_length=64, required=False, label="New dictionary's slug",
                               help_text="Letters, digits, '-' or '_', e.g. medic or hpo. Cannot be changed later.")
    title = forms.CharField(max_length=200, required=False,
                            help_text="Shown in lists. Empty: unchanged (a new dictionary: its slug in capitals).")
    release = forms.CharField(max_length=120, required=False, label="Release name",
                              help_text="Empty: read from the file's header (OBO data-version, MEDIC 'Report created'), "
                                        "else the file's name and checksum.")

    def clean_file(self) -> UploadedFile:
        upload = self.cleaned_data["file"]
        self.check_size(upload)
        return upload

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        data["slug"] = self.clean_target("dictionary", "new_slug", Dictionary, "dictionary")
        return data

    def submit(self, user: Any) -> ImportJob:
        data = self.cleaned_data
        return queue_dictionary_upload(data["file"], dictionary_slug=data["slug"], title=data["title"],
                                       release=data["release"], user=user)


class CollectionTargetForm(ImportForm):
    """The collection the documents go into: an existing one, or a new one's slug and title."""

    new_only = ("new_slug", "collection_title")

    collection = forms.ModelChoiceField(
        queryset=Collection.objects.order_by("slug"), to_field_name="slug", required=False,
        empty_label="A new collection", label="Into collection",
    )
    new_slug = forms.SlugField(max_length=64, required=False, label="New collection's slug",
                               help_text="Letters, digits, '-' or '_', e.g. ncbi-train. Cannot be changed later.")
    collection_title = forms.CharField(max_length=200, required=False, label="New collection's title",
                                       help_text="Shown in lists. Empty: the slug.")

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        data["slug"] = self.clean_target("collection", "new_slug", Collection, "collection")
        if data.get("collection") is not None:
            data["collection_title"] = ""  # an existing collection keeps its title
        return data


class DocumentsImportForm(CollectionTargetForm):
    field_order = ["file", "format", "force", "collection", "new_slug", "collection_title", "dictionary"]
    first_field = "file"
    file = upload_field("File of documents", "PubTator, BioC XML or JSON, PubMed XML (.xml.gz), PubAnnotation JSON, "
                                             "JSON Lines, a zip of brat .txt and .ann "
                                             "files, or plain text (.txt, or a .zip / .tar.gz of .txt files: one document "
                                             "each). Gold mentions and links in the file are imported with the documents; "
                                             "a document without any gets its mentions from the detector.")
    format = forms.ChoiceField(
        choices=[("", "Told from the file's name and first bytes"), *((f.name, f.label) for f in FORMATS.values())],
        required=False, label="Format",
    )
    force = forms.BooleanField(
        required=False, label="Apply an update to curated documents too",
        help_text="PubMed, BioC, JSON Lines or PubAnnotation: without it, a document with curators' decisions or gold "
                  "annotations is kept as it is when the file changes or withdraws it.",
    )
    dictionary = forms.ModelChoiceField(
        queryset=_dictionaries_with_releases(), to_field_name="slug", required=False, label="Dictionary",
        empty_label="The collection's dictionary (none for a new one)",
        help_text="The gold ids of the file are looked up in its latest release; a new collection links to it.",
    )

    def clean_file(self) -> UploadedFile:
        upload = self.cleaned_data["file"]
        self.check_size(upload)
        return upload

    def submit(self, user: Any) -> ImportJob:
        data = self.cleaned_data
        dictionary = data["dictionary"]
        return queue_documents_upload(data["file"], fmt=data["format"], collection_slug=data["slug"],
                                      title=data["collection_title"], user=user, force=bool(data.get("force")),
                                      dictionary_slug=dictionary.slug if dictionary is not None else None)


class TextImportForm(CollectionTargetForm):
    first_field = "text"
    dictionary = forms.ModelChoiceField(
        queryset=_dictionaries_with_releases(), to_field_name="slug", required=False, label="New collection's dictionary",
        empty_label="None yet", help_text="The dictionary the collection's mentions will be linked to.",
    )
    document_title = forms.CharField(max_length=1000, required=False, label="Document title (optional)",
                                     help_text="Shown above the text and in the collection's list.")
    text = forms.CharField(
        required=False, strip=False, max_length=PASTE_MAX_CHARS, label="Text",
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
        help_text=f"One document, without mentions, up to {PASTE_MAX_CHARS:,} characters; a longer one: choose a file below.",
    )
    file = upload_field("Or a plain-text file", "UTF-8 text (.txt): the whole file is one document.", required=False)

    def clean_file(self) -> UploadedFile | None:
        upload = self.cleaned_data.get("file")
        self.check_size(upload, TEXT_FILE_MAX_BYTES)
        return upload

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if "text" in self.errors or "file" in self.errors:
            return data
        pasted, upload = data.get("text") or "", data.get("file")
        if upload is not None and pasted.strip():
            self.add_error("text", "Paste a text or choose a file, not both.")
            return data
        if upload is not None:
            try:
                pasted = b"".join(upload.chunks()).decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                self.add_error("file", f"{upload.name} is not UTF-8 text ({exc.reason} at byte {exc.start:,}).")
                return data
            if not data.get("document_title"):
                data["document_title"] = (upload.name or "").rsplit(".", 1)[0]
        text = pasted.replace("\r\n", "\n").replace("\r", "\n")
        field = "file" if upload is not None else "text"
        if not text.strip():
            self.add_error(field, "The text is empty: paste a text, or choose a file below." if upload is None
                           else f"{upload.name} holds no text.")
        elif "\x00" in text:
            self.add_error(field, "The text contains a NUL character, which the database cannot store.")
        elif refusal := limits.document_chars_over("The text is", len(text)):
            self.add_error(field, refusal)
        data["text"] = text
        return data

    def submit(self, user: Any) -> ImportJob:
        data = self.cleaned_data
        dictionary = data["dictionary"] if data.get("collection") is None else None
        return queue_text(data["text"], collection_slug=data["slug"], document_title=data["document_title"],
                          collection_title=data["collection_title"], user=user,
                          dictionary_slug=dictionary.slug if dictionary is not None else None)
