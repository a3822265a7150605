"""The registry type of every extension point: named entries in order, and the one-line error naming them.

No coatsearch imports here: the registries (vocab.kinds, vocab.samplers, vocab.datasets, scores) sit at the
bottom of the import graph, and this module sits under them without making any chain longer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TypeVar

T = TypeVar("T")


class Registry(Mapping[str, T]):
    """One extension point's entries by name, in registration order; `what` names an entry in errors.

    Code reads the registry when it runs, so an entry registered at run time is seen from then on. An unknown
    name is one line naming the registered ones: "unknown sampler 'x'; allowed: random, tpe, ...".
    """

    def __init__(self, what: str, entries: Mapping[str, T]) -> None:
        self.what = what
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._entries)})"

    def entry(self, name: str) -> T:
        """The entry `name`; a one-line ValueError names the registered ones."""
        if name not in self._entries:
            raise ValueError(f"unknown {self.what} {name!r}; allowed: {', '.join(self._entries)}")
        return self._entries[name]

    def register(self, name: str, entry: T, *, before: str | None = None) -> None:
        """Add `entry` as `name`, before the entry `before` (else last); a name already registered is an error."""
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is already registered; known: {', '.join(self._entries)}")
        if before is not None:
            self.entry(before)  # an unknown name: the one-line error
        items = list(self._entries.items())
        at = list(self._entries).index(before) if before is not None else len(items)
        self._entries = dict([*items[:at], (name, entry), *items[at:]])

    def unregister(self, name: str) -> T:
        """Remove the entry `name` (the undo of `register`) and return it; an unknown name is the one-line error."""
        self.entry(name)
        return self._entries.pop(name)
