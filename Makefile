# colo: the two commands of the README.
#   make demo   install what is missing, build the colo executable only, then
#               scripts/demo.sh: quickstart, fused sweep, a batch of mixed
#               jobs through `colo run`, and `colo report`'s PNGs of it
#   make test   install what is missing, build everything, run every test
#               (GoogleTest and pytest) through CTest

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

# JOBS tests run at once, each with one CPU thread for LibTorch and OpenMP:
# two tests that each took every core slowed each other 2-5x (2 cores: 752 s
# of CTest against 592 s with one thread each, 2026-11-27).
test: build
	OMP_NUM_THREADS=1 ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: configure
	@echo "== building the colo executable (progress as [done/total])"
	cmake --build $(BUILD) -j $(JOBS) --target colo
	./scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
