"""What every question family is: :class:`Family` (its labels, decisive tool, question texts, and
how it samples and verifies a labelled :class:`Item`). The families themselves are
:mod:`fgpo_core.genomics.benchmarks.families`, which re-exports both names."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Item", "Family"]


@dataclass
class Item:
    """One labelled sequence and where it came from."""

    seq: str
    label: str
    provenance: dict


class Family:
    name: str = ""
    labels: tuple = ()
    decisive_tool: str = ""
    describe_text: str = ""
    select_text: str = ""
    option_text: dict = {}
    length: tuple = (150, 300)

    def sample(self, label: str, split: str, rng: np.random.Generator, length: int | None = None) -> Item | None:
        """One item with ``label`` from ``split``, or None if the draw failed verification."""
        raise NotImplementedError

    def verify(self, item: Item) -> bool:
        """Re-measure the item's label from its sequence alone (where the family allows)."""
        return True

    def draw(
        self, label: str, split: str, rng: np.random.Generator, length: int | None = None, tries: int = 200
    ) -> Item:
        for _ in range(tries):
            item = self.sample(label, split, rng, length)
            if item is not None and self.verify(item):
                return item
        raise RuntimeError(f"family {self.name}: no verified item with label {label!r} in {split} after {tries} tries")

    def select_distractor_labels(self, answer: str, rng: np.random.Generator) -> list[str]:
        others = [x for x in self.labels if x != answer]
        return list(rng.choice(others, size=3, replace=len(others) < 3))

    def text_of(self, label: str) -> str:
        return self.option_text.get(label, label)
