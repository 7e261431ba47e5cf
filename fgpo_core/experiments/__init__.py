"""Experiments: what writes run folders. One LM-selector run (:mod:`.run`, ``fgpo train`` and
``fgpo evaluate``), the LM main table (:mod:`.lm_grid`, ``fgpo lm``) and the steps it shares
(:mod:`.steps`), which run each method's row reads (:mod:`.chosen`, ``fgpo choose``), the
post-training study on the LM selector (:mod:`.lm_companion`), the policy-head studies
(:mod:`.study`, ``fgpo study``), policy heads on one's own tables (:mod:`.byo`) and the GPU run
(:mod:`.gpu_lm`). Reading them back for the chapters is :mod:`fgpo_core.reports`'s job."""
