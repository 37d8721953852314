"""One writing process per directory: an exclusive ``flock`` on the directory itself.

:class:`DirectoryLock` opens a descriptor on the directory (no lock file) and takes
``flock(LOCK_EX | LOCK_NB)`` on it.  The kernel drops the lock when the process ends, however it
ends, so a crash leaves no stale lock.  The locks of one directory taken in one process share one
descriptor (they are counted): a library user may open a store again in the process that created
it; the run store's owner token tells such claims apart.  Where the file system does not implement
``flock`` (Lustre without its ``flock`` mount option) nothing is locked and that token alone
guards the store.  ``flock`` is advisory: it binds pbbflow processes, not other programs.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import weakref

_UNSUPPORTED = {errno.ENOSYS, errno.ENOLCK, errno.EOPNOTSUPP}
_guard = threading.Lock()
_held: dict[tuple[int, int], list[int]] = {}  # (device, inode) -> [descriptor, locks] of this process


class DirectoryBusy(Exception):
    """Another process holds the directory's lock."""


class DirectoryLock:
    """This process's exclusive lock on a directory, held until :meth:`release` or garbage collection."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Take the lock; DirectoryBusy if another process holds it, OSError if the directory cannot be opened."""
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        stat = os.fstat(fd)
        key = (stat.st_dev, stat.st_ino)
        with _guard:
            if key in _held:
                os.close(fd)
                _held[key][1] += 1
            else:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as error:
                    if error.errno not in _UNSUPPORTED:
                        os.close(fd)
                        if isinstance(error, BlockingIOError):
                            raise DirectoryBusy(os.fspath(path)) from None
                        raise
                _held[key] = [fd, 1]
        self._release = weakref.finalize(self, _release, key)

    def release(self) -> None:
        """Give the lock up (the directory stays locked while other locks of this process hold it)."""
        self._release()

    def __enter__(self) -> DirectoryLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _release(key: tuple[int, int]) -> None:
    with _guard:
        entry = _held[key]
        entry[1] -= 1
        if entry[1] == 0:
            del _held[key]
            os.close(entry[0])  # closing the last descriptor of the description drops the flock
