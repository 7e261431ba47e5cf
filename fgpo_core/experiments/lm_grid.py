"""The language-model selector's Table 2 at scale (``fgpo lm``): one format warm-up shared by
every method, then FGPO (as the paper writes it, and with this book's format term), SFT, DPO,
GRPO through TRL, the prompted baseline and FGPO with the tools' names in its prompt, each
evaluated on the test suites and recorded in ``<runs_dir>/chosen.json`` as it lands.

Every step resumes or is skipped when done, so the whole grid is one command that can be
stopped at any moment and started again; each training run has its own process. The steps run
cheapest first (GRPO, by far the dearest, near the end), and ``chosen.json`` is rewritten
after every evaluation, so a chapter can render what has landed while the rest runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..io import inside
from .chosen import choose_runs
from .run import EVAL_SUITES, PROMPTED, RunSetup, evaluate_run, format_run, reuse_evaluation
from .steps import ensure_trained

__all__ = ["LMGridConfig", "WarmupStage", "parse_warmup_stages", "run_lm_grid", "lm_grid_folders"]


@dataclass
class LMGridConfig:
    """Every run of the LM selector's main table (``fgpo lm``). The defaults are the cpu profile's
    plan: 256 training questions for 2 epochs, 200 dev questions, evaluation on all of core and
    the first 250 questions of each cross-domain suite."""

    runs_dir: str = "runs/cpu"
    """The runs folder that holds ``chosen.json``; the grid's run folders go under ``folder``."""
    folder: str = "lm"
    """The grid's subfolder of ``runs_dir``."""
    bench_dir: str = "data/benchmarks/cpu"
    """A built benchmark folder."""
    table_dir: str = "data/tables/cpu/reader"
    """The training reader's merged tables (train, dev)."""
    n_train: int = 256
    """Training questions (the first N of the train split), the same for every method."""
    n_dev: int = 200
    """Dev questions: the warm-up's stopping rule and every method's checkpoint choice."""
    epochs: int = 2
    """Passes over the training questions for every method (GRPO: the same question visits)."""
    warmup: str = "1:1e-3:2,3:3e-4:2"
    """The format warm-up's stages, comma-separated ``MASS_WEIGHT:LR:MAX_EPOCHS``; each stage starts
    from the one before and stops once p_gen's dev mass on the policy strings reaches 95%."""
    format_limit: int = 100
    """Dev questions of the sampled format check of the untrained selector and each warm-up stage (0: all)."""
    format_samples: int = 8
    """Completions sampled per question (temperature 1) in that check."""
    fgpo_lrs: str = "1e-4"
    """Learning rates of FGPO as the paper writes it (Eq. 2 + 5), comma-separated; the best on dev is chosen."""
    format_lrs: str = "3e-4"
    """Learning rates of FGPO with the format term, comma-separated ("": no such run)."""
    format_weight: float = 0.05
    """Weight of the format term (the log of p_gen's mass on the policy strings), like GRPO's 0.05 r_fmt."""
    imitation_lr: float = 3e-4
    """SFT's and DPO's learning rate."""
    dpo_beta: float = 0.3
    """DPO's beta (the paper's)."""
    dpo_micro_batch: int = 4
    """Questions per DPO forward pass (gradients accumulate to 16 per step; 0: all 16 at once)."""
    grpo_lr: float = 3e-4
    """GRPO's learning rate ("grpo" is skipped when 0)."""
    named_lr: float = 1e-4
    """Learning rate of FGPO trained with the tools' names in its prompt (0: no such run)."""
    eval_every: int = 8
    """Optimiser steps between dev evaluations (FGPO and GRPO)."""
    eval_core: int = 0
    """Core questions evaluated (the first N; 0: all)."""
    eval_cross: int = 250
    """Questions evaluated on each cross-domain suite (the first N; 0: all)."""
    keep: int = 40
    """Bases kept at each end of a long sequence in the selector's prompt."""
    threads: int = 2
    """torch CPU threads."""
    seed: int = 0
    """Seeds every run."""


@dataclass(frozen=True)
class WarmupStage:
    """One stage of the format warm-up."""

    mass_weight: float
    lr: float
    max_epochs: int


