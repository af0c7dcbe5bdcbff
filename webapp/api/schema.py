"""The OpenAPI schema's view of errors: every operation documents the error answers it can give.

drf-spectacular documents the success response only; clients (and schemathesis) also need 400 (bad input,
a bad filter value), 401 (no credentials), 403 (no role), 404 (no such object, or a page past the end),
406 (an Accept header no renderer satisfies), 415 (a body of another or a malformed media type) and 429
(throttled), each a JSON object.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()


class AutoSchema(SpectacularAutoSchema):
    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in ("401", "403", "404", "406", "415", "429"):
            responses.setdefault(code, self._get_response_for_code(ErrorSerializer, code, direction=direction))
        # Validation errors name the fields that failed: an object of lists, or {"detail": ...}.
        responses.setdefault("400", self._get_response_for_code(OpenApiTypes.OBJECT, "400", direction=direction))
        return responses
