"""Where a command writes its results: checked before any work, replaced as one set.

    names = check_outputs([proof_path, public_path], inputs=[zkey_path, wtns_path])
    ...                                          # the proof: minutes of work
    write_proof_pair(proof_path, public_path, proof, public)

``check_outputs`` refuses, naming the path as the user gave it: an empty path, a
directory, a directory to write into that is missing, not a directory or not
writable, something that is not a regular file (a device, a FIFO), and an output
that is an input or another output (the same file after resolving symbolic links,
or a hard link of it). Writability is tried, not inferred from permission bits
(which root ignores, and which say nothing of read-only or pseudo filesystems): a
temporary file is made in the directory and removed.

``write_outputs`` replaces several files so that they change together: every new
file is first written in full to a temporary file beside its destination (flushed,
and fsynced unless ``sync=False``), then the temporaries are renamed over the
destinations one after the other. If a rename fails, the files already renamed get their old contents back
(kept as hard links, or copies where the filesystem has none), so a failure at any
point leaves all the earlier files as they were. SIGINT, SIGTERM and SIGHUP are
held back during the renames, so that Ctrl-C or a ``kill`` leaves either the old
set or the new one; only SIGKILL or a power cut between two renames can leave a
mix, the window being a few system calls wide.

``sync=False`` (proof and public files: `write_proof_pair`, the service's client)
skips the fsyncs. The set stays atomic for every reader and against any process
being killed, which is what the renames give; what it gives up is durability across
a power cut in the seconds before the kernel writes the pages back, after which a
new file could be empty. A proof is remade from the same inputs in milliseconds,
rapidsnark and snarkjs do not sync either, and through the service the fsyncs
were a large share of a small proof's time (the commit that made this so). A .zkey from `setup` (its toxic waste is
gone: it cannot be made again) keeps them.

The temporary files and the second names of the old contents are hidden and say
whose they are, ``.<name>.zktensor-<pid>-<...>.tmp`` / ``.old``; a writer killed
(SIGKILL) before removing them leaves them behind, and the next write of the same
output removes those of processes that no longer run.

A destination that is a symbolic link is written through it (its target is
replaced), as ``open(path, "w")`` would. Standard library only: the prover
service's thin client imports this module.
"""
from __future__ import annotations

import _thread
import errno
import os
import stat
import sys

from ..runtime.atomic import discard, fsync_dir, temp_file

TYPE_CHECKING = False           # typing's flag without typing's import (the thin client's start-up)
if TYPE_CHECKING:
    from collections.abc import Sequence


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message names it."""


def _resolved(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def _same_file(a: str, b: str) -> bool:
    if _resolved(a) == _resolved(b):
        return True
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


_MARK = "zktensor"
"""In our temporary and backup names (`_aside_name`): what makes them ours to clean up."""


def _aside_name(target: str, tag: str, suffix: str) -> str:
    """A hidden name beside ``target`` saying this process made it: ``.<base>.zktensor-<pid>-<tag><suffix>``."""
    d, base = os.path.split(target)
    return os.path.join(d, f".{base}.{_MARK}-{os.getpid()}-{tag}{suffix}")


def _aside_prefix(target: str) -> str:
    return f".{os.path.basename(target)}.{_MARK}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:           # EPERM: another user's live process
        return True
    return True


def clean_stale(target: str) -> list[str]:
    """Remove the temporaries and backups of ``target`` (`_aside_name`) left by processes
    that no longer run; returns their paths. Our own process's are in use: kept."""
    d, base = os.path.split(_resolved(target))
    prefix = f".{base}.{_MARK}-"
    removed = []
    try:
        names = os.listdir(d)
    except OSError:
        return removed
    for name in names:
        pid, dash, _ = name[len(prefix):].partition("-")
        ours = name.startswith(prefix) and dash and name.endswith((".tmp", ".old")) \
            and pid.isascii() and pid.isdigit()
        if not ours or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            os.unlink(os.path.join(d, name))
            removed.append(os.path.join(d, name))
        except OSError:
            pass
    return removed


def _try_create(directory: str, target: str) -> OSError | None:
    """Make and remove a file in ``directory``: None if that works, else the error."""
    try:
        fd, probe = temp_file(directory, _aside_prefix(target), ".tmp")
    except OSError as e:
        return e
    os.close(fd)
    discard(probe)
    return None


def check_output(path, what: str = "output") -> str:
    """One output path's own checks (see the module doc); returns it as a str."""
    if path is None or os.fspath(path) in ("", b""):
        raise OutputError(f"{what} path is empty")
    name = os.fsdecode(path)
    if os.path.isdir(name):
        raise OutputError(f"{name}: is a directory ({what} must be a file)")
    target = _resolved(name)
    if os.path.lexists(target):
        try:
            mode = os.stat(target).st_mode
        except OSError as e:
            raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
        if not stat.S_ISREG(mode):
            raise OutputError(f"{name}: exists and is not a regular file")
    directory = os.path.dirname(target)
    shown = os.path.dirname(name) or "."
    if not os.path.isdir(directory):
        if os.path.lexists(directory):
            raise OutputError(f"{name}: {shown} is not a directory")
        raise OutputError(f"{name}: directory {shown} does not exist")
    err = None if os.access(directory, os.W_OK | os.X_OK) else PermissionError(errno.EACCES, "Permission denied")
    err = err or _try_create(directory, target)
    if err is None:
        return name
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        raise OutputError(f"{name}: directory {shown} is not writable ({err.strerror or err})")
    raise OutputError(f"{name}: cannot write ({err.strerror or err})")