def parse_warmup_stages(text: str) -> list[WarmupStage]:
    """``"1:1e-3:2,3:3e-4:2"`` -> the warm-up's stages; a clear error for anything else."""
    stages = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            stage = WarmupStage(float(parts[0]), float(parts[1]), int(parts[2]))
        except ValueError:
            raise ValueError(f"a warm-up stage is MASS_WEIGHT:LR:MAX_EPOCHS (e.g. 3:3e-4:2), got {item!r}") from None
        if stage.mass_weight < 0 or stage.lr <= 0 or stage.max_epochs < 1:
            raise ValueError(f"warm-up stage {item!r}: the mass weight must be >= 0, the rate > 0, the epochs >= 1")
        stages.append(stage)
    if not stages:
        raise ValueError("the warm-up needs at least one stage")
    return stages


def _rates(text: str) -> list[str]:
    rates = [s.strip() for s in text.split(",") if s.strip()]
    for r in rates:
        if float(r) <= 0:
            raise ValueError(f"learning rates must be positive, got {r}")
    return rates


def lm_grid_folders(cfg: LMGridConfig) -> dict[str, list[str]]:
    """Each method's run folder(s), relative to ``cfg.runs_dir`` (the keys of ``chosen.json``;
    ``warmup-stages`` lists the warm-up's stages in order, the last being the shared start)."""
    stages = parse_warmup_stages(cfg.warmup)
    inside(cfg.runs_dir, *cfg.folder.split("/"), what="--folder")  # relative to --runs-dir, never leaving it
    f = cfg.folder.strip("/")
    out = {
        "warmup-stages": [f"{f}/warmup" + (f"-stage{i + 1}" if i else "") for i in range(len(stages))],
        "untrained": [f"{f}/untrained"],
        "fgpo": [f"{f}/fgpo-lr{r}" for r in _rates(cfg.fgpo_lrs)],
        "fgpo-format": [f"{f}/fgpo-format-lr{r}" for r in _rates(cfg.format_lrs)],
        "sft": [f"{f}/sft"],
        "dpo": [f"{f}/dpo"],
        "tools-with-descriptions": [f"{f}/{PROMPTED}"],
        "grpo": [f"{f}/grpo"] if cfg.grpo_lr > 0 else [],
        "fgpo-named": [f"{f}/fgpo-named"] if cfg.named_lr > 0 else [],
    }
    out["warmup"] = out["warmup-stages"][-1:]
    return out


