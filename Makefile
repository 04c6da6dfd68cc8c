# EvoMem. Two commands on a fresh machine:
#   make run    install into .venv/ and serve the embedded default on streamable HTTP
#   make test   install test tools and run lint + the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
DB ?= $(HOME)/.evomem/evomem.db
HOST ?= 127.0.0.1
PORT ?= 8765
PYTEST_ARGS ?=

.PHONY: run test lint format bench bench-full images base-images clean help protos

help:
	@echo "make run         install and serve the embedded server on http://$(HOST):$(PORT)/mcp (DB=$(DB))"
	@echo "make test        install test tools, run ruff and pytest"
	@echo "make bench       quality suite + 100k-note speed suite (results in bench/results/)"
	@echo "make bench-full  adds 1M notes and the external data sets"
	@echo "make images      build the container images (local base images where no registry is reachable)"

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Stamps re-run the install only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/activate
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/activate
	$(PIP) install -q -e ".[test]"
	@touch $@

$(VENV)/.installed-bench: pyproject.toml | $(VENV)/bin/activate
	$(PIP) install -q -e ".[test,bench]"
	@touch $@

run: $(VENV)/.installed
	$(VENV)/bin/evomem-mcp --db "$(DB)" --transport http --host $(HOST) --port $(PORT)

test: $(VENV)/.installed-test
	$(VENV)/bin/ruff check services tests bench
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check services tests bench
	$(VENV)/bin/ruff format --check services tests bench

format: $(VENV)/.installed-test
	$(VENV)/bin/ruff format services tests bench
	$(VENV)/bin/ruff check --fix services tests bench

bench: $(VENV)/.installed-bench
	$(PY) -m bench.quality --out bench/results
	$(PY) -m bench.speed --sizes 100000 --out bench/results

bench-full: $(VENV)/.installed-bench
	$(PY) -m bench.quality --out bench/results
	$(PY) -m bench.external --out bench/results
	$(PY) -m bench.speed --sizes 10000,100000,1000000 --out bench/results

# Stand-in base images for machines without a container registry (docker/base/README.md).
base-images:
	docker image inspect python:3.11-slim-bookworm >/dev/null 2>&1 || docker pull python:3.11-slim-bookworm || bash docker/base/build-python-base.sh
	docker image inspect $${REDIS_IMAGE:-redis:7-bookworm} >/dev/null 2>&1 || docker pull $${REDIS_IMAGE:-redis:7-bookworm} || bash docker/base/build-redis-image.sh

images: base-images
	DOCKER_BUILDKIT=0 docker build -f docker/Dockerfile -t evomem:latest .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build *.egg-info services/*.egg-info

# gRPC code generated from protos/ into services/evomem/v1/ (never edit it by hand).
protos: $(VENV)/.installed-test
	$(PY) -m grpc_tools.protoc -I protos --python_out=services --pyi_out=services --grpc_python_out=services protos/evomem/v1/*.proto
	@touch services/evomem/v1/__init__.py
