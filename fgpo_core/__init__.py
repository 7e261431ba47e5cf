"""fgpo_core: exact (FGPO) versus sampled (GRPO) policy optimisation for genomic tool selection.

The modules follow the paper's vocabulary: :mod:`~fgpo_core.subsets` (the
action space of 2**n tool subsets), :mod:`~fgpo_core.rewards` (Eq. 1 and the
differential reward), :mod:`~fgpo_core.table` (the reward table and its
ceilings), :mod:`~fgpo_core.dead_groups` (Eq. 7), :mod:`~fgpo_core.objectives`
(Eq. 2-5, 8) and :mod:`~fgpo_core.bandit` (the model-free teaching experiment).
"""
__version__ = "0.1.0"
