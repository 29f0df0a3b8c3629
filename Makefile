# The two commands: `make demo` and `make test`. Every target installs what is missing first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= 2
PY         := /usr/bin/python3
MODELS     := $(BUILD)/models
NFUSE      := $(BUILD)/nfuse
# ccache keys on relative paths, so every clone (CI's included) shares one cache.
export CCACHE_BASEDIR   := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all deps build asan models demo test test-fast test-arm64 format-check bench clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Unit, op and fuzz tests under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang
# so that the libFuzzer target comes with it.
$(ASAN_BUILD)/build.ninja: | deps
	CC=clang CXX=clang++ cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DNFUSE_SANITIZE=ON -DNFUSE_FUZZ=ON -DNFUSE_ZOO_DIR=$(abspath $(MODELS))

asan: deps $(ASAN_BUILD)/build.ninja
	cmake --build $(ASAN_BUILD) -j $(JOBS)

models: deps
	$(PY) scripts/models.py $(MODELS)
	$(PY) scripts/suite_models.py $(MODELS)/suite
	bash scripts/fetch_ocr_models.sh $(MODELS)
	$(PY) scripts/make_demo_image.py $(MODELS)
	$(PY) scripts/make_calib_images.py $(MODELS)
	$(PY) scripts/make_calib224.py $(MODELS)
	bash scripts/install_ort_peer.sh
	$(PY) scripts/make_foreign_qdq.py $(MODELS)

test: format-check build models asan test-arm64
	NFUSE_POISON_ARENA=1 ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	NFUSE_POISON_ARENA=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -L 'unit|ops|kernels|fuzz'

# The kernels and their tests cross-built for arm64 (NEON) and run under qemu-aarch64.
test-arm64: deps models
	bash scripts/test-arm64.sh $(BUILD)-arm64 $(MODELS)

# Every C/C++ line changed since scripts/format_baseline, against .clang-format.
format-check: deps
	bash scripts/format_check.sh

# Without the sanitizer build: for quick local iterations.
test-fast: build models
	NFUSE_POISON_ARENA=1 ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

demo: build
	bash scripts/fetch_ocr_models.sh $(MODELS)
	$(PY) scripts/make_demo_image.py $(MODELS)/demo_text_960.npy
	$(NFUSE) inspect $(MODELS)/ocr/ocr_det.onnx --shape x=1x3x960x960 --backend cpu
	$(NFUSE) run $(MODELS)/ocr/ocr_det.onnx --input x=$(MODELS)/demo_text_960.npy --output-dir $(BUILD)/demo-out --backend cpu
	$(NFUSE) bench $(MODELS)/ocr/ocr_det.onnx --input x=$(MODELS)/demo_text_960.npy --backend cpu --warmup 2 --runs 5
	$(NFUSE) bench $(MODELS)/ocr/ocr_det.onnx --input x=$(MODELS)/demo_text_960.npy --backend auto --warmup 2 --runs 5 --traffic
	$(PY) scripts/demo_summary.py $(BUILD)/demo-out/sigmoid_0.tmp_0.npy $(MODELS)/demo_text_960.npy $(BUILD)/demo-out/text_map.png

bench: build models
	$(PY) scripts/make_demo_image.py $(MODELS)/demo_text_960.npy
	bash bench/compare_ort.sh $(BUILD)
	bash bench/suite_table.sh $(BUILD)
	bash bench/zoo_dynamic_quant.sh $(BUILD)
	bash bench/compare_int8.sh $(BUILD)
	bash bench/compare_fusion.sh $(BUILD)
	bash bench/backend_table.sh $(BUILD)
	bash bench/api_overhead.sh $(BUILD)
	bash bench/node_overhead.sh $(BUILD)
	bash bench/compare_load.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(BUILD)-arm64
