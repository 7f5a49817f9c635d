# The two commands of the README: `make demo` and `make test`. Each one sets up what it needs.
PYTHON ?= python3
# torch is pinned for the test set-up: the CPU build is what CI installs; users choose their own.
SETUP_PKGS = torch==2.13.0 paddlepaddle==3.3.1 -e .[dev,paddle,torch]

.PHONY: setup demo test

setup:
	$(PYTHON) -m pip install -q $(SETUP_PKGS)

demo:
	$(PYTHON) -m pip install -q -e .
	$(PYTHON) -m autograph_cg lint fixtures/paddle_lm; test $$? -le 1
	$(PYTHON) -m autograph_cg plan fixtures/paddle_lm

test: setup
	$(PYTHON) -m pytest -q
