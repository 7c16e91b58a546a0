#!/usr/bin/env bash
# Benchmarks (figures, not tests): native and in-browser throughput on the same 2,000 SR
# sentences, and the full-split evaluation wall time. Run through `./build.sh bench`.
# FULL_MODELS="all-MiniLM-L6-v2 all-mpnet-base-v2" adds MPNet's full split (~25 min here).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=target/release/sr-bench
MODELS=(www/models/all-{MiniLM-L6-v2,mpnet-base-v2}.{q8_0,q4_0,f32}.gguf)
FULL_MODELS=${FULL_MODELS:-all-MiniLM-L6-v2}

echo "== native: load time and sentences/s"
"$CLI" bench --data data "${MODELS[@]/#/--model=}"

echo; echo "== browser (headless Chromium): load time and sentences/s"
bash bench/site.sh # bench/out/site: www/dist + the benchmark pages, wasm with the bench feature
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$CLI" serve --dir bench/out/site --port "$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server' EXIT
sleep 0.5
node bench/browser.mjs "http://127.0.0.1:$port/" 2000 \
  all-MiniLM-L6-v2.q8_0.gguf,all-MiniLM-L6-v2.q4_0.gguf,all-MiniLM-L6-v2.f32.gguf
# The architectures beyond BERT at MiniLM's size (random checkpoints, ./build.sh fixtures):
# GFLOP/s against MiniLM's, natively and in the page.
SHAPES=(tests/artifacts/llama/{modern-bert,nomic-bert,qwen3,gemma-embedding}-minilm-shape.q8_0.gguf)
if [ -f "${SHAPES[0]}" ]; then
  "$CLI" bench --data data --sentences 1000 "${SHAPES[@]/#/--model=}" --model=www/models/all-MiniLM-L6-v2.q8_0.gguf
  node bench/browser.mjs "http://127.0.0.1:$port/" 2000 \
    modern-bert-minilm-shape.q8_0.gguf,nomic-bert-minilm-shape.q8_0.gguf,qwen3-minilm-shape.q8_0.gguf,gemma-embedding-minilm-shape.q8_0.gguf,all-MiniLM-L6-v2.q8_0.gguf
fi
# MPNet: q8_0 (the file the page offers by default for it); ~6 minutes at one thread.
node bench/browser.mjs "http://127.0.0.1:$port/" 2000 all-mpnet-base-v2.q8_0.gguf
# CPU vs WebGPU in one Chromium (headless Chromium's WebGPU is SwiftShader: CPU emulation, ~2/s)
node bench/browser.mjs "http://127.0.0.1:$port/" 200 all-MiniLM-L6-v2.q8_0.gguf cpu,gpu

# Full split: wall time, and every cell against sentence-transformers (f32 ±0.05, q8_0 ±0.5).
mkdir -p bench/out
for model in $FULL_MODELS; do
  for dtype_tol in f32:0.05 q8_0:0.5; do
    dtype=${dtype_tol%%:*} tol=${dtype_tol##*:}
    echo; echo "== native: $model full SR split + STS-B test ($dtype), wall time"
    /usr/bin/time -f "wall %e s, peak RSS %M KB" "$CLI" eval --model "www/models/$model.$dtype.gguf" \
      --data data --split full --json "bench/out/full-$model-$dtype.json"
    "$CLI" compare --reference sentence_transformers_fp32 --tolerance "$tol" "bench/out/full-$model-$dtype.json"
  done
done
