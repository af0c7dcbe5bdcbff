"""Pagination that means what the schema says: ``page`` and ``page_size`` are positive integers (``page_size`` at
most MAX_PAGE_SIZE), given once. DRF's own falls back to its defaults on ``page_size=abc``, ``page_size=[1]`` or
``page_size=0`` and reads the last of ``page=1&page=2``: a client's mistake answered 200 with another page than it
asked for. Here it is a 400 naming the parameter."""

from __future__ import annotations

import re
from typing import Any

from django.core.paginator import Paginator
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

MAX_PAGE_SIZE = 500
_DIGITS = re.compile(r"[0-9]+")
_HUGE = 10**18  # a number of more digits than this: past any page there is (and past what int() converts)


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        size = _positive_int(request, self.page_size_query_param)
        if size is None:
            return int(self.page_size or 1)
        if size > self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"at most {self.max_page_size} (found {size})"]})
        return size

    def get_page_number(self, request: Request, paginator: Paginator) -> Any:
        number = _positive_int(request, self.page_query_param)
        # A page past the last is still the NotFound ("Invalid page") of DRF: the request was well formed.
        return number if number is not None else 1

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
                parameter["description"] = f"{parameter['description']} (1 to {self.max_page_size}; default {self.page_size})."
        return parameters


def _positive_int(request: Request, name: str) -> int | None:
    """The query parameter ``name`` as a positive integer; None when absent; a 400 naming it otherwise."""
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError({name: [f"given {len(values)} times; give it once"]})
    value = values[0]
    number = (int(value) if len(value) <= 18 else _HUGE) if _DIGITS.fullmatch(value) else 0
    if number < 1:
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise ValidationError({name: [f"must be a positive integer (found {shown!r})"]})
    return number
