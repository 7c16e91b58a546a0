#!/usr/bin/env bash
# The benchmark site, bench/out/site: the built demo site (www/dist) plus the benchmark pages
# (bench/web/: bench.html, the throughput page; cmp-*.html, the comparison pages), with the wasm
# package replaced by a build with the `bench` cargo feature (bench/out/pkg: the kernel peaks
# and per-shape GFLOP/s exports, which the shipped wasm does not have). The benchmark scripts
# (run.sh, gpu.sh, compare-peers.sh) run this and serve bench/out/site.
# Needs ./build.sh build first (www/dist). Usage: bash bench/site.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SITE=bench/out/site
[ -f www/dist/index.html ] && [ -f www/dist/pkg/sr_bench.js ] \
  || { echo "bench/site.sh: www/dist is not built: run ./build.sh build first" >&2; exit 1; }

wasm-pack build --target web --release --out-dir bench/out/pkg --no-pack -- --features bench

rm -rf "$SITE" && mkdir -p "$SITE"
for entry in www/dist/*; do
  name=$(basename "$entry")
  case $name in
    pkg) ;; # replaced below
    # The large, read-only parts are hard-linked where the file system allows (nothing below
    # writes into them), else copied.
    models|data) cp -rl "$entry" "$SITE/" 2>/dev/null || cp -r "$entry" "$SITE/" ;;
    *) cp -r "$entry" "$SITE/" ;;
  esac
done
# Architectures without published weights here are benchmarked on a random checkpoint in
# MiniLM's shape (./build.sh fixtures), listed in the benchmark site's manifest only; the
# manifest is written anew (the one copied may be a hard link to www/dist's).
for arch in nomic-bert modern-bert qwen3 gemma-embedding; do
  EXTRA=tests/artifacts/llama/$arch-minilm-shape.q8_0.gguf
  [ -f "$EXTRA" ] || continue
  cp "$EXTRA" "$SITE/models/"
  python3 - "$SITE/models/manifest.json" "$EXTRA" "$arch" <<'PY'
import hashlib, json, os, sys
path, extra, arch = sys.argv[1:]
manifest = json.load(open(path))
data = open(extra, "rb").read()
manifest["models"].append({"name": f"{arch} (random, MiniLM's shape)", "dtype": "q8_0",
    "file": os.path.basename(extra), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
    "architecture": arch, "default": False})
os.unlink(path)
json.dump(manifest, open(path, "w"), indent=1)
PY
done
mkdir -p "$SITE/pkg"
cp bench/out/pkg/sr_bench.js bench/out/pkg/sr_bench_bg.wasm "$SITE/pkg/"
cp bench/web/* "$SITE/"
echo "bench/site.sh: benchmark site in $SITE (wasm with the bench feature: bench/out/pkg)"
