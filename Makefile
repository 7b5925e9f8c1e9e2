# Two entry points (see README): `make demo` and `make test`. Both create or refresh .venv themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench venv clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,spark]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	mkdir -p out
	$(BIN)/flowbalance check testdata/seed/assignment.json --brokers testdata/seed/brokers.csv --remove 19 || test $$? -eq 1
	$(BIN)/flowbalance plan testdata/seed/assignment.json --brokers testdata/seed/brokers.csv --remove 19 \
		-o out/plan.json --rollback out/rollback.json --election out/election.json
	cat out/plan.json

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q --durations=15

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
