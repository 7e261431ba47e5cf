"""Training loops, one file each with its documented dataclass config: FGPO (:mod:`.fgpo`), GRPO
through TRL (:mod:`.grpo`), SFT (:mod:`.sft`) and DPO (:mod:`.dpo`) with their shared targets
(:mod:`.imitation`), the format warm-up (:mod:`.warmup`), all five in one table of the LM selector's
objectives (:mod:`.objectives`); the one loop over an estimator's visits (:mod:`.loop`) that trains
the policy head (:mod:`.head`) and the tabular teaching bandit (:mod:`.bandit`); and what they share
(:mod:`.common`).
"""
