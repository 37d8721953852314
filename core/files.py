"""Files a user names: read size-limited and strictly (JSON without NaN or repeated keys), and
written without following a symbolic link.

A file that cannot be read as asked raises :class:`FileRefused`, whose ``reason`` the caller puts
after its own ``where: `` (each family has its error class and its way of naming the file).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import IO, Any

from .text import shorten

MAX_FILE_BYTES = 16 * 2**20  # the most an input file (instance, problem, network, options) may hold


class FileRefused(ValueError):
    """A file that cannot be read as asked; ``reason`` says why, without naming the file."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_bytes(path: str | os.PathLike, *, limit: int = MAX_FILE_BYTES, kind: str = "a file") -> bytes:
    """The bytes of the regular file at ``path``; FileRefused if it is missing or unreadable, is not
    a regular file (told before opening: a FIFO or ``/dev/zero`` never blocks) or holds more than
    ``limit`` bytes (counted as read: a size from ``stat`` is not trusted)."""
    try:
        _check_regular(os.stat(path), kind)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # replaced by a FIFO since: no wait for a writer
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            _check_regular(info, kind)
            if info.st_size > limit:
                raise FileRefused(f"the file has {info.st_size} bytes, more than the limit of {limit}")
            data = file.read(limit + 1)
    except FileNotFoundError:
        raise FileRefused("no such file") from None
    except OSError as error:
        raise FileRefused(f"cannot read the file ({error.strerror or error})") from None
    if len(data) > limit:
        raise FileRefused(f"the file is larger than the limit of {limit} bytes")
    return data


def read_text(path: str | os.PathLike, *, limit: int = MAX_FILE_BYTES, kind: str = "a file") -> str:
    """The UTF-8 text of the file at ``path`` (:func:`read_bytes`); FileRefused if it is not UTF-8."""
    data = read_bytes(path, limit=limit, kind=kind)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileRefused(f"not UTF-8 text (byte {error.start})") from None


def read_json(path: str | os.PathLike, *, limit: int = MAX_FILE_BYTES, kind: str = "a JSON file") -> Any:
    """The JSON document in the file at ``path`` (:func:`read_text`, then :func:`loads_json`)."""
    return loads_json(read_text(path, limit=limit, kind=kind))


def loads_json(text: str) -> Any:
    """The JSON document ``text``; FileRefused if it is not JSON, holds NaN or Infinity, names a key
    twice in one object (``json`` would keep the last silently) or nests too deeply."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except FileRefused:
        raise
    except json.JSONDecodeError as error:
        raise FileRefused(f"not valid JSON ({error.msg} at line {error.lineno} column {error.colno})") from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise FileRefused(f"not valid JSON ({shorten(str(error), 200)})") from None
    except (RecursionError, MemoryError):
        raise FileRefused("the JSON is nested too deeply") from None


def _refuse_constant(name: str):
    raise FileRefused(f"{name} is not a number (numbers must be finite)")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    document = dict(pairs)
    if len(document) < len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise FileRefused(f"duplicate key '{shorten(key)}'")
            seen.add(key)
    return document


def _check_regular(info: os.stat_result, kind: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise FileRefused(f"is a directory, not {kind}")
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused("not a regular file")


def open_append(path: str | os.PathLike) -> IO[str]:
    """``path`` opened to append text, created (mode 0o600) if missing; OSError, and nothing
    opened, where it is a symbolic link (never followed) or not a regular file (a FIFO does not block)."""
    return _open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600, "a", encoding="utf-8")


def create_file(path: str | os.PathLike) -> IO[bytes]:
    """``path`` opened to write bytes, created or emptied; OSError, as :func:`open_append`, where it
    is a symbolic link or not a regular file."""
    return _open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666, "wb")


# what opening for writing says for a link (O_NOFOLLOW) and for a FIFO without a reader (O_NONBLOCK)
_NOT_OPENED = {errno.ELOOP: "a symbolic link, not followed", errno.ENXIO: "not a regular file"}


def _open_regular(path: str | os.PathLike, flags: int, mode: int, how: str, **options: Any) -> IO:
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, mode)
    except OSError as error:
        if error.errno in _NOT_OPENED:
            raise OSError(error.errno, _NOT_OPENED[error.errno], os.fspath(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
    return os.fdopen(fd, how, **options)
