# ingot: `make` installs what is missing, generates, builds and packages every
# pack, and prints the census; `make test` builds the tests and runs every one (CTest).
BUILD ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build census tests test test-sanitize check install clean

all: build census

deps:
	@./tools/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

census: build
	@PYTHONPATH=generator /usr/bin/python3 -m ingot census $(BUILD)/packs/attention_decode
	@if [ -x $(BUILD)/bin/ingot-inspect ]; then $(BUILD)/bin/ingot-inspect census $(BUILD)/packs/attention_decode | tail -n 3; fi

# The tests' programs and packs are not part of `all` (target ingot_tests).
tests: build
	cmake --build $(BUILD) -j $(JOBS) --target ingot_tests

test: tests
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The host tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
test-sanitize: deps
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang-22 -DINGOT_SANITIZE=ON
	cmake --build $(BUILD)-asan -j $(JOBS)
	cmake --build $(BUILD)-asan -j $(JOBS) --target ingot_tests
	ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) -LE gpu

check:
	PYTHONPATH=generator /usr/bin/python3 -m ingot check

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(BUILD)-asan
