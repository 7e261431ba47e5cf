"""Seconds and peak memory of one update of the LM selector, per method, on the same questions.

Times, on the first ``--questions`` training questions (default 16, one optimiser step of
either method): one FGPO update (every subset scored, Eq. 2 + 5, one AdamW step), one step of
TRL's GRPOTrainer as the chapter "FGPO versus GRPO" trains with it (G completions per prompt,
table rewards), and, per evaluated question, greedy free generation and the controlled
scores with p_gen (two passes), and the one pass that ``fgpo evaluate`` now makes for all of
them (greedy generation read off the scoring pass where it stays on the policy strings). Each
method runs in its own process, so each peak resident memory is its own. Prints seconds,
seconds per question visit and the ratios GRPO / FGPO. Run alone on a quiet machine::

    .venv/bin/python perf/bench_selector.py --threads 2
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _data(n: int):
    from fgpo_core.experiments.run import RunSetup, split_data

    qs, table = split_data(RunSetup(), "train", n)
    return qs, table


def bench_fgpo(n: int) -> dict:
    import torch

    from fgpo_core.algorithms.common import trainable_parameters
    from fgpo_core.algorithms.fgpo import fgpo_step
    from fgpo_core.selectors.lm import load_selector

    qs, table = _data(n)
    sel = load_selector()
    opt = torch.optim.AdamW(trainable_parameters(sel.model), lr=1e-4)
    r = table.rewards("eq1")
    times = []
    for _ in range(2):  # the first step pays one-off costs (allocation, kernels)
        t0 = time.perf_counter()
        opt.zero_grad()
        fgpo_step(sel, qs, r)
        opt.step()
        times.append(time.perf_counter() - t0)
    return {"seconds": times[-1], "visits": n}


def bench_grpo(n: int, G: int) -> dict:
    from transformers import TrainerCallback

    from fgpo_core.algorithms.grpo import GRPOConfig, TableReward, grpo_dataset, make_grpo_trainer
    from fgpo_core.selectors.lm import load_selector

    qs, table = _data(n)
    sel = load_selector()
    cfg = GRPOConfig(G=G, prompts_per_step=n)
    reward = TableReward(table.correct, sel.space.n_tools, G, prefill=sel.prefill)
    marks = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            marks.append(["begin", time.perf_counter()])

        def on_step_end(self, args, state, control, **kw):
            marks.append(["end", time.perf_counter()])

    with tempfile.TemporaryDirectory() as tmp:
        tr = make_grpo_trainer(sel.model, sel.tokenizer, grpo_dataset(sel, qs), reward, cfg, tmp, 2, [Clock()])
        tr.args.save_strategy = "no"
        tr.train()
    ends = [t for k, t in marks if k == "end"]
    begins = [t for k, t in marks if k == "begin"]
    return {"seconds": ends[-1] - begins[-1], "visits": n, "completions": n * G}


def bench_eval(n: int, adapter: str = "") -> dict:
    from fgpo_core.selectors.lm import load_selector

    qs, _ = _data(n)
    sel = load_selector(str(Path(adapter) / "adapter") if adapter else None, trainable=False)
    sel.model.eval()
    sel.generate(qs[0]), sel.scores_and_p_gen(qs[0])  # warm-up
    t0 = time.perf_counter()
    for q in qs:
        sel.generate(q)
    gen = time.perf_counter() - t0
    t0 = time.perf_counter()
    for q in qs:
        sel.scores_and_p_gen(q)
    scoring = time.perf_counter() - t0
    t0 = time.perf_counter()
    from_pass = sum(sel.evaluate_question(q)["from_pass"] for q in qs)
    return {
        "generation_per_question": gen / n,
        "scoring_per_question": scoring / n,
        "one_pass_per_question": (time.perf_counter() - t0) / n,
        "greedy_from_pass": from_pass / n,
    }


def child(method: str, n: int, G: int, threads: int, adapter: str = "") -> None:
    import torch

    from fgpo_core.hf import quiet_transformers

    quiet_transformers()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    out = {"fgpo": lambda: bench_fgpo(n), "grpo": lambda: bench_grpo(n, G), "eval": lambda: bench_eval(n, adapter)}[
        method
    ]()
    out["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps(out))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=16)
    ap.add_argument("--G", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--adapter",
        default="",
        help="a run folder whose adapter the evaluation timing loads (e.g. the "
        "format warm-up, whose greedy generation stays on the policy strings)",
    )
    ap.add_argument("--only", choices=["fgpo", "grpo", "eval"], action="append", help="time only these (repeatable)")
    ap.add_argument("--child", choices=["fgpo", "grpo", "eval"], help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the results to this file")
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.questions, a.G, a.threads, a.adapter)
    res = {}
    for m in a.only or ("fgpo", "grpo", "eval"):
        cmd = [
            sys.executable,
            __file__,
            "--child",
            m,
            "--questions",
            str(a.questions),
            "--G",
            str(a.G),
            "--threads",
            str(a.threads),
            "--adapter",
            a.adapter,
        ]
        res[m] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()[-1])
    print(f"{a.questions} questions, {a.threads} threads")
    if "fgpo" in res and "grpo" in res:
        report_updates(res["fgpo"], res["grpo"], a)
    if "eval" in res:
        report_eval(res["eval"])
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(
                {"questions": a.questions, "threads": a.threads, "G": a.G, "adapter": a.adapter, **res}, fh, indent=1
            )


def report_updates(f: dict, g: dict, a) -> None:
    print(
        f"FGPO update      {f['seconds']:7.2f} s  {f['seconds'] / a.questions:6.3f} s/visit  "
        f"peak {f['peak_rss_gib']:.2f} GiB"
    )
    print(
        f"TRL GRPO step    {g['seconds']:7.2f} s  {g['seconds'] / a.questions:6.3f} s/visit  "
        f"peak {g['peak_rss_gib']:.2f} GiB  (G = {a.G})"
    )
    print(
        f"ratio GRPO/FGPO  {g['seconds'] / f['seconds']:7.2f} x time   "
        f"{g['peak_rss_gib'] / f['peak_rss_gib']:.2f} x memory"
    )


def report_eval(e: dict) -> None:
    print(
        f"evaluation       {e['generation_per_question']:.3f} s/question generation, "
        f"{e['scoring_per_question']:.3f} s/question scores + p_gen"
    )
    print(
        f"one pass         {e['one_pass_per_question']:.3f} s/question for all of them "
        f"({(e['generation_per_question'] + e['scoring_per_question']) / e['one_pass_per_question']:.2f} x faster; "
        f"greedy read off the pass on {100 * e['greedy_from_pass']:.0f}% of questions)"
    )


if __name__ == "__main__":
    main()
