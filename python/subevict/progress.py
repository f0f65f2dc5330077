"""Progress of long Python-side work on stderr: done/total, rate, elapsed and ETA.

On a terminal one line is redrawn in place; in a log (stderr not a terminal) the first and the last
unit are written, and in between at most one line every `interval` seconds, so a log stays readable
and still shows a long run is alive."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts `total` units of `label` work. advance(what) marks one unit done; note(what) says what
    runs now without counting (written under the same rate limit). quiet: writes nothing."""

    def __init__(self, label, total, unit="unit", quiet=False, stream=None, interval=5.0,
                 clock=time.monotonic):
        self.label, self.total, self.unit = label, int(total), unit
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet or self.total <= 0
        self.terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval, self.clock = float(interval), clock
        self.done = 0
        self.start = clock()
        self.last_line = None  # time of the last line written to a log

    def _eta(self, elapsed):
        if self.done == 0:
            return "ETA unknown"
        return f"ETA {elapsed / self.done * (self.total - self.done):.0f} s"

    def _write(self, what, final):
        now = self.clock()
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        text = (f"{self.label}: {self.done}/{self.total} {self.unit}s, {rate:.2f}/s, "
                f"{elapsed:.0f} s elapsed, {self._eta(elapsed)}" + (f" ({what})" if what else ""))
        if self.terminal:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
            self.stream.flush()
            return
        if final or self.last_line is None or now - self.last_line >= self.interval:
            self.stream.write(text + "\n")
            self.stream.flush()
            self.last_line = now

    def advance(self, what=""):
        """One more unit done; `what` describes it."""
        if self.quiet:
            return
        self.done += 1
        self._write(what, final=self.done >= self.total)

    def note(self, what):
        """What runs now, without counting a unit."""
        if not self.quiet:
            self._write(what, final=False)
