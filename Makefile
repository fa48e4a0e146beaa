# The two entry points of a fresh machine (see README.md):
#   make demo   build, write an example project, check its configuration
#   make test   install what the tests need (as root), then run every test
CARGO ?= cargo
BIN := target/debug/overbrainer

.PHONY: all build test test-deps demo lint

all: build

build:
	$(CARGO) build

test-deps:
	@scripts/test-deps.sh

# `cargo test` builds the library, the binary, the examples (the lock tests run one) and
# runs unit, integration and doc tests.
test: test-deps
	$(CARGO) test

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

demo: build
	@dir=$$(mktemp -d) && \
	  echo "demo: project in $$dir/demo" && \
	  $(BIN) init "$$dir/demo" && \
	  $(BIN) -C "$$dir/demo" config check
