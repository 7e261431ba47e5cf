"""Selectors: the policies that choose a subset of tools. :class:`~fgpo_core.selectors.lm.LMSelector`
scores all ``2**n`` answer strings with a causal LM (Eq. 4) and samples from p_gen."""
from .lm import LMSelector
from .prompt import selector_messages, shorten_sequences

__all__ = ["LMSelector", "selector_messages", "shorten_sequences"]
