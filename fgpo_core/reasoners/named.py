"""A reasoner by name (``fgpo table build --reasoner NAME``): each backend imported only when named."""

from __future__ import annotations

from . import REASONERS

__all__ = ["get_reasoner"]


def get_reasoner(name: str, **kwargs):
    """A reasoner by name: ``reader`` (the trained MiniLM evidence reader committed under
    ``data/readers/minilm-evidence``; ``reader:<folder>`` for another adapter), ``minilm``
    (zero-shot MiniLM reader), ``smollm2`` (SmolLM2-135M-Instruct, zero-shot), ``hf:<folder>``
    (any local causal LM), ``vllm:<folder>`` (GPU)."""
    if name == "reader" or name.startswith("reader:"):
        from .reader import EvidenceReader

        return EvidenceReader(name[7:] or None, **kwargs)
    if name == "minilm":
        from .encoder import MiniLMReader

        return MiniLMReader(**kwargs)
    if name == "smollm2":
        from .causal_lm import CausalLMReasoner

        return CausalLMReasoner(**kwargs)
    if name.startswith("hf:"):
        from .causal_lm import CausalLMReasoner

        return CausalLMReasoner(path=name[3:], **kwargs)
    if name.startswith("vllm:"):
        from .vllm_backend import VLLMReasoner

        return VLLMReasoner(name[5:], **kwargs)
    raise ValueError(f"unknown reasoner {name!r}; use one of {', '.join(REASONERS)} or hf:<folder>")
