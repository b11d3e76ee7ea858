# ctrainer developer entry points. Everything installs its own Debian dependencies first.
#   make demo    train the bundled example and print its metrics (the README's main job)
#   make test    install deps if needed, configure, build, run the whole ctest suite
#   make bench   run ctrainer-bench trainer_overhead
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache and the shared precompiled header only cooperate with these settings.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
# Paths relative to the checkout, so a fresh clone (CI) reuses the cache of an earlier one.
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps configure build test demo bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest -j $(JOBS) --output-on-failure

demo: build
	rm -rf demo_output
	$(BUILD_DIR)/examples/ctrainer-train-classifier --output_dir demo_output --do_train --do_eval \
	  --num_train_epochs 10 --learning_rate 3e-3 --per_device_train_batch_size 32 --logging_steps 100

bench: build
	$(BUILD_DIR)/benchmarks/ctrainer-bench trainer_overhead --json $(BUILD_DIR)/trainer_overhead.json

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD_DIR) demo_output
