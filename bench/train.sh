#!/usr/bin/env bash
# The paper's training experiments as one benchmark (figures, not a test): all-MiniLM-L6-v2 f32
# fine-tuned by `sr-bench train` (a) on STS-B train, the control; (b) on STS-B train plus the
# SR-style pairs of SICK-R and CQA (§4.2); (c) on STS-B train with sentence 2's words shuffled
# (§4.1). Each trained file and the original are scored on STS-B test and on SR's held-out
# files (stsb, askubuntu, twitter, biosses: never trained on, see src/train/data.rs), full
# split; one table beside the paper's figures. Then the speed anchor: steps/s of our loop and
# of sentence-transformers' (PyTorch, CPU) on the same model, batch and pairs, in one run, for
# MiniLM and MPNet.
#
#   bash bench/train.sh                 # 4 epochs each (the paper's recipe)
#   EPOCHS=1 bash bench/train.sh        # what fits a shorter slot (say so when quoting it)
#   ANCHOR_ONLY=1 bash bench/train.sh   # the speed anchor alone (ANCHOR_MODELS=all-MiniLM-L6-v2 for one)
#
# Needs ./build.sh build first (target/release/sr-bench, www/models, data/). Writes
# bench/out/train/ (trained files, logs, reports, table.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=target/release/sr-bench
BASE=www/models/all-MiniLM-L6-v2.f32.gguf
OUT=bench/out/train
EPOCHS=${EPOCHS:-4}
SEED=${SEED:-1}
ANCHOR_STEPS=${ANCHOR_STEPS:-30}
[ -x "$CLI" ] && [ -f "$BASE" ] && [ -f data/stsb/stsb-en-train.csv ] || { echo "run ./build.sh build first" >&2; exit 1; }
mkdir -p "$OUT"
HELD_OUT=stsb,askubuntu,twitter,biosses

source bench/peers.sh

anchor() {  # anchor MODEL: both loops on the same drawn pairs, all cores, one after the other
  local model=$1
  echo "== speed anchor, $model f32: $ANCHOR_STEPS steps of 16 pairs (the same drawn pairs), all cores"
  local venv
  venv=$(st_venv)
  local dir=$OUT/anchor/$model pairs=$OUT/anchor/$model-pairs.csv
  mkdir -p "$dir"
  theirs=$("$venv/bin/python" bench/train_anchor.py "$(st_folder "$model" "$OUT/anchor")" data "$ANCHOR_STEPS" "$pairs" 2>/dev/null)
  "$CLI" train --model "www/models/$model.f32.gguf" --train "$pairs" --epochs 1 --max-steps "$ANCHOR_STEPS" \
    --seed "$SEED" --out "$dir" 2>&1 | tail -1
  node -e 'const [file, t, steps] = process.argv.slice(1);
    const log = JSON.parse(require("fs").readFileSync(file, "utf8"));
    // Both loops must have seen the same pairs: none dropped, every one used.
    if (log.dropped_for_leaks !== 0 || log.pairs !== 16 * steps) throw new Error(`sr-bench trained on ${log.pairs} pairs (${log.dropped_for_leaks} dropped), not the ${16 * steps} drawn`);
    const o = log.steps_per_second;
    console.log(`sr-bench train ${o.toFixed(3)} steps/s, sentence-transformers ${Number(t).toFixed(3)} steps/s: ratio ${(o / t).toFixed(2)}`)' \
    "$dir/$model-own.train-log.json" "$theirs" "$ANCHOR_STEPS"
}
anchors() {
  for model in ${ANCHOR_MODELS:-all-MiniLM-L6-v2 all-mpnet-base-v2}; do anchor "$model"; done
}

if [ "${ANCHOR_ONLY:-0}" = 1 ]; then anchors; exit 0; fi

report() {  # report NAME FILE: the held-out SR files (full split) and STS-B test
  "$CLI" eval --model "$2" --split full --files "$HELD_OUT" --json "$OUT/$1.json" > /dev/null
}
report original "$BASE"
for data in stsb stsb+sr stsb-shuffled; do
  echo "== training on $data ($EPOCHS epochs)"
  "$CLI" train --model "$BASE" --train "$data" --epochs "$EPOCHS" --seed "$SEED" --out "$OUT"
  slug=${data//+/-}
  report "$slug" "$OUT/all-MiniLM-L6-v2-$slug.f32.gguf"
done
node - "$OUT" "$EPOCHS" > "$OUT/table.md" <<'JS'
const fs = require('fs');
const [out, epochs] = process.argv.slice(2);
const rows = [['original', 'the released model'], ['stsb', '(a) STS-B train'], ['stsb-sr', '(b) + SR-style pairs (§4.2)'],
  ['stsb-shuffled', '(c) sentence 2 shuffled (§4.1)']];
// The paper (Zhang et al. 2023, §4.1 and §4.2; SBERT, not MiniLM): STS-B test and relation avg.
const paper = { original: '86.2 / 86.7 · 24.9', stsb: '—', 'stsb-sr': '84.4 · 60.1', 'stsb-shuffled': '85.2' };
console.log(`MiniLM f32, ${epochs} epoch(s), SR on the held-out files (stsb, askubuntu, twitter, biosses; full split)\n`);
console.log('| model | STS-B test | SR structure avg | SR relation avg | dev (kept epoch) | paper: STS-B test · relation |');
console.log('|---|---|---|---|---|---|');
for (const [key, label] of rows) {
  const r = JSON.parse(fs.readFileSync(`${out}/${key}.json`, 'utf8'));
  const logFile = `${out}/all-MiniLM-L6-v2-${key}.train-log.json`;
  const dev = fs.existsSync(logFile) ? (() => { const l = JSON.parse(fs.readFileSync(logFile, 'utf8'));
    return `${l.dev_spearman[l.kept_epoch].toFixed(2)} (${l.kept_epoch}), ${l.steps_per_second.toFixed(2)} steps/s`; })() : '—';
  console.log(`| ${label} | ${r.stsb_test.spearman.toFixed(2)} | ${r.results.structure.avg_spearman.toFixed(2)} | ${r.results.relation.avg_spearman.toFixed(2)} | ${dev} | ${paper[key]} |`);
}
JS
cat "$OUT/table.md"
anchors
