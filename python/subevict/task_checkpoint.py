"""A task-loop run's finished runs on disk, one JSON line each, so that a killed study resumes
where it stopped instead of starting again (closed_loop_tasks' `checkpoint`).

The file's first line is its header: the model file's SHA-256, the evicting layers and the seed;
a checkpoint written under another header is refused, not mixed in. Every later line is one
TaskRun with its sample's token-id SHA-256 and answer ids: a run is reused only for the same
sample, protocol, cache and budget. Lines are appended and flushed as runs finish; a last line
cut short by a kill is dropped (and overwritten on resume), any other unreadable line refused."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, fields

from . import _subevict

FORMAT = "subevict task-loop checkpoint"
VERSION = 1


def run_key(sample, protocol, cache, budget_size, budget):
    """What identifies one run across processes."""
    return (sample.sha256, tuple(int(t) for t in sample.answer_ids), protocol, cache, int(budget_size), str(budget))


class RunLog:
    """The runs finished so far under `path` (created with `header`, a JSON-able dict, when
    missing). InputError naming the file for a header that differs from `header`, or a broken
    line other than the last."""

    def __init__(self, path, header, run_type):
        self.path, self.run_type, self.done = path, run_type, {}
        header = {"format": FORMAT, "version": VERSION, **header}
        good_bytes = 0
        if os.path.exists(path):
            with open(path, "rb") as stream:
                lines = stream.read().split(b"\n")
            complete = lines[:-1]  # the text after the last newline was cut short, or is empty
            if not complete:
                raise _subevict.InputError(f"checkpoint {path}: expected a header line, got an empty file")
            try:
                found = json.loads(complete[0])
            except ValueError:
                raise _subevict.InputError(f"checkpoint {path}: line 1: expected a JSON header") from None
            for name in header:
                if found.get(name) != header[name]:
                    raise _subevict.InputError(
                        f"checkpoint {path}: {name}: written for {found.get(name)!r}, this run has {header[name]!r} "
                        f"(use another output directory, or remove the checkpoint)")
            good_bytes = len(complete[0]) + 1
            names = {f.name for f in fields(run_type)}
            for number, line in enumerate(complete[1:], start=2):
                try:
                    item = json.loads(line)
                    key = tuple(item.pop("key"))
                    run = run_type(**{name: item[name] for name in names})
                except (ValueError, KeyError, TypeError):
                    raise _subevict.InputError(f"checkpoint {path}: line {number}: expected a finished run") from None
                self.done[(key[0], tuple(key[1]), *key[2:])] = run
                good_bytes += len(line) + 1
        else:
            with open(path, "w") as stream:
                stream.write(json.dumps(header) + "\n")
            good_bytes = None
        if good_bytes is not None:  # drop a cut-short last line before appending after it
            with open(path, "r+b") as stream:
                stream.truncate(good_bytes)
        self.stream = open(path, "a")

    def get(self, key):
        """The finished run under `key` (run_key), or None."""
        return self.done.get(key)

    def add(self, key, run):
        """Appends `run` under `key`, flushed to the file."""
        self.done[key] = run
        self.stream.write(json.dumps({"key": list(key), **asdict(run)}) + "\n")
        self.stream.flush()
        os.fsync(self.stream.fileno())

    def close(self):
        self.stream.close()
