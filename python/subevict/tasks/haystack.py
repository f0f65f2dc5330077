"""Haystacks: the text a needle hides in, as sentences. Real prose from Debian's license texts
(base-files' /usr/share/common-licenses/, on every Debian machine), one haystack per file and any
concatenation of them ("gpl-3+gfdl-1.3", or a list), and `noise`, the classic repeated filler of
the passkey task and RULER's noise haystack, which never runs out."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .errors import TaskError

LICENSE_DIR = "/usr/share/common-licenses"
# Haystack name -> file name under LICENSE_DIR.
LICENSES = {
    "gpl-3": "GPL-3", "gpl-2": "GPL-2", "gfdl-1.3": "GFDL-1.3", "gfdl-1.2": "GFDL-1.2",
    "apache-2.0": "Apache-2.0", "mpl-2.0": "MPL-2.0", "mpl-1.1": "MPL-1.1",
    "lgpl-2.1": "LGPL-2.1", "lgpl-3": "LGPL-3", "artistic": "Artistic",
}
# `licenses`: the six longest-standing texts one after another (about 25k tokens of prose).
ALIASES = {"licenses": ("gpl-3", "gfdl-1.3", "apache-2.0", "mpl-2.0", "lgpl-2.1", "artistic")}
NOISE = "noise"
# The filler of the passkey task (the classic passkey retrieval test, RULER's noise).
NOISE_SENTENCES = ("The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
                   "There and back again.")
# A sentence ends at . ! ? or ; followed by whitespace (the licenses' long enumerations split at
# their semicolons, so that a needle's depth is placed within a clause).
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def names():
    """The haystack names one can ask for (each file, the aliases, noise)."""
    return sorted(LICENSES) + sorted(ALIASES) + [NOISE]


@dataclass(frozen=True)
class Haystack:
    """A haystack: its canonical name, its sentences (the first `count` of an endless cycle when
    `endless`), and its whole text (for checking that a needle's key or value is not in it)."""

    name: str
    sentences: tuple
    endless: bool
    text: str

    def first(self, n):
        """The first n sentences (TaskError past the end of a finite haystack)."""
        if not self.endless:
            return list(self.sentences[:n])
        k = len(self.sentences)
        return [self.sentences[i % k] for i in range(n)]

    @property
    def available(self):
        """How many sentences there are (None: endless)."""
        return None if self.endless else len(self.sentences)


def split_sentences(text):
    """The sentences of a text: whitespace runs (line breaks included) become one space, and a
    sentence ends at . ! ? or ; followed by whitespace."""
    flat = " ".join(text.split())
    return [s for s in _SENTENCE_END.split(flat) if s]


def load(spec):
    """The Haystack of a name, a "+"-joined concatenation or a list of names (TaskError naming an
    unknown one and the known ones)."""
    parts = list(spec) if isinstance(spec, (list, tuple)) else str(spec).split("+")
    if not parts or any(not isinstance(p, str) or not p for p in parts):
        raise TaskError(f"haystack: expected a name or a list of names, got {spec!r}")
    files = []
    for part in parts:
        key = part.strip().lower()
        if key == NOISE:
            if len(parts) > 1:
                raise TaskError(f"haystack {spec!r}: {NOISE} cannot be concatenated with "
                                "other texts")
            return Haystack(NOISE, NOISE_SENTENCES, True, " ".join(NOISE_SENTENCES))
        if key in ALIASES:
            files += ALIASES[key]
        elif key in LICENSES:
            files.append(key)
        else:
            raise TaskError(f"haystack: unknown {part!r} (expected one of {', '.join(names())}, "
                            "or several joined by '+')")
    texts = []
    for key in files:
        path = os.path.join(LICENSE_DIR, LICENSES[key])
        try:
            with open(path, encoding="utf-8") as stream:
                texts.append(stream.read())
        except OSError as error:
            raise TaskError(f"haystack {key}: cannot read {path} ({error.strerror}; Debian's "
                            "base-files installs it)") from None
    sentences = tuple(s for text in texts for s in split_sentences(text))
    name = "+".join(files) if len(parts) > 1 or parts[0].strip().lower() not in ALIASES \
        else parts[0].strip().lower()
    return Haystack(name, sentences, False, "\n".join(texts))
