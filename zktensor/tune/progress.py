"""Progress output for the tuner: tqdm or rich when installed, else plain lines."""
from __future__ import annotations

import sys


class Progress:
    """Plain lines on a stream (the fallback, and what tests capture)."""

    def __init__(self, stream=None, quiet: bool = False):
        self.stream = stream or sys.stdout
        self.quiet = quiet

    def line(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)

    def start_task(self, index: int, count: int, label: str, candidates: int) -> None:
        self.line(f"[{index}/{count}] {label}: up to {candidates} candidates")

    def candidate(self, done: int, total: int, text: str) -> None:
        self.line(f"    ({done}/{total}) {text}")

    def end_task(self, text: str) -> None:
        self.line(f"    -> {text}")

    def close(self) -> None:
        pass


class TqdmProgress(Progress):
    def __init__(self, stream=None, quiet: bool = False):
        super().__init__(stream, quiet)
        from tqdm import tqdm
        self._tqdm = tqdm
        self.bar = None

    def line(self, text: str) -> None:
        if not self.quiet:
            self._tqdm.write(text, file=self.stream)

    def start_task(self, index, count, label, candidates):
        self.close()
        self.line(f"[{index}/{count}] {label}")
        self.bar = self._tqdm(total=candidates, desc=label, file=self.stream, leave=False,
                              disable=self.quiet)

    def candidate(self, done, total, text):
        if self.bar is not None:
            self.bar.total = total
            self.bar.n = done
            self.bar.set_postfix_str(text[:60])
            self.bar.refresh()

    def end_task(self, text):
        self.close()
        self.line(f"    -> {text}")

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class RichProgress(Progress):
    def __init__(self, stream=None, quiet: bool = False):
        super().__init__(stream, quiet)
        from rich.console import Console
        from rich.progress import Progress as RP
        self.console = Console(file=self.stream, quiet=quiet)
        self.rp = RP(console=self.console, transient=True)
        self.task = None
        self.rp.start()

    def line(self, text):
        self.console.print(text, markup=False, highlight=False)

    def start_task(self, index, count, label, candidates):
        if self.task is not None:
            self.rp.remove_task(self.task)
        self.line(f"[{index}/{count}] {label}")
        self.task = self.rp.add_task(label, total=candidates)

    def candidate(self, done, total, text):
        if self.task is not None:
            self.rp.update(self.task, completed=done, total=total, description=text[:60])

    def end_task(self, text):
        if self.task is not None:
            self.rp.remove_task(self.task)
            self.task = None
        self.line(f"    -> {text}")

    def close(self):
        self.rp.stop()


def make_progress(kind: str = "auto", stream=None, quiet: bool = False) -> Progress:
    """kind: auto (tqdm, else rich, else plain, and plain when the stream is not a terminal),
    tqdm, rich or plain."""
    stream = stream or sys.stdout
    if kind == "plain" or quiet:
        return Progress(stream, quiet)
    tty = getattr(stream, "isatty", lambda: False)()
    order = {"auto": ("tqdm", "rich") if tty else (), "tqdm": ("tqdm",), "rich": ("rich",)}.get(kind, ())
    for name in order:
        try:
            return (TqdmProgress if name == "tqdm" else RichProgress)(stream, quiet)
        except ImportError:
            continue
    return Progress(stream, quiet)
