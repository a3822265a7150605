"""A study against its registration, change by change, each change with the claims it concerns
(registration.standing makes one; judging reads each claim's line from it)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True)
class Standing:
    """A study against its registration, change by change, each with the claims it concerns: a change of the
    verdict rule concerns only the claims that rule change touched (rule_tables.touched_since), a change of one
    claim's definition only that claim, anything else every claim. So a claim stays confirmatory when nothing
    that decides it changed (docs/verdicts.md, "Registered analyses")."""

    fingerprint: str
    changes: tuple[tuple[str, frozenset[str] | None], ...] = ()  # (change line, claims it concerns; None: all)

    def line(self, claims: Collection[str] | None = None) -> str:
        """Confirmatory, or exploratory and why, for a study judging `claims` (None: every change counts)."""
        diff = [c for c, ids in self.changes if claims is None or ids is None or not ids.isdisjoint(claims)]
        if diff:
            return "exploratory: differs from the registration in " + "; ".join(dict.fromkeys(diff))
        line = f"confirmatory: matches the registration (fingerprint {self.fingerprint[:12]}…)"  # no date: reports
        others = list(dict.fromkeys(c for c, _ in self.changes))  # changes that concern only claims not judged here
        return line + (f" in what decides these claims; other claims only: {'; '.join(others)}" if others else "")


def concerns(change: str) -> frozenset[str] | None:
    """The claims a change line (registration.changes' 'key: old -> new') concerns; None: every claim."""
    from coatsearch.papers.rule_tables import touched_since

    key, _, values = change.partition(": ")
    if key == "rule_version":
        return touched_since(values.partition(" -> ")[0])
    return frozenset([key.split(".")[1]]) if key.startswith("claims.") else None
