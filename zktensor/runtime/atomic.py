"""Atomic file replacement: a reader sees the old file or the new one, never half of one.

Write to a temporary file in the destination's directory (so the rename stays on
one filesystem), flush and fsync it, ``os.replace`` it over the destination, then
fsync the directory so the rename itself survives a crash.
"""
from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", encoding: str | None = None):
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = temp_file(directory, f".{os.path.basename(path)}.", ".tmp")
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None,
                       newline="" if "b" not in mode else None) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file 0600: keep the replaced file's mode, else 0644
        # (reading the umask would mean changing it, which is not thread-safe).
        try:
            mode_bits = os.stat(path).st_mode & 0o777
        except FileNotFoundError:
            mode_bits = 0o644
        os.chmod(tmp, mode_bits)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


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
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


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
