"""Fields and form bases of the API's serializers that refuse what DRF would let through or misread: a NUL in a
slug, a text over its length before DRF trims it, a form field given twice, a JSON literal as a slug, metadata
PostgreSQL cannot store."""

from __future__ import annotations

from typing import Any

from django.db import models
from rest_framework import serializers
from rest_framework.utils import html

from webapp.corpus.formats.records import MAX_METADATA_DEPTH, has_nul, too_deep

__all__ = ["SlugLookupField", "RawLengthCharField", "StrictModelSerializer", "SingleValuedForm", "RESERVED_SLUGS",
           "UploadSlugField", "umls_codes_field", "validate_metadata"]


class SlugLookupField(serializers.SlugRelatedField):
    """A slug looked up in the database, refusing NUL first: PostgreSQL cannot compare text holding one."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and "\x00" in data:
            raise serializers.ValidationError("NUL characters are not allowed")
        return super().to_internal_value(data)

    def get_value(self, dictionary: Any) -> Any:
        # A form's "dictionary=" reaches run_validation as "", not as the null DRF makes of it.
        if html.is_html_input(dictionary) and dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        # DRF reads "" as null for a relation (an HTML form's empty choice); the schema says a slug or null.
        if data == "":
            raise serializers.ValidationError("may not be blank: give a slug" + (", or null for none" if self.allow_null else ""))
        return super().run_validation(data)


class RawLengthCharField(serializers.CharField):
    """A text whose max_length holds for the text as given: DRF trims blanks first, so a 204-character title with
    four leading blanks passed a maxLength of 200 that the schema states of the text sent."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if isinstance(data, str) and self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().run_validation(data)


class StrictModelSerializer(serializers.ModelSerializer):
    """A model's text fields with RawLengthCharField."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: RawLengthCharField,
        models.SlugField: serializers.SlugField,  # a slug has no blanks to trim
    }


class SingleValuedForm(serializers.Serializer):
    """A form (multipart) body gives each field once: DRF reads the last of a repeated field, so languages=A and
    languages=B (the array a client meant) answered 202 with B alone."""

    def to_internal_value(self, data: Any) -> Any:
        getlist = getattr(data, "getlist", None)
        if getlist is not None:
            repeated = {name: [f"given {len(getlist(name))} times; give it once"] for name in self.fields
                        if len(getlist(name)) > 1}
            if repeated:
                raise serializers.ValidationError(repeated)
        return super().to_internal_value(data)


# JSON's literals: a multipart form has no null or boolean, so a client that sends one gets its name as text. As a
# slug it would name a dictionary "null"; it is refused instead.
RESERVED_SLUGS = frozenset({"null", "true", "false"})


class UploadSlugField(serializers.SlugField):
    """A slug given in a form (multipart): not one of JSON's literals."""

    def to_internal_value(self, data: Any) -> str:
        slug = super().to_internal_value(data)
        if slug.lower() in RESERVED_SLUGS:
            raise serializers.ValidationError(f"{slug!r} is reserved (a form cannot tell it from JSON's {slug.lower()})")
        return slug


def umls_codes_field(what: str, help_text: str) -> serializers.RegexField:
    """Comma-separated UMLS abbreviations (SAB or LAT: MSH, SNOMEDCT_US, ENG): upper case, each starting with a letter."""
    return serializers.RegexField(
        r"^\s*[A-Z][A-Z0-9_.-]*(\s*,\s*[A-Z][A-Z0-9_.-]*)*\s*$", required=False, allow_blank=True, max_length=2000,
        help_text=help_text,
        error_messages={"invalid": f"expected {what} as upper-case UMLS abbreviations separated by commas"},
    )


def validate_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Document metadata as PostgreSQL's jsonb can store it and the app can encode it back."""
    if has_nul(metadata):
        raise serializers.ValidationError("NUL characters are not allowed, in keys or values")
    if too_deep(metadata):
        raise serializers.ValidationError(f"nested too deeply (more than {MAX_METADATA_DEPTH} levels)")
    return metadata
