# Two commands on a fresh machine (see README):
#   make demo   -- create the environment if needed, then run the main job on the embedded defaults
#   make test   -- create the environment if needed, then run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.syntaxformer-installed

.PHONY: demo test setup bench clean

setup: $(STAMP)

# torch is pinned to the local CPU wheel first: an unpinned torch would pull GBs of CUDA packages.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[models,dev]"
	touch $(STAMP)

# The main job: show the syntax one model sees, then fine-tune the baseline and SG-Net on a subsample of real
# SST-2 (../shared/data, else the hub) with the offline MiniLM and print both dev scores (~3-5 min on 2 cores).
demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/syntaxformer demo
	HF_HUB_OFFLINE=1 $(BIN)/syntaxformer compare --task sst2 --output-dir runs/compare --overwrite-output-dir

test: $(STAMP)
	HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 $(BIN)/python -m pytest -p no:cacheprovider

bench: $(STAMP)
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b --quick | tail -n 1; done

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .hypothesis
