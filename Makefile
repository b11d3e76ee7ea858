# ctrainer developer entry points. Each installs what it needs first (scripts/install-deps.sh:
# Debian packages, and the pinned torch wheel in a Python environment outside the clone).
#   make demo    train a small BERT on the bundled GLUE SST-2 and print its dev metrics (main job)
#   make test    install deps (+ the tests' Python references), configure, build, run all of ctest
#   make bench   re-run every benchmarks/results/*.json with its recorded command, then rewrite
#                benchmarks/results/README.md (BENCH_SCENARIOS="ddp scaling" selects some)
#   make docs    regenerate docs/arguments.md from the flag table (ctest checks it is current)
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
# Every CUDA path is compiled and linked (against the machine's CUDA toolkit) even without a GPU.
WITH_CUDA ?= ON
CMAKE_FLAGS ?=
# The Python environment holding the torch wheel (only the build and the tests use Python).
VENV := $(shell bash scripts/install-deps.sh --print-venv)
# ccache and the shared precompiled header only cooperate with these settings.
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime
# Paths relative to the checkout, so a fresh clone (CI) reuses the cache of an earlier one.
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps test-deps configure build test demo bench docs install clean

all: build

deps:
	@bash scripts/install-deps.sh

test-deps:
	@bash scripts/install-deps.sh --tests

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCTRAINER_PYTHON=$(VENV)/bin/python -DCTRAINER_WITH_CUDA=$(WITH_CUDA) $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: test-deps build
	cd $(BUILD_DIR) && ctest -j $(JOBS) --output-on-failure

# The demo builds only the program it runs (96 of the ~210 build steps).
demo: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target run_glue
	rm -rf demo_output
	$(BUILD_DIR)/examples/run_glue --task_name sst2 --data_dir examples/data/glue/SST-2 \
	  --config_name examples/data/configs/bert-tiny.json \
	  --tokenizer_name examples/data/vocab/bert-base-uncased-vocab.txt \
	  --output_dir demo_output --do_train --do_eval --max_seq_length 64 --pad_to_max_length false \
	  --per_device_train_batch_size 32 --per_device_eval_batch_size 128 --learning_rate 1e-3 \
	  --warmup_ratio 0.06 --weight_decay 0.01 --num_train_epochs 1 --logging_steps 500 \
	  --save_strategy no --report_to none

# Builds only ctrainer-bench. Full settings: this takes a while (see each result's "command").
bench: test-deps configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target ctrainer-bench
	BENCH_SCENARIOS="$(BENCH_SCENARIOS)" bash benchmarks/run_benchmarks.sh \
	  $(BUILD_DIR)/benchmarks/ctrainer-bench benchmarks/results

docs: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target run_glue
	$(BUILD_DIR)/examples/run_glue --help_markdown > docs/arguments.md

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD_DIR) demo_output
