#!/usr/bin/env bash
# The GPU benchmark: native wgpu and headless-Chromium WebGPU figures (load, sentences/s, GPU
# memory, adapter) for MiniLM and MPNet; software adapters are labelled as such, never as a GPU.
# Needs the release CLI, the site in www/dist (./build.sh) and www/models; serves the benchmark
# site bench/out/site (bench/site.sh, built here; BROWSER=0 skips it). See bench/gpu.mjs for
# the knobs: SAMPLE=2000 (default), FULL=1 (all SR sentences), MODELS=…, NATIVE=0, BROWSER=0, BATCH=32,
# BROWSER_WEBGPU=swiftshader. First the matmul kernel alone (bench/gpu_kernels.rs: GFLOP/s per
# layer shape and weight format at 160/448/3,584 rows, per-dispatch timestamps where the
# adapter has them; its knobs ROWS=, SHAPES=, SECONDS=); KERNELS=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
export SR_BENCH=${SR_BENCH:-target/release/sr-bench}
[ -x "$SR_BENCH" ] || cargo build --release
[ "${KERNELS:-1}" = 0 ] || cargo bench --quiet --features bench --bench gpu_kernels
[ "${BROWSER:-1}" = 0 ] || bash bench/site.sh
exec node bench/gpu.mjs
