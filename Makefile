# sluice: the two commands of the quick start, and the rest of the workflow.
#
#   make demo    install missing Debian packages, build, run the demo
#   make test    install missing Debian packages, build, run every test
#
#   make bench   run the Google Benchmark programs (results: docs/perf.md)
#   make asan    build and test under AddressSanitizer + UBSan (build-asan/)
#   make tsan    build and run the pipeline tests under ThreadSanitizer (build-tsan/)
#   make fuzz    build the libFuzzer targets with clang and run each briefly
#   make format  clang-format every C++ file
#   make install PREFIX=/usr/local
#   make wheel   build the Python package's wheel into build/dist (pip wheel .)

BUILD ?= build
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 30
CMAKE_FLAGS ?=

# The venv the Python package is built and tested with (scripts/python-env.sh).
PYTHON_ENV = $(abspath $(BUILD))/pyenv/bin/python
# Apache Arrow C++ (scripts/fetch-arrow.sh), shared by every build folder.
ARROW_ROOT = $(CURDIR)/build/arrow
CONFIGURE = cmake -S . -G Ninja -Wno-dev -DSLUICE_WERROR=ON -DSLUICE_ARROW_ROOT=$(ARROW_ROOT)

# make test / make demo also make the Python package's venv (build/pyenv).
.PHONY: all deps pyenv build test demo bench asan tsan fuzz format install wheel clean

all: build

deps:
	@scripts/install-deps.sh
	@scripts/fetch-arrow.sh $(ARROW_ROOT) \
	  || echo "make: could not fetch Arrow C++; building without object stores and Parquet" >&2

pyenv: deps
	@scripts/python-env.sh $(BUILD) > /dev/null

$(BUILD)/build.ninja: | deps pyenv
	@echo "configuring $(BUILD)/ (log: $(BUILD).configure.log)"
	@$(CONFIGURE) -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_PYTHON=$(PYTHON_ENV) $(CMAKE_FLAGS) \
	  > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }

# A build folder configured before the Python package existed gets it too.
build: deps pyenv $(BUILD)/build.ninja
	@grep -q '^SLUICE_PYTHON:FILEPATH=$(PYTHON_ENV)$$' $(BUILD)/CMakeCache.txt \
	  || cmake -DSLUICE_PYTHON=$(PYTHON_ENV) $(BUILD) > $(BUILD).configure.log 2>&1 \
	  || { cat $(BUILD).configure.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The demo builds what each of its steps needs, when it needs it.
demo: deps pyenv $(BUILD)/build.ninja
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/run-benchmarks.sh $(BUILD)

asan: deps pyenv
	@$(CONFIGURE) -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=address,undefined -DSLUICE_PYTHON=$(PYTHON_ENV) \
	  -DSLUICE_BUILD_BENCH=OFF > build-asan.configure.log 2>&1 || { cat build-asan.configure.log; exit 1; }
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$(CURDIR)/scripts/ubsan.supp \
	  ctest --output-on-failure -j $(JOBS) -LE no-sanitizer

# The pipeline is where the threads are. scripts/tsan.supp explains the one
# suppression (oneTBB's own code, which Debian does not build with TSan).
tsan: deps
	@$(CONFIGURE) -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_SANITIZE=thread \
	  -DSLUICE_BUILD_BENCH=OFF -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_SAMPLES=OFF \
	  > build-tsan.configure.log 2>&1 || { cat build-tsan.configure.log; exit 1; }
	@cmake --build build-tsan -j $(JOBS) --target pipeline_test
	@TSAN_OPTIONS=halt_on_error=1:report_signal_unsafe=0:suppressions=$(CURDIR)/scripts/tsan.supp \
	  build-tsan/tests/pipeline/pipeline_test --gtest_brief=1

fuzz: deps
	@CC=clang CXX=clang++ $(CONFIGURE) -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_FUZZ=ON \
	  -DSLUICE_BUILD_TESTS=ON -DSLUICE_BUILD_BENCH=OFF -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_SAMPLES=OFF \
	  > build-fuzz.configure.log 2>&1 || { cat build-fuzz.configure.log; exit 1; }
	@cmake --build build-fuzz -j $(JOBS) --target fuzzers
	@scripts/run-fuzzers.sh build-fuzz $(FUZZ_SECONDS)

format:
	@git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# The wheel `pip install .` builds (pyproject.toml; scikit-build-core in an
# isolated build environment, into build/wheel/).
wheel: pyenv
	@$(PYTHON_ENV) -m pip wheel --quiet --no-deps --wheel-dir $(BUILD)/dist .
	@ls $(BUILD)/dist/*.whl

clean:
	@rm -rf $(BUILD) build-asan build-fuzz *.configure.log
