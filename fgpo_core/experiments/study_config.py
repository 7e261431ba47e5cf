"""The configuration of ``fgpo study`` and its named method lists (presets, the appendix's
ablations, the post-training study); :mod:`fgpo_core.experiments.study` runs it."""

from __future__ import annotations

from dataclasses import InitVar, asdict, dataclass, field, fields

from ..core.registry import preset_methods
from ..core.settings import EstimatorSettings, with_flat_keys
from .factorial import fair_methods

__all__ = ["StudyConfig", "ABLATIONS", "COMPANION", "PRESETS"]

ABLATIONS = {
    "coverage": ["fgpo-k1", "fgpo-k2", "fgpo-k4", "fgpo-k8", "fgpo"],
    "parsimony": ["fgpo-lambda0", "fgpo-lambda0.05", "fgpo", "fgpo-lambda0.2"],
    "entropy": ["fgpo-beta0", "fgpo-beta0.01", "fgpo", "fgpo-beta0.08"],
    "temperature": ["fgpo-T0.5", "fgpo-T0.7", "fgpo"],
    "data": ["fgpo-n125", "fgpo-n250", "fgpo-n500", "fgpo", "grpo-n125", "grpo-n250", "grpo-n500", "grpo"],
    "removal": ["fgpo", "fgpo-noT1", "fgpo-noT2", "fgpo-noT3", "fgpo-noT4"],
    "group": ["grpo-G2", "grpo-G4", "grpo", "grpo-G8", "grpo-G16"],
    "imitation": ["sft", "dpo-beta0.1", "dpo", "dpo-beta0.5"],
    "capacity": ["fgpo", "fgpo-h64", "fgpo-h256", "grpo", "grpo-h64", "grpo-h256"],
}
"""The appendix's ablations on the four-tool library, one list of method names per ablation
(the unmodified ``fgpo``/``grpo``/``dpo`` are the paper's settings: k = 16, lambda 0.10,
beta 0.03, temperature 1.0, 1,000 questions, G = 6, DPO beta 0.3, a linear head)."""

COMPANION = {
    "sft_epochs": [f"sft-e{e}-lr0.1" for e in (1, 2, 4, 8, 16, 32)],
    "rl_from_sft": [f"sft-e{e}-lr0.1+{rl}-e8" for rl in ("fgpo", "grpo") for e in (1, 2, 4, 8, 16, 32)],
    "budget": [
        "fgpo-e20",
        "sft-e4-lr0.1+fgpo-e16",
        "sft-e10-lr0.1+fgpo-e10",
        "sft-e16-lr0.1+fgpo-e4",
        "sft-e20-lr0.1",
        "grpo-e20",
        "sft-e4-lr0.1+grpo-e16",
        "sft-e10-lr0.1+grpo-e10",
        "sft-e16-lr0.1+grpo-e4",
    ],
    "capacity": [f"sft-e4-lr0.1{a}+fgpo-e16{b}" for a in ("", "-h64", "-h256") for b in ("", "-h64", "-h256")],
}
"""The post-training study's groups of methods on the policy head (the preset ``companion``): SFT for
1 .. 32 epochs; FGPO or GRPO for 8 epochs from each of those SFT heads; a fixed budget of 20 epochs of question visits
split 0/20/50/80/100% between SFT and RL; and the head width of each stage at the 20/80 split.
SFT runs at one fixed rate (0.1, its best in the main study), so the SFT stage of every pipeline
is the same head; the RL stage's rate is swept and chosen on dev."""

PRESETS = {
    "main": ",".join(preset_methods("main")),
    "ablations": ",".join(dict.fromkeys(m for ms in ABLATIONS.values() for m in ms)),
    "five": "fgpo,grpo,sft,fgpo-noT5",
    "companion": ",".join(dict.fromkeys(m for ms in COMPANION.values() for m in ms)),
    "fair": ",".join(fair_methods()),
    "larger": ",".join(
        ["fgpo", "grpo", "grpo-e40", "grpo-e80"]
        + [f"fgpo-k{k}" for k in (4, 16, 64)]
        + [f"shortlist-{c}{K}" for c in ("top", "grow") for K in (4, 16, 64)]
    ),
}
"""Named method lists for ``fgpo study --methods``: the main comparison (every estimator of the
registry marked for it, :func:`~fgpo_core.core.registry.preset_methods`), every ablation of
:data:`ABLATIONS`, the five-tool library's runs and the post-training study of :data:`COMPANION`
(run with ``--keep last``) and the larger libraries' methods, each charged the reasoner calls it
causes: exact FGPO, GRPO at 20, 40 and 80 epochs, the coverage dial and the two shortlists at
4, 16 and 64 subsets per question (the chapter "Past enumeration"); ``fair``: the fair test's
factorial of estimators by regularizers (:mod:`fgpo_core.experiments.factorial`, run with
``--dev-suite indev``)."""


