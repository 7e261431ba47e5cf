"""fgpo_core: exact (FGPO) versus sampled (GRPO) policy optimisation for genomic tool selection.

One paper concept per room:

- :mod:`fgpo_core.core`: the action space of ``2**n`` tool subsets (``subsets``), the rewards
  (``rewards``: Eq. 1, differential), dead groups (``dead_groups``: Eq. 7) and the estimators
  (``estimators``: exact FGPO, the coverage dial, GRPO, RLOO, dynamic sampling) as functions of
  candidate scores, rewards and drawn actions, knowing nothing of any model;
- :mod:`fgpo_core.table`: the reward table (question ids, both rewards, manifest, ceilings),
  its sharded resumable build and its files, synthetic tables for teaching;
- :mod:`fgpo_core.genomics`: packaged sequence data, the tools, the question suites;
- :mod:`fgpo_core.reasoners`: the frozen reasoners and the paper's reasoner prompt;
- :mod:`fgpo_core.selectors`: policies over the subsets (the LM selector and its prompt, the
  policy-head selector on frozen prompt features);
- :mod:`fgpo_core.algorithms`: the LM selector's objectives, one file each (FGPO, GRPO via TRL,
  SFT, DPO, the format warm-up), and the one training loop over an estimator's visits that trains
  the policy head and the tabular bandit;
- :mod:`fgpo_core.evaluation`: picks, metrics (Tables 15 and 16, McNemar, live agreement), the
  rules for a difference and for in- and out-of-domain questions;
- :mod:`fgpo_core.experiments`: what writes run folders: a run, the LM main table, the
  policy-head studies (the post-training study among them);
- :mod:`fgpo_core.reports`: what reads them back into a chapter's tables and glued numbers;
- :mod:`fgpo_core.book`: building the book, chapter helpers, plots, the paper's numbers.
"""

__version__ = "0.1.0"
