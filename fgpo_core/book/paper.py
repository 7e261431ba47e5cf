"""Numbers reported by the paper, kept apart from anything this book computes.

Source: "Why Sample What You Can Enumerate? Exact Policy Optimization for
Genomic Tool Selection" (arXiv 2609.10221). Chapters print these beside their
own results, always labelled "paper"; nothing here is an outcome of our code.
All accuracies and rates are percentages.
"""

from __future__ import annotations

import pandas as pd

__all__ = [
    "CITATION",
    "GENOMEQA_CEILINGS",
    "TABLE15",
    "DEAD_GROUPS",
    "COVERAGE_DIAL",
    "MAIN_GENOMEQA",
    "TABLE12_GENOMEQA",
    "OUTCOME_DEGENERATE_BY_LIBRARY_SIZE",
    "TABLE_COST",
    "TRANSFER",
    "TOOL_ECONOMY",
    "EMPTY_SUBSET",
    "LIVE_AGREEMENT_POINTS",
    "HYPERPARAMETERS",
    "PARSIMONY",
    "SENSITIVITY",
    "DATA_SCALE",
    "FIVE_TOOL",
    "COMPANION_CITATION",
    "COMPANION",
]

CITATION = (
    "Liu, Ma, Chen, Wang, Tang (2026). Why Sample What You Can Enumerate? Exact Policy "
    "Optimization for Genomic Tool Selection. arXiv:2609.10221."
)

GENOMEQA_CEILINGS = {
    "no_tool": 39.28,
    "random": 45.32,
    "all_tools": 49.39,
    "best_fixed": 50.00,
    "oracle": 77.41,
    "empty_optimal": 61.9,
    "outcome_degenerate": 37.7,
}
"""Reference points of the GenomeQA reward table (Table 2, Sections 3-4, Figure 5d)."""

TABLE15 = pd.DataFrame(
    {
        "Uniform": [100, 22.7, 1.9, 0.2, 0.0, 0.0, 0.0],
        "SFT": [100, 40.4, 9.1, 2.4, 0.8, 0.0, 0.0],
        "GRPO": [100, 56.5, 30.4, 20.8, 15.7, 7.7, 3.7],
        "FGPO": [100, 97.3, 95.1, 94.0, 93.2, 91.5, 89.7],
    },
    index=[f"G={G}" for G in (1, 2, 4, 6, 8, 16, 32)],
).T
"""Table 15: closed-form dead-group probability (%) on GenomeQA by group size."""

DEAD_GROUPS = {
    "uniform_G6": 0.2,
    "grpo_converged_G6": 20.8,
    "grpo_differential_G6": 79.6,
    "fgpo_converged_G6": 94.0,
    "grpo_top_subset_mass": 98.0,
    "dead_mass_on_wrong_answers": 54.0,
    "dead_wrong_repairable_questions": 6.7,
    "live_dead_start": 66.9,
    "live_dead_end": 80.0,
    "live_entropy_fall": 3.3,
    "fgpo_top_action_mass": 0.78,
}
"""Dead-group facts of Sections 2.2 and 3.4 (GenomeQA, G = 6)."""

COVERAGE_DIAL = {2: 49.58, 4: 50.47, 8: 51.39, 16: 52.59}
"""Peak GenomeQA accuracy when each visit evaluates k of the 16 subsets (k = 16 is FGPO)."""

MAIN_GENOMEQA = {
    "No-Tool": 39.28,
    "Random": 45.32,
    "All-Tools": 49.39,
    "Tools w/ Desc": 47.77,
    "SFT": 42.17,
    "DPO": 39.33,
    "GRPO": 45.46,
    "FGPO": 52.62,
    "BestFixed*": 50.00,
    "Oracle": 77.41,
}
"""Table 2, GenomeQA column (training reasoner Qwen3-8B)."""

TABLE12_GENOMEQA = pd.DataFrame(
    {"delta_oracle": [-3.29, -6.21, -3.26, -10.84], "delta_best_fixed": [0.00, -2.20, 0.00, -4.76]},
    index=["-T1", "-T2", "-T3", "-T4"],
)
"""Table 12: points lost by the oracle and the best fixed subset when one tool is removed (GenomeQA)."""

OUTCOME_DEGENERATE_BY_LIBRARY_SIZE = {1: 73.5, 4: 37.7}
"""Figure 5d: % of questions on which every subset agrees on correctness, by library size
(averaged over sub-libraries); the paper reports the two ends."""