def check_outputs(outputs: Sequence, inputs: Sequence = (), what: Sequence[str] | None = None) -> list[str]:
    """Check output paths before any work (module doc); ``inputs`` are the files the
    command reads (None entries are skipped), ``what`` optional names for the outputs
    ("proof", "public signals") used in messages about empty paths."""
    names = [check_output(p, what[i] if what else "output") for i, p in enumerate(outputs)]
    ins = [os.fsdecode(p) for p in inputs if p is not None and os.fspath(p) not in ("", b"")]
    for i, name in enumerate(names):
        for src in ins:
            if _same_file(name, src):
                same = "" if name == src else f" ({src})"
                raise OutputError(f"{name}: is also an input{same}; writing it would destroy it")
        for other in names[:i]:
            if _same_file(name, other):
                raise OutputError(f"{other} and {name}: two outputs are the same file")
    return names


def _hold_signals():
    """Hold SIGINT, SIGTERM and SIGHUP back in the main thread, until `_release_signals`
    (which delivers them); returns what it takes to undo, None where it held nothing.

    `_signal`, `signal`'s C half, and no `threading`: their imports (enum's, for signal's
    enums) would be most of the thin client's, which writes through here. A process that
    has not imported threading runs on its main thread."""
    import _signal
    threading = sys.modules.get("threading")
    if threading is not None and threading.current_thread() is not threading.main_thread() \
            or not hasattr(_signal, "pthread_sigmask"):
        return None
    return _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP})


def _release_signals(held) -> None:
    if held is not None:
        import _signal
        _signal.pthread_sigmask(_signal.SIG_SETMASK, held)


def _chunks(data) -> list:
    """str (UTF-8), a bytes-like object, or a list/tuple of bytes-like chunks (a large file
    written without being joined into one) -> the chunks to write."""
    if isinstance(data, str):
        return [data.encode("utf-8")]
    if isinstance(data, (list, tuple)):
        return list(data)
    return [data]


def _write_temp(name: str, data, sync: bool) -> str:
    """The new content of ``name`` in a temporary file beside its target; its path."""
    target = _resolved(name)
    directory = os.path.dirname(target)
    try:
        fd, tmp = temp_file(directory, _aside_prefix(target), ".tmp")
    except OSError as e:
        raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in _chunks(data):
                f.write(chunk)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        try:
            mode_bits = os.stat(target).st_mode & 0o777
        except FileNotFoundError:
            mode_bits = 0o644   # mkstemp's 0600 would hide a proof from its readers
        os.chmod(tmp, mode_bits)
    except BaseException as e:
        discard(tmp)
        if isinstance(e, OSError):
            raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None
        raise
    return tmp


def _backup(target: str) -> str | None:
    """A second name for the current file at ``target`` (None: there is none)."""
    if not os.path.exists(target):
        return None
    backup = _aside_name(target, str(_thread.get_ident()), ".old")
    discard(backup)
    try:
        os.link(target, backup)
    except OSError:
        import shutil           # rarely: a filesystem without hard links (the client's start-up lacks it)
        shutil.copy2(target, backup)
    return backup


def write_outputs(items: Sequence, sync: bool = True) -> None:
    """Replace the files of ``items`` ((path, data) pairs; data: str, bytes, or a list of
    bytes-like chunks) as one set: all of them or none (module doc); ``sync``: fsync the
    files and their directories. Raises OutputError naming the user's path."""
    items = [(check_output(p), data) for p, data in items]
    for name, _ in items:
        clean_stale(name)
    temps: list[str] = []
    try:
        for name, data in items:
            temps.append(_write_temp(name, data, sync))
        targets = [_resolved(name) for name, _ in items]
        backups: list[str | None] = []
        try:
            for name, target in zip((n for n, _ in items), targets):
                try:
                    backups.append(_backup(target))
                except OSError as e:
                    raise OutputError(f"{name}: cannot keep its old content ({e.strerror or e})") from None
            done = 0
            held = _hold_signals()
            try:
                for tmp, target in zip(temps, targets):
                    os.replace(tmp, target)
                    done += 1
            except OSError as e:
                failed = items[done][0]
                for j in range(done):            # put the earlier files back
                    try:
                        if backups[j] is not None:
                            os.replace(backups[j], targets[j])
                            backups[j] = None
                        else:
                            os.unlink(targets[j])
                    except OSError:
                        pass
                raise OutputError(f"{failed}: cannot write ({e.strerror or e}); "
                                  "no output was changed") from None
            finally:
                _release_signals(held)
        finally:
            for b in backups:
                if b is not None:
                    discard(b)
    finally:
        for tmp in temps:
            discard(tmp)
    if sync:
        for d in {os.path.dirname(t) for t in (_resolved(n) for n, _ in items)}:
            fsync_dir(d)


def write_proof_pair(proof_path, public_path, proof, public) -> None:
    """proof.json and public.json in snarkjs's layout, replaced together, not synced
    (module doc). ``proof``: a ``Proof`` or proof.json's dict; ``public``: ints or decimal
    strings."""
    from .formats.json_io import Proof, dumps, proof_to_json, public_to_json
    proof_doc = proof_to_json(proof) if isinstance(proof, Proof) else proof
    write_outputs([(proof_path, dumps(proof_doc)), (public_path, dumps(public_to_json(public)))], sync=False)


__all__ = ["OutputError", "check_output", "check_outputs", "clean_stale", "write_outputs", "write_proof_pair"]
