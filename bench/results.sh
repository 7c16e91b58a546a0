#!/usr/bin/env bash
# Records the project's measured results: each row one `sr-bench eval --json` report wrapped with
# what produced it (the command, the model file and its sha256, the date, the machine), written to
# docs/results/<id>.json. The site's Results view is built from those files (`sr-bench results`,
# run by build.sh); tests/results.rs recomputes the quick-split row of MiniLM q8_0.
#
#   bash bench/results.sh                        # the released files and the baseline
#   TRAINED=bench/out/train bash bench/results.sh  # plus every trained q8_0 file found there
#   TRAINED=bench/out/train4 TAG=4-epochs ONLY=all-MiniLM-L6-v2-stsb.q8_0.4-epochs.full bash bench/results.sh
#                                                # a trained file's row, its id tagged (another run of the same recipe)
#   ONLY=all-MiniLM-L6-v2.q8_0.quick bash bench/results.sh   # one row again
#
# Needs ./build.sh build first (target/release/sr-bench, www/models, data/).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=target/release/sr-bench
OUT=docs/results
[ -x "$CLI" ] && [ -f data/stsb/stsb-en-test.csv ] || { echo "run ./build.sh build first" >&2; exit 1; }
mkdir -p "$OUT"
MACHINE="$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(uname -sm)"

# row ID MODEL_FILE EVAL_ARGS...: one report, wrapped.
row() {
  local id=$1 model=$2; shift 2
  [ -z "${ONLY:-}" ] || [ "$ONLY" = "$id" ] || return 0
  [ -f "$model" ] || { echo "$id: $model is missing (skipped)" >&2; return 0; }
  echo "== $id"
  local json; json=$(mktemp)
  "$CLI" eval --model "$model" --data data "$@" --json "$json" >/dev/null
  python3 - "$OUT/$id.json" "$id" "$model" "$MACHINE" "$json" "sr-bench eval --model $(basename "$model") $(printf '%q ' "$@" | sed 's/ $//')" <<'EOF'
import datetime, hashlib, json, os, sys
out, id_, model, machine, report, command = sys.argv[1:]
# A trained file's row names the training too (its log lies beside it: sr-bench train).
log = model[: -len(".q8_0.gguf")] + ".train-log.json"
if os.path.exists(log):
    t = json.load(open(log))
    r = t["recipe"]
    command = (f"sr-bench train --model {t['base_model']}.f32.gguf --train {r['data']} --epochs {r['epochs']} "
               f"--batch {r['batch']} --lr {r['lr']} --warmup {r['warmup']} --seed {r['seed']} --out OUT "
               f"(kept epoch {t['kept_epoch']}, {t['steps']} steps); " + command)
row = {
    "id": id_,
    "command": command,
    "model_file": model.split("/")[-1],
    "model_sha256": hashlib.sha256(open(model, "rb").read()).hexdigest(),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
    "machine": machine,
    "report": json.load(open(report)),
}
with open(out, "w") as f:
    json.dump(row, f, indent=1)
    f.write("\n")
EOF
  rm -f "$json"
}

M=www/models
row all-MiniLM-L6-v2.q8_0.full "$M/all-MiniLM-L6-v2.q8_0.gguf" --split full
row all-MiniLM-L6-v2.q8_0.quick "$M/all-MiniLM-L6-v2.q8_0.gguf" --split quick
row all-MiniLM-L6-v2.f32.full "$M/all-MiniLM-L6-v2.f32.gguf" --split full
row all-MiniLM-L6-v2.baseline.full "$M/all-MiniLM-L6-v2.q8_0.gguf" --split full --baseline static
row all-mpnet-base-v2.q8_0.full "$M/all-mpnet-base-v2.q8_0.gguf" --split full
row multilingual-e5-small.q4_0.quick "$M/multilingual-e5-small.q4_0.gguf" --split quick
# EmbeddingGemma-300m's real weights (`./build.sh fixtures full`), with and without the card's
# prompt for similarity; quick split (a full one takes hours on two cores).
G=tests/artifacts/llama/embeddinggemma-300m.q8_0.gguf
row embeddinggemma-300m.q8_0.quick "$G" --split quick --prefix ""
row embeddinggemma-300m.q8_0.sts-prompt.quick "$G" --split quick --prefix "task: sentence similarity | query: "
if [ -n "${TRAINED:-}" ]; then
  for f in "$TRAINED"/*.q8_0.gguf; do
    [ -e "$f" ] || continue
    row "$(basename "$f" .gguf)${TAG:+.$TAG}.full" "$f" --split full
  done
fi
echo "wrote $OUT/ ($(ls "$OUT" | wc -l) rows)"
