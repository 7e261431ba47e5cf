"""Selectors: the policies that choose a subset of tools. :class:`~fgpo_core.selectors.lm.LMSelector`
scores all ``2**n`` answer strings with a causal LM (Eq. 4) and samples from p_gen.

The names below are imported when first asked for (PEP 562), so importing the policy head
(:mod:`.head`) or the features (:mod:`.features`) does not import the LM selector: a chapter's cache
key and a study's fingerprint (:mod:`fgpo_core.import_closure`) then leave out LM-only code."""

import importlib

_LAZY = {"LMSelector": ".lm", "selector_messages": ".prompt", "shorten_sequences": ".prompt"}

__all__ = ["LMSelector", "selector_messages", "shorten_sequences"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
