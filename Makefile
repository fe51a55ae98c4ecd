# Convenience targets; the scripts are the source of truth (README quick start).
.PHONY: deps build test demo clean

deps:
	bash scripts/install-deps.sh

build: deps
	swift build

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

clean:
	rm -rf .build
