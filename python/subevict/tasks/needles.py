"""The random parts of a task: numbers, keys and variable names, drawn from a seeded generator
so that none repeats and none occurs in the haystack or in the prompt's fixed text."""

from __future__ import annotations

import string

from .errors import TaskError

# Words of RULER-style keys ("word-word"), chosen to occur in none of the haystacks.
KEY_WORDS = (
    "amber", "anchor", "apricot", "badger", "bamboo", "beacon", "biscuit", "blossom", "breeze",
    "cactus", "canyon", "cedar", "cobalt", "comet", "coral", "crimson", "dolphin", "ember",
    "falcon", "fern", "fjord", "galaxy", "garnet", "glacier", "harbor", "hazel", "heron",
    "indigo", "iris", "jasmine", "juniper", "kettle", "lagoon", "lantern", "lemon", "lilac",
    "magpie", "maple", "meadow", "nectar", "nutmeg", "oasis", "orchid", "otter", "pebble",
    "pepper", "quartz", "quill", "raven", "saffron", "salmon", "sequoia", "tangerine", "thistle",
    "tulip", "velvet", "violet", "walnut", "willow", "zephyr",
)
_ATTEMPTS = 1000


class Draws:
    """Unique random strings: each draw differs from every earlier one and from `forbidden` text
    (the haystack and the prompt's fixed parts) as a substring."""

    def __init__(self, rng, forbidden):
        self.rng = rng
        self.forbidden = forbidden
        self.used = set()

    def _unique(self, make, what):
        for _ in range(_ATTEMPTS):
            value = make()
            if value not in self.used and value not in self.forbidden and \
                    not any(value in u or u in value for u in self.used):
                self.used.add(value)
                return value
        raise TaskError(f"{what}: no unique draw in {_ATTEMPTS} tries")

    def number(self, digits):
        """A `digits`-digit decimal (no leading zero)."""
        low = 10 ** (digits - 1)
        return self._unique(lambda: str(self.rng.randrange(low, 10 * low)), f"{digits}-digit value")

    def key(self):
        """A key of two different words joined by '-' (RULER's word keys)."""
        return self._unique(lambda: "-".join(self.rng.sample(KEY_WORDS, 2)), "key")

    def variable(self, letters=5):
        """A variable name of `letters` capital letters."""
        return self._unique(lambda: "".join(self.rng.choices(string.ascii_uppercase, k=letters)),
                            "variable")