def run_lm_grid(cfg: LMGridConfig, progress: bool = True, isolate: bool = False) -> dict[str, str]:
    """Train, check and evaluate every selector of the LM main table; returns ``chosen.json``'s
    mapping (method -> run folder). With ``isolate`` (``fgpo lm`` sets it) each training run
    has its own process."""
    import torch

    from ..algorithms.fgpo import FGPOConfig
    from ..algorithms.grpo import GRPOConfig
    from ..algorithms.imitation import ImitationConfig
    from ..algorithms.warmup import WarmupConfig

    torch.set_num_threads(cfg.threads)  # the format checks and evaluations run in this process
    root = Path(cfg.runs_dir)
    folders = lm_grid_folders(cfg)
    stages = parse_warmup_stages(cfg.warmup)
    start = str(root / folders["warmup"][0])

    def setup(rel: str, init: str = "", described: bool = False) -> RunSetup:
        return RunSetup(
            cfg.bench_dir,
            cfg.table_dir,
            str(root / rel),
            cfg.n_train,
            cfg.n_dev,
            cfg.keep,
            cfg.threads,
            init,
            described,
        )

    def train(objective: str, rel: str, config, init: str = start, described: bool = False) -> None:
        ensure_trained(objective, setup(rel, init, described), config, progress, isolate)

    def check_format(run: str, rel_out: str | None = None) -> None:
        path = root / (rel_out or run) / "format-dev.parquet"
        if not path.exists():
            format_run(
                run if rel_out else str(root / run),
                cfg.bench_dir,
                "dev",
                cfg.format_limit,
                G=cfg.format_samples,
                seed=cfg.seed,
                keep=cfg.keep,
                out_path=path,
                progress=progress,
            )

    limits = {"core": cfg.eval_core, **{s: cfg.eval_cross for s in EVAL_SUITES[1:]}}
    trained = [
        r
        for key, rels in folders.items()
        if key not in ("warmup", "untrained", "tools-with-descriptions")
        for r in rels
    ]

    def evaluate(rel: str, run: str | None = None, described: bool = False, suites=EVAL_SUITES) -> None:
        """Evaluate a run into its own eval/ (or a prompted selector into ``rel``'s) and rewrite
        chosen.json. A run whose adapter (and prompt) is another evaluated run's (e.g. one whose
        dev-chosen checkpoint is its starting point, the warm-up) gets a copy of that evaluation,
        which :func:`evaluate_run` then recognises by the adapter's hash instead of recomputing it."""
        out = root / rel / "eval"
        if run is None:
            for other in trained:
                if (root / other / "manifest.json").exists() and reuse_evaluation(root / rel, root / other):
                    break
        evaluate_run(
            run or str(root / rel), cfg.bench_dir, suites, cfg.keep, limits, str(out), progress, described=described
        )
        evaluated.append(rel)
        record()

    evaluated: list[str] = []

    def record() -> dict[str, str]:
        """chosen.json: every method with a finished core evaluation (several FGPO runs: the best on dev)."""
        cands = {}
        for key, rels in folders.items():
            if key == "warmup-stages":
                continue
            done = [r for r in rels if r in evaluated and (root / r / "eval" / "core.parquet").exists()]
            if done:
                cands[key] = done
        return choose_runs(root, cands) if cands else {}

    # 1. the format warm-up, stage by stage, each checked by sampling; the untrained selector checked alike
    prev = ""
    for stage, rel in zip(stages, folders["warmup-stages"]):
        train(
            "warmup",
            rel,
            WarmupConfig(
                lr=stage.lr, max_epochs=stage.max_epochs, targets="all", mass_weight=stage.mass_weight, seed=cfg.seed
            ),
            init=prev,
        )
        check_format(rel)
        prev = str(root / rel)
    check_format("untrained", folders["untrained"][0])
    evaluate(folders["warmup"][0])
    for rel in trained:  # runs finished earlier (e.g. before an interruption) are evaluated before anything trains
        if rel not in evaluated and (root / rel / "manifest.json").exists() and rel not in folders["warmup-stages"]:
            evaluate(rel, suites=EVAL_SUITES[:1] if rel in folders["fgpo-named"] else EVAL_SUITES)
    # 2. the methods, cheapest first, every one from the warm-up's adapter and evaluated as it lands
    for r, rel in zip(_rates(cfg.fgpo_lrs), folders["fgpo"]):
        train("fgpo", rel, FGPOConfig(lr=float(r), epochs=cfg.epochs, seed=cfg.seed, eval_every=cfg.eval_every))
        evaluate(rel)
    for r, rel in zip(_rates(cfg.format_lrs), folders["fgpo-format"]):
        train(
            "fgpo",
            rel,
            FGPOConfig(
                lr=float(r),
                epochs=cfg.epochs,
                seed=cfg.seed,
                eval_every=cfg.eval_every,
                format_weight=cfg.format_weight,
            ),
        )
        evaluate(rel)
    train("sft", folders["sft"][0], ImitationConfig(lr=cfg.imitation_lr, epochs=cfg.epochs, seed=cfg.seed))
    evaluate(folders["sft"][0])
    train(
        "dpo",
        folders["dpo"][0],
        ImitationConfig(
            lr=cfg.imitation_lr,
            epochs=cfg.epochs,
            seed=cfg.seed,
            dpo_beta=cfg.dpo_beta,
            micro_batch=cfg.dpo_micro_batch,
        ),
    )
    evaluate(folders["dpo"][0])
    # 3. the two selectors that are not trained here: the prompted baseline (from the warm-up) and the untrained one
    evaluate(folders["tools-with-descriptions"][0], run=start, described=True)
    evaluate(folders["untrained"][0], run="untrained")
    # 4. GRPO with FGPO's question visits, and FGPO with the tools' names in its prompt
    if folders["grpo"]:
        train(
            "grpo",
            folders["grpo"][0],
            GRPOConfig(
                lr=cfg.grpo_lr,
                epochs=cfg.epochs,
                seed=cfg.seed,
                prompts_per_step=min(16, cfg.n_train),
                eval_every=cfg.eval_every,
            ),
        )
        evaluate(folders["grpo"][0])
    if folders["fgpo-named"]:
        train(
            "fgpo",
            folders["fgpo-named"][0],
            FGPOConfig(lr=cfg.named_lr, epochs=cfg.epochs, seed=cfg.seed, eval_every=cfg.eval_every),
            described=True,
        )
        evaluate(folders["fgpo-named"][0], suites=EVAL_SUITES[:1])  # the sensitivity is read on core
    return record()
