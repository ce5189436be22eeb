# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install browser-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# llama-cpp-python compiles llama.cpp with -march=native. Some VMs advertise Intel AMX but fault on
# its instructions (seen here: a general protection fault at ldtilecfg on every decode), so AMX is
# left out of the build. The wheel is kept under WHEELS, keyed by version and flags: pip's own
# wheel cache is keyed by the source package alone and would hand back a wheel built without them.
LLAMA_CPP_VERSION := $(shell sed -n 's/.*"llama-cpp-python\[server\]==\([0-9.]*\)".*/\1/p' pyproject.toml)
LLAMA_CFLAGS := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
WHEELS := $(HOME)/.cache/paperchat/wheels/llama-cpp-python-$(LLAMA_CPP_VERSION)-noamx

$(WHEELS)/.built: | $(BIN)/python
	mkdir -p $(WHEELS)
	CFLAGS="$(LLAMA_CFLAGS)" CXXFLAGS="$(LLAMA_CFLAGS)" $(BIN)/pip wheel --quiet --no-deps \
		--no-cache-dir -w $(WHEELS) 'llama-cpp-python==$(LLAMA_CPP_VERSION)'
	touch $@

$(STAMP): pyproject.toml $(WHEELS)/.built | $(BIN)/python
	$(BIN)/pip install --quiet --find-links $(WHEELS) -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the browser tests (Playwright drives it; no browser download).
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
		else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; fi; \
	fi

run: install
	$(BIN)/paperchat serve

test: install browser-deps
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache

# A CPUID mask that makes one process take its AVX2 code paths on an AVX-512 machine
# (bench/avx2only.c): LD_PRELOAD=$PWD/bench/libavx2only.so .venv/bin/paperchat bench index
bench/libavx2only.so: bench/avx2only.c
	gcc -O2 -Wall -shared -fPIC -o $@ $<