@dataclass
class StudyConfig:
    """A study of the policy-head selector (``fgpo study``)."""

    methods: str = "main"
    """Comma-separated method names (fgpo_core.core.method_names.METHODS; fgpo-k<k> for any k),
    each optionally with modifiers (``fgpo-lambda0``, ``grpo-G16``, ``fgpo-n250``, ``fgpo-noT3``);
    stages of post-training are joined by ``+`` (``sft-e4-lr0.1+fgpo-e16``). Or the name of a
    preset of :data:`PRESETS` (main, ablations, five, companion: the post-training study, larger,
    fair: the fair test's factorial)."""
    seeds: int = 5
    """Seeds per method (0 .. seeds-1)."""
    lrs: str = "3e-3,1e-2,3e-2,1e-1"
    """Comma-separated learning rates tried per method; the best on dev is kept."""
    epochs: int = 20
    """Passes over the training questions, the same for every method."""
    hidden: int = 0
    """Hidden units of the head (0: linear)."""
    temperature: float = 1.0
    """Listwise temperature of q."""
    lam: float = 0.10
    """Eq. 1's parsimony weight."""
    settings: EstimatorSettings = field(default_factory=EstimatorSettings)
    """What every method's estimator and regularizer read (G, clip, updates, DPO's beta, the
    regularizer; None fields: each estimator's default); a method name's modifiers override it."""
    table_dir: str = "data/tables/cpu/reader"
    """Merged reward tables, one subfolder per suite (train, dev and the test suites)."""
    features_dir: str = "data/features/cpu/minilm"
    """Cached prompt features (``fgpo features``) of the same suites."""
    bench_dir: str = "data/benchmarks/cpu"
    """The benchmark the tables and features were made from."""
    suites: str = "core,microbe,mosaic"
    """Comma-separated test suites to pick on."""
    n_train: int = 0
    """Use only the first N training questions (0: all)."""
    train_spread: bool = False
    """Take the ``n_train`` questions evenly spread over the training split, not its first N."""
    dev_suite: str = "dev"
    """The suite every selection reads (learning rate, checkpoint): ``indev``, the in-domain dev
    (training families and organisms, held out; a study on part of the pool reads only its questions
    in that part's domain), for the fair test; ``dev`` for the older studies."""
    n_dev: int = 0
    """Use only the first N dev questions (0: all)."""
    n_test: int = 0
    """Use only the first N questions of each test suite (0: all)."""
    out_dir: str = "runs/cpu/study"
    """Where the study's files go."""
    keep: str = "best"
    """Which head a run keeps: "best" (its best dev evaluation) or "last" (the final one; the
    post-training study, whose point is what continued training does)."""
    checkpoints: int = 0
    """Evenly spaced checkpoints per run at which every test suite is scored (0: none)."""
    keep_q: bool = True
    """Keep each head's policy on the first test suite (q.parquet); picks are always kept."""
    curve_every: int = 1
    """Keep every n-th training step's row (and the last) in curves.parquet (a large study's size)."""
    shard: str = ""
    """``i/N``: train only the jobs ``i, i+N, ...`` of the study (several processes, one folder); the
    study's results are written by a run without ``--shard`` once every shard is done."""
    threads: int = 1
    """torch CPU threads."""
    beta: InitVar[float | None] = None
    G: InitVar[int | None] = None
    max_draws: InitVar[int | None] = None
    dpo_beta: InitVar[float | None] = None

    def __post_init__(self, beta, G, max_draws, dpo_beta):
        """The flat keys of older configs and committed manifests go into ``settings``
        (:func:`~fgpo_core.core.settings.with_flat_keys`)."""
        self.settings = with_flat_keys(self.settings, beta, G, max_draws, dpo_beta)

    @classmethod
    def from_manifest(cls, config: dict) -> "StudyConfig":
        """The config of a study's ``manifest.json``, older flat ones (``beta``, ``G``, ``max_draws``,
        ``dpo_beta``) included; keys no longer known are ignored."""
        names = {f.name for f in fields(cls)} | {"beta", "G", "max_draws", "dpo_beta"}
        kw = {k: v for k, v in config.items() if k in names}
        if isinstance(kw.get("settings"), dict):
            kw["settings"] = EstimatorSettings(**kw["settings"])
        return cls(**kw)

    def manifest_config(self) -> dict:
        """What ``manifest.json`` records: every field, ``settings`` nested, and the flat ``G``,
        ``max_draws`` and ``dpo_beta`` older readers look up."""
        s = self.settings
        return asdict(self) | {"G": s.G, "max_draws": s.max_draws, "dpo_beta": s.dpo_beta}
