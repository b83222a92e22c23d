# colo: the two commands of the README.
#   make demo   install what is missing, build, train the quickstart model, then
#               sweep 8 configurations of it as fused arrays
#   make test   install what is missing, build, run every test through CTest

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	./$(BUILD)/colo train examples/quickstart.toml
	./$(BUILD)/colo sweep examples/sweep_quickstart.toml

clean:
	rm -rf $(BUILD)
