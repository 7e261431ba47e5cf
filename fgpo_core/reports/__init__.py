"""Reports: what reads run folders back into the tables and glued numbers a chapter shows.

:mod:`.lm_runs` (the LM selector's runs and Table 2), :mod:`.lm_reading` (which LM runs are one
selector, what a dev evaluation amounts to), :mod:`.pool` (the LM selector on the whole pool),
:mod:`.study` (a policy-head study), :mod:`.extra` (new estimators' studies beside it),
:mod:`.ablation` (the appendix), :mod:`.companion` (the post-training study), :mod:`.larger` (past
enumeration), and :mod:`.tables` (how a table reads on a page: :func:`~.tables.show`). Writing the
runs is :mod:`fgpo_core.experiments`'s job."""
