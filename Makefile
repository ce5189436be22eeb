# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-avx2 avx2-deps install browser-deps clean

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

# The CPU-dependent tests as a CPU without AVX-512/VNNI runs them (AMD EPYC before Zen 4, many
# Xeons, most laptops), through bench/avx2: the CPUID mask where the CPU has CPUID faulting
# (native speed: the whole embedder test file), else QEMU's user-mode EPYC-Rome (emulated, ~200x
# slower: the embedder's unit tests; its integration tests compare both paths through it).
# On a CPU without AVX-512 they run as they are. .ci/run runs this after `make test`.
avx2-deps:
	@if grep -q ' avx512f' /proc/cpuinfo && ! grep -q ' cpuid_fault' /proc/cpuinfo && \
			! command -v qemu-x86_64 >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user; \
		else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user; fi; \
	fi

test-avx2: install avx2-deps
	@echo "CPU-dependent tests as an AVX2-only CPU, via: $$(bench/avx2 --how)"
	@if [ "$$(bench/avx2 --how)" = qemu ]; then \
		bench/avx2 $(BIN)/python -m pytest -q -p no:faulthandler -p no:cacheprovider \
			tests/test_onnx_embedder.py -m "not integration"; \
	else \
		bench/avx2 $(BIN)/python -m pytest -q -p no:faulthandler -p no:cacheprovider \
			tests/test_onnx_embedder.py; \
	fi

# A CPUID mask that makes one process take its AVX2 code paths on an AVX-512 machine
# (bench/avx2only.c): LD_PRELOAD=$PWD/bench/libavx2only.so .venv/bin/paperchat bench index
bench/libavx2only.so: bench/avx2only.c
	gcc -O2 -Wall -shared -fPIC -o $@ $<
