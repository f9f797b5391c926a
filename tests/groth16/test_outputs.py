"""groth16.outputs: output paths checked before work, files replaced as one set."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zktensor.groth16 import outputs
from zktensor.groth16.outputs import OutputError, check_outputs, write_outputs, write_proof_pair

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
from unwritable import unwritable_dir  # noqa: E402


def _listing(d):
    return sorted(os.listdir(d))


def test_refuses_empty_directory_and_missing_directory(tmp_path):
    with pytest.raises(OutputError, match="proof path is empty"):
        check_outputs(["", tmp_path / "p.json"], what=["proof", "public signals"])
    with pytest.raises(OutputError, match=f"{tmp_path}: is a directory"):
        check_outputs([tmp_path])
    missing = tmp_path / "nope" / "p.json"
    with pytest.raises(OutputError, match=f"{missing}: directory .*nope does not exist"):
        check_outputs([missing])
    with pytest.raises(OutputError, match="not a regular file"):
        check_outputs(["/dev/null"])
    assert _listing(tmp_path) == []


def test_refuses_unwritable_directory_also_as_root(tmp_path):
    # permission bits alone do not stop root: unwritable_dir finds a way that does
    with unwritable_dir(tmp_path) as (ro, how):
        with pytest.raises(OutputError, match=f"{ro / 'p.json'}: directory {ro} is not writable"):
            check_outputs([ro / "p.json"])
        with pytest.raises(OutputError, match="is not writable"):
            write_outputs([(tmp_path / "q.json", "q"), (ro / "p.json", "p")])
    assert not (tmp_path / "q.json").exists()


def test_refuses_a_path_under_a_regular_file(tmp_path):
    (tmp_path / "file.json").write_text("x")
    with pytest.raises(OutputError, match=f"{tmp_path / 'file.json' / 'p.json'}: .*file.json is not a directory"):
        check_outputs([tmp_path / "file.json" / "p.json"])


def test_refuses_inputs_and_each_other_through_links(tmp_path):
    key = tmp_path / "c.zkey"
    key.write_bytes(b"key")
    link = tmp_path / "link.json"
    link.symlink_to(key)
    hard = tmp_path / "hard.json"
    os.link(key, hard)
    for out in (key, link, hard, tmp_path / "." / "c.zkey"):
        with pytest.raises(OutputError, match="is also an input"):
            check_outputs([out, tmp_path / "public.json"], inputs=[key, None])
    (tmp_path / "sub").mkdir()
    with pytest.raises(OutputError, match="two outputs are the same file"):
        check_outputs([tmp_path / "p.json", tmp_path / "sub" / ".." / "p.json"])
    assert check_outputs([tmp_path / "p.json", tmp_path / "q.json"], inputs=[key]) == \
        [str(tmp_path / "p.json"), str(tmp_path / "q.json")]
    assert key.read_bytes() == b"key"


def test_pair_written_together(tmp_path):
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    write_outputs([(a, "new a"), (b, b"new b")])
    assert a.read_text() == "new a" and b.read_bytes() == b"new b"
    assert oct(a.stat().st_mode & 0o777) == "0o644"
    assert _listing(tmp_path) == ["proof.json", "public.json"]


@pytest.mark.parametrize("sync", [True, False])
def test_sync_is_what_fsyncs(tmp_path, monkeypatch, sync):
    """sync=True fsyncs each new file and the directory; sync=False (the proof pair's) none,
    the set replaced all the same."""
    import stat
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        return real(fd)
    monkeypatch.setattr(os, "fsync", fsync)
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    a.write_text("old a")
    write_outputs([(a, "new a"), (b, "new b")], sync=sync)
    assert a.read_text() == "new a" and b.read_text() == "new b"
    assert _listing(tmp_path) == ["proof.json", "public.json"]
    assert synced == (["file", "file", "dir"] if sync else [])
    synced.clear()
    write_proof_pair(a, b, {"pi_a": []}, [3])
    assert synced == [] and b.read_text() == '[\n "3"\n]'


@pytest.mark.parametrize("old", [True, False])
def test_failed_second_rename_puts_the_first_back(tmp_path, monkeypatch, old):
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    if old:
        a.write_text("old a")
        b.write_text("old b")
    real = os.replace
    calls = []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == 2 and str(dst).endswith("public.json"):
            raise PermissionError(13, "Permission denied")
        return real(src, dst)
    monkeypatch.setattr(outputs.os, "replace", failing)
    with pytest.raises(OutputError, match=f"{b}: cannot write .*no output was changed"):
        write_outputs([(a, "new a"), (b, "new b")])
    if old:
        assert a.read_text() == "old a" and b.read_text() == "old b"
        assert _listing(tmp_path) == ["proof.json", "public.json"]
    else:
        assert _listing(tmp_path) == []


def test_write_failure_names_the_users_path(tmp_path, monkeypatch):
    a = tmp_path / "proof.json"
    a.write_text("old")

    def full(*args, **kw):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(outputs, "temp_file", full)
    with pytest.raises(OutputError, match=f"^{a}: cannot write \\(No space left on device\\)"):
        write_outputs([(a, "new")])
    assert a.read_text() == "old"


def test_symlinked_output_is_written_through(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "proof.json"
    link.symlink_to(target)
    write_outputs([(link, "new")])
    assert link.is_symlink() and target.read_text() == "new"


def test_proof_pair_layout(tmp_path):
    from zktensor.algebra.curves import group
    from zktensor.groth16.formats.json_io import Proof, read_proof, read_public
    g1, g2 = group("bn254.g1").generator, group("bn254.g2").generator
    proof = Proof("bn254", g1, g2, None)
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    write_proof_pair(a, b, proof, [1, 2])
    assert read_proof(a) == proof and read_public(b) == [1, 2]
    assert b.read_text() == '[\n "1",\n "2"\n]'


def test_a_writer_killed_mid_write_leaves_hidden_files_the_next_write_removes(tmp_path):
    a, b = tmp_path / "proof.json", tmp_path / "public.json"
    a.write_text("old a")
    b.write_text("old b")
    # a child killed (SIGKILL: nothing runs after it) at its first rename, after the temporaries
    # and the backups of the old contents were made
    code = ("import os, signal, sys\n"
            "from zktensor.groth16 import outputs\n"
            "outputs.os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)\n"
            "outputs.write_outputs([(sys.argv[1], 'new a'), (sys.argv[2], 'new b')])\n")
    root = Path(__file__).resolve().parents[2]
    child = subprocess.run([sys.executable, "-c", code, str(a), str(b)], cwd=root, capture_output=True,
                           env=dict(os.environ, PYTHONPATH=str(root)))
    assert child.returncode == -9, child.stderr
    left = [n for n in _listing(tmp_path) if n not in ("proof.json", "public.json")]
    assert sorted(n.rsplit(".", 1)[1] for n in left) == ["old", "old", "tmp", "tmp"], left
    assert all(n.startswith((".proof.json.zktensor-", ".public.json.zktensor-")) for n in left), left
    assert a.read_text() == "old a" and b.read_text() == "old b"
    # a live process's files (this one's, our parent's) are in use: kept
    live = [tmp_path / f".proof.json.zktensor-{os.getpid()}-1.old", tmp_path / f".proof.json.zktensor-{os.getppid()}-2.tmp"]
    for p in live:
        p.write_text("in use")
    write_outputs([(a, "new a"), (b, "new b")])
    assert a.read_text() == "new a" and b.read_text() == "new b"
    assert _listing(tmp_path) == sorted(["proof.json", "public.json"] + [p.name for p in live])
