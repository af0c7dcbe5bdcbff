"""A multipart/form-data body read from disk as it is sent: ``requests`` would build the whole body in memory, and a
PubMed file is large. The body has a length (so the request has a Content-Length, which every server reads) and a
``read`` that hands out the fields, then the file in blocks, then the closing boundary."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import BinaryIO


class MultipartFile:
    """``fields`` and one file (form field ``file_field``) as a multipart body; use it as ``data=`` with
    ``headers={"Content-Type": body.content_type}`` and close it afterwards (it holds the file open)."""

    def __init__(self, fields: dict[str, str], file_field: str, path: Path, filename: str | None = None) -> None:
        boundary = uuid.uuid4().hex
        self.content_type = f"multipart/form-data; boundary={boundary}"
        head = b"".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_quote(k)}"\r\n\r\n'.encode() + v.encode() + b"\r\n"
            for k, v in fields.items()
        )
        name = _quote(filename or path.name)
        head += (f'--{boundary}\r\nContent-Disposition: form-data; name="{_quote(file_field)}"; filename="{name}"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n").encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        self._file = open(path, "rb")  # closed by close(), after the request
        self._parts: list[bytes | BinaryIO] = [head, self._file, tail]
        self._length = len(head) + os.fstat(self._file.fileno()).st_size + len(tail)
        self._index = 0
        self._offset = 0

    def __len__(self) -> int:
        return self._length

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the body (all that is left when ``size`` is negative)."""
        out = bytearray()
        while self._index < len(self._parts) and (size < 0 or len(out) < size):
            part = self._parts[self._index]
            want = -1 if size < 0 else size - len(out)
            if isinstance(part, bytes):
                chunk = part[self._offset:] if want < 0 else part[self._offset:self._offset + want]
                self._offset += len(chunk)
                done = self._offset >= len(part)
            else:
                chunk = part.read(want)
                done = not chunk or (want >= 0 and len(chunk) < want)
            out += chunk
            if done:
                self._index, self._offset = self._index + 1, 0
        return bytes(out)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> MultipartFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _quote(value: str) -> str:
    """A form field's name or a file name in its header: quotes and line breaks escaped as browsers do."""
    return value.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