TABLE_COST = {"table_calls": 32_032, "grpo_calls": 76_800}
"""Reasoner calls: the exhaustive table (16 x 2,002) against GRPO's 200 steps x 64 prompts x 6 rollouts."""


TRANSFER = {
    "cells": 15,
    "fgpo_wins": 15,
    "margin_min": 0.92,
    "margin_median": 4.48,
    "margin_max": 14.20,
    "margin_mean": 6.75,
    "fgpo_beats_best_fixed": 10,
}
"""Table 2's transfer cells: the selectors moved without adaptation to four other reasoners."""

TOOL_ECONOMY = {"FGPO": 1.40, "GRPO": 2.36, "All-Tools": 4.00, "Tools w/ Desc": 1.03}
"""Tools per question on GenomeQA (Section 3.3)."""


EMPTY_SUBSET = {"empty_optimal": 61.9, "sft_argmax_empty": 92.8, "dpo_chosen_empty": 58.1}
"""Empty-subset facts (Table 16 and Section 3): the reward-optimal share of the empty subset,
SFT's argmax on it, and the share of DPO's chosen responses that are empty."""

LIVE_AGREEMENT_POINTS = (0.05, 0.06)
"""How far apart (accuracy points) the paper's live pipeline, cached table and per-epoch harness were."""


HYPERPARAMETERS = {
    "lr": 1e-5,
    "schedule": "cosine",
    "batch_size": 16,
    "epochs": 4,
    "grpo_prompts_per_step": 64,
    "G": 6,
    "grpo_steps": 200,
    "temperature": 1.0,
    "beta": 0.03,
    "lambda": 0.10,
    "dpo_beta": 0.3,
    "lora_r": 16,
    "lora_alpha": 32,
    "train_questions": 2002,
    "dev_questions": 492,
}
"""Table 6 (and Section 4): the paper's training settings with the 7B selector."""

PARSIMONY = {0.0: {"accuracy": 49.17, "tools": (2.0, 2.3)}, 0.10: {"accuracy": 51.17, "tools": (1.0, 1.6)}}
"""Appendix, parsimony: peak GenomeQA accuracy and the range of tools per question at lambda 0 and 0.10."""

SENSITIVITY = {
    "beta_0.08": 52.00,
    "beta_0.03": 51.75,
    "temperature_0.7": 50.92,
    "selector_1.5b_fgpo": 50.42,
    "selector_1.5b_grpo": 44.25,
    "named_prompt": 51.67,
    "anonymous_prompt": 51.75,
}
"""Appendix, sensitivity on a 1,200-question subsample: peak accuracy at entropy beta 0.08 against
the default 0.03, at listwise temperature 0.7, the 1.5B selector (FGPO and GRPO) and the prompt
with tool names and descriptions against anonymous slots."""

DATA_SCALE = {500: 52.23, 1000: 50.92, 2002: 52.59}
"""Appendix, data scale: peak GenomeQA accuracy of FGPO by number of training questions."""

FIVE_TOOL = {
    "fgpo_final": 45.38,
    "all_five": 44.51,
    "best_fixed": 45.18,
    "by_epoch": (43.04, 44.15, 44.51, 45.38),
    "invocation": {"motif": 61.9, "encoder": 14.3, "T5": 2.8, "T1": 0.0},
}
"""Appendix, the five-tool library (32 subsets): FGPO's final accuracy against All-Five and the
best fixed subset, its accuracy over four epochs, and each tool's invocation rate (%)."""


COMPANION_CITATION = "Fesser et al. (2026). How Post-Training Shapes Biological Reasoning Models. arXiv:2606.16517."
"""The companion study the chapter "How post-training shapes the selector" reproduces in kind."""

COMPANION = {
    "sft_ood_by_epoch": {1: 60.8, 4: 39.2},
    "rna_ood_below_peak": 18.0,
    "rl_from_sft_ood": (39.2, 95.1),
    "rl_epochs": 8,
    "budget_best_split": (20, 80),
    "budget_best": {"id_f1": 0.9470, "ood_f1": 0.9685},
    "sft_best_rank": 256,
    "rl_best_rank": 16,
    "grpo_rollouts": 8,
}
"""The companion study's numbers (cell-type split unless said): OOD accuracy after 1 and 4 SFT
epochs; RNA's OOD fall below its peak as SFT continues (about, points); OOD before and after 8
epochs of RL from the 4-epoch SFT checkpoint; the best SFT/RL split (%) of a fixed 20K-example
budget (protein) and its ID and OOD F1; the LoRA ranks that served SFT and RL best; its GRPO's
rollouts per prompt."""
