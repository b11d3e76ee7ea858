# ctrainer developer entry points. Each installs what it needs first (scripts/install-deps.sh:
# Debian packages, and the pinned torch wheel in a Python environment outside the clone).
#   make demo    train a small BERT on the bundled GLUE SST-2 and print its dev metrics (main job)
#   make test    install deps (+ the tests' Python references), configure, build, run all of ctest,
#                then the unit tests under ASan/UBSan and a fuzz smoke run (SANITIZE=OFF skips)
#   make bench   re-run every benchmarks/results/*.json with its recorded command, then rewrite
#                benchmarks/results/README.md (BENCH_SCENARIOS="ddp scaling" selects some)
#   make docs    regenerate docs/arguments.md from the flag table and docs/errors.md by running
#                every bad input of tests/docs/error_catalogue.py (ctest checks both are current)
#   make fuzz    build the libFuzzer targets of fuzz/ with clang (build-fuzz/) and fuzz each for
#                FUZZ_SECONDS (default 5; FUZZ_TARGETS="safetensors vocab" selects some)
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

.PHONY: all deps test-deps configure build test sanitize demo bench docs fuzz install clean

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

# After ctest, the unit tests again under ASan + UBSan + LeakSanitizer and every fuzz target for a
# few seconds, both from one clang build in build-fuzz/ (SANITIZE=OFF skips them). The fuzz targets
# run $(JOBS) at a time, each on a core of its own for its 5 seconds.
SANITIZE ?= ON
test: test-deps build
	cd $(BUILD_DIR) && ctest -j $(JOBS) --output-on-failure
ifeq ($(SANITIZE),ON)
	bash scripts/sanitize.sh --jobs $(JOBS)
	bash scripts/fuzz.sh --seconds 5 --jobs $(JOBS) --parallel $(JOBS)
endif

# The demo builds only the program it runs (96 of the ~210 build steps).
# Every unit program under ASan + UBSan (make test runs the 11 of scripts/sanitize.sh's default set).
sanitize: deps
	bash scripts/sanitize.sh --all --jobs $(JOBS)

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

# The programs whose error messages docs/errors.md catalogues, as error_catalogue.py finds them.
ERROR_CATALOGUE_ENV := CTRAINER_SOURCE_DIR=$(CURDIR) \
  CTRAINER_BIN_RUN_GLUE=$(BUILD_DIR)/examples/run_glue \
  CTRAINER_BIN_CTRAINER_TRAIN_CLASSIFIER=$(BUILD_DIR)/examples/ctrainer-train-classifier \
  CTRAINER_BIN_CTRAINER_RUN=$(BUILD_DIR)/distributed/ctrainer-run \
  CTRAINER_BIN_CTRAINER_CONSOLIDATE=$(BUILD_DIR)/examples/ctrainer-consolidate \
  CTRAINER_BIN_CTRAINER_TOKENIZE=$(BUILD_DIR)/examples/ctrainer-tokenize \
  CTRAINER_BIN_CTRAINER_PLOT=$(BUILD_DIR)/examples/ctrainer-plot \
  CTRAINER_BIN_RUN_CLM=$(BUILD_DIR)/examples/run_clm \
  CTRAINER_BIN_RUN_MLM=$(BUILD_DIR)/examples/run_mlm \
  CTRAINER_BIN_CTRAINER_GENERATE=$(BUILD_DIR)/examples/ctrainer-generate \
  CTRAINER_BIN_RUN_SUMMARIZATION=$(BUILD_DIR)/examples/run_summarization \
  CTRAINER_BIN_RUN_TRANSLATION=$(BUILD_DIR)/examples/run_translation

docs: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target run_glue ctrainer-train-classifier \
	  ctrainer-run ctrainer-consolidate ctrainer-tokenize ctrainer-plot run_clm run_mlm \
	  ctrainer-generate run_summarization run_translation
	$(BUILD_DIR)/examples/run_glue --help_markdown > docs/arguments.md
	$(ERROR_CATALOGUE_ENV) $(VENV)/bin/python tests/docs/error_catalogue.py --write docs/errors.md

# A separate clang build (ASan, UBSan, libFuzzer); the normal build replays the corpora in ctest.
FUZZ_SECONDS ?= 5
FUZZ_TARGETS ?=
fuzz: deps
	bash scripts/fuzz.sh --seconds $(FUZZ_SECONDS) --jobs $(JOBS) $(FUZZ_TARGETS)

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD_DIR) demo_output
