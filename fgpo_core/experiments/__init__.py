"""Experiments: one LM-selector run (:mod:`.run`, ``fgpo train`` and ``fgpo evaluate``), the LM main
table (:mod:`.lm_grid`, ``fgpo lm``) and the steps it shares (:mod:`.steps`), which run each method's
row reads (:mod:`.chosen`), the post-training study on the LM selector (:mod:`.lm_companion`), the
policy-head studies (:mod:`.study`, ``fgpo study``), and each read back (:mod:`.report`,
:mod:`.lm_reading`, :mod:`.study_report`, :mod:`.ablation_report`, :mod:`.companion_report`,
:mod:`.larger_report`, :mod:`.domains`); policy heads on one's own tables (:mod:`.byo`)."""
