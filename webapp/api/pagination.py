"""Pagination that means what the schema says: ``page`` and ``page_size`` are positive integers (``page_size`` at
most MAX_PAGE_SIZE), given once. DRF's own falls back to its defaults on ``page_size=abc``, ``page_size=[1]`` or
``page_size=0`` and reads the last of ``page=1&page=2``: a client's mistake answered 200 with another page than it
asked for. Here it is a 400 naming the parameter."""

from __future__ import annotations

import base64
import re
from typing import Any

from django.core.paginator import Paginator
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.utils.urls import replace_query_param

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


class KeysetPagination:
    """A page after a cursor, by primary key (keyset, not OFFSET: every page is found by the index however deep, and a
    walk through a collection that grows meanwhile meets every row once: new rows come after the cursor). The cursor
    is opaque: take the answer's ``next`` link as it is; a cursor that is not one is a 400."""

    cursor_query_param = "cursor"
    page_size_query_param = "page_size"

    def __init__(self, page_size: int = 100, max_page_size: int = MAX_PAGE_SIZE) -> None:
        self.page_size, self.max_page_size = page_size, max_page_size

    def paginate(self, request: Request, queryset: Any) -> tuple[list[Any], str | None]:
        """The rows of the page and the link to the next (None after the last page)."""
        size = _positive_int(request, self.page_size_query_param) or self.page_size
        if size > self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"at most {self.max_page_size} (found {size})"]})
        after = self.after(request)
        rows = list((queryset if after is None else queryset.filter(pk__gt=after)).order_by("pk")[: size + 1])
        if len(rows) <= size:
            return rows, None
        rows = rows[:size]
        return rows, replace_query_param(request.build_absolute_uri(), self.cursor_query_param, encode_cursor(rows[-1].pk))

    def after(self, request: Request) -> int | None:
        values = request.query_params.getlist(self.cursor_query_param)
        if not values:
            return None
        if len(values) > 1:
            raise ValidationError({self.cursor_query_param: [f"given {len(values)} times; give it once"]})
        pk = decode_cursor(values[0])
        if pk is None:
            raise ValidationError({self.cursor_query_param: ["not a cursor of this listing: follow the 'next' link as given"]})
        return pk


def encode_cursor(pk: int) -> str:
    return base64.urlsafe_b64encode(f"after:{pk}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (ValueError, UnicodeDecodeError):
        return None
    digits = text.removeprefix("after:")
    return int(digits) if text.startswith("after:") and _DIGITS.fullmatch(digits) and len(digits) <= 18 else None
