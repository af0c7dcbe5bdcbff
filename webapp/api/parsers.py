"""DRF's JSON parser, answering a body nested too deeply for Python's json module with a 400, not a 500."""

from __future__ import annotations

from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream: IO[Any], media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            # json gives up about a thousand levels down with a RecursionError, which DRF does not catch.
            raise ParseError("JSON parse error - nested too deeply") from None
