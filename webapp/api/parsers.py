"""DRF's JSON parser, answering with a 400 (not a 500) a body nested too deeply for Python's json module, or one
holding a lone surrogate (``"\\ud800"``: half a character, which the database driver cannot encode)."""

from __future__ import annotations

from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from webapp.corpus.formats.records import lone_surrogate


class JSONParser(parsers.JSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json gives up about a thousand levels down with a RecursionError, which DRF does not catch.
            raise ParseError("JSON parse error - nested too deeply") from None
        bad = lone_surrogate(data)
        if bad:
            raise ParseError(f"JSON parse error - the body holds {bad}")
        return data
