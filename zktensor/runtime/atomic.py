"""Atomic file replacement: a reader sees the old file or the new one, never half of one.

Write to a temporary file in the destination's directory (so the rename stays on
one filesystem), flush and fsync it, ``os.replace`` it over the destination, then
fsync the directory so the rename itself survives a crash.
"""
from __future__ import annotations

import os


class atomic_write:
    """``with atomic_write(path, mode) as f:`` write ``f``; on a clean exit it replaces
    ``path`` (module doc), on an exception ``path`` is left as it was. A class, where
    contextlib.contextmanager would do: the thin client imports this module, and
    contextlib's import (with collections' and functools') would be its start-up time."""

    def __init__(self, path, mode: str = "w", encoding: str | None = None):
        self.path, self.mode, self.encoding = os.fspath(path), mode, encoding

    def __enter__(self):
        self.directory = os.path.dirname(os.path.abspath(self.path))
        fd, self.tmp = temp_file(self.directory, f".{os.path.basename(self.path)}.", ".tmp")
        text = "b" not in self.mode
        try:
            self.file = os.fdopen(fd, self.mode, encoding=self.encoding if text else None,
                                  newline="" if text else None)
        except BaseException:
            os.close(fd)
            discard(self.tmp)
            raise
        return self.file

    def __exit__(self, exc_type, exc, tb):
        try:
            with self.file as f:
                if exc_type is None:
                    f.flush()
                    os.fsync(f.fileno())
            if exc_type is not None:
                discard(self.tmp)
                return False
            # mkstemp makes the file 0600: keep the replaced file's mode, else 0644
            # (reading the umask would mean changing it, which is not thread-safe).
            try:
                mode_bits = os.stat(self.path).st_mode & 0o777
            except FileNotFoundError:
                mode_bits = 0o644
            os.chmod(self.tmp, mode_bits)
            os.replace(self.tmp, self.path)
        except BaseException:
            discard(self.tmp)
            raise
        fsync_dir(self.directory)
        return False


def discard(path: str) -> None:
    """Unlink a temporary of ours if it is still there; an error doing so is not the caller's."""
    try:
        os.unlink(path)
    except OSError:
        pass


def temp_file(directory: str, prefix: str, suffix: str) -> tuple[int, str]:
    """(fd, path) of a new file, mode 0600, named prefix + random + suffix in `directory`: what
    tempfile.mkstemp does, without importing tempfile (and its random and weakref) into the
    thin client, which writes the proof files (`serve.client`)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{os.urandom(6).hex()}{suffix}")
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {directory}")


def fsync_dir(directory) -> None:
    """Make the renames inside `directory` survive a crash (best effort: some filesystems
    cannot fsync a directory)."""
    try:
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def publish_dir(tmp, final) -> bool:
    """Rename the finished directory `tmp` to `final`; when another process published
    `final` first (its meta.json is there), keep theirs. Returns whether ours went in."""
    try:
        os.rename(tmp, final)
        return True
    except OSError:
        if not os.path.exists(os.path.join(final, "meta.json")):
            raise
        return False
