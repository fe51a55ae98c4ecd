# Convenience targets; the scripts are the source of truth (README quick start).
.PHONY: deps build test demo bench-relay clean

deps:
	bash scripts/install-deps.sh

build: deps
	swift build

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

# Relay capacity at the room shapes recorded in docs/benchmarks.md.
bench-relay:
	bash scripts/bench-relay.sh 500x2 200x5 60x10 70x10 100x10 10x25 2x50 3x50

clean:
	rm -rf .build
