"""A directory this process cannot create files in, also when it runs as root.

Root ignores permission bits, so ``chmod 0500`` alone proves nothing there. In order:

1. ``chmod 0500`` on a fresh directory (enough for any other user);
2. the immutable attribute (``chattr +i``), which binds root too (it needs
   CAP_LINUX_IMMUTABLE and a filesystem that has the attribute: ext4, xfs, btrfs);
3. ``/sys/kernel``: sysfs, where nobody can create a regular file (EACCES, or EROFS
   where it is mounted read-only, as in most containers).

Each candidate is tried (a file is created and removed) before it is used, so a test
never runs against a directory that is writable after all; with none, the test is
skipped.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def cannot_create_in(d) -> bool:
    try:
        fd, p = tempfile.mkstemp(dir=str(d))
    except OSError:
        return True
    os.close(fd)
    os.unlink(p)
    return False


@contextlib.contextmanager
def unwritable_dir(tmp_path: Path):
    """Yields (directory, how) where ``how`` says which way was used."""
    d = tmp_path / "unwritable"
    d.mkdir()
    d.chmod(0o500)
    try:
        if cannot_create_in(d):
            yield d, "chmod 0500"
            return
    finally:
        d.chmod(0o700)
    chattr = shutil.which("chattr")
    if chattr and subprocess.run([chattr, "+i", str(d)], capture_output=True).returncode == 0:
        try:
            if cannot_create_in(d):
                yield d, "chattr +i"
                return
        finally:
            subprocess.run([chattr, "-i", str(d)], capture_output=True)
    sysfs = Path("/sys/kernel")
    if sysfs.is_dir() and cannot_create_in(sysfs):
        yield sysfs, "sysfs"
        return
    pytest.skip("no directory this process cannot write in (root without chattr, no sysfs)")
