// Compares an `sr-bench eval --json` report with a reference measurement in sr-scores.json.
// Usage: node bench/compare.mjs REPORT.json [reference key] [tolerance]
//   reference key: sentence_transformers_fp32 (default) | onnx_int8_onnxruntime
// Prints every Spearman cell with its delta and exits non-zero when one is outside the tolerance.
import { readFileSync } from 'node:fs';

const [reportPath, key = 'sentence_transformers_fp32', tol = '0.05'] = process.argv.slice(2);
if (!reportPath) {
  console.error('usage: node bench/compare.mjs REPORT.json [reference key] [tolerance]');
  process.exit(2);
}
const tolerance = Number(tol);
const report = JSON.parse(readFileSync(reportPath, 'utf8'));
const scores = JSON.parse(readFileSync(new URL('../tests/fixtures/sr-scores.json', import.meta.url), 'utf8'));
const reference = scores[key]?.[report.model];
if (!reference) throw new Error(`no '${key}' reference for model ${report.model}`);

let worst = 0;
const rows = [];
for (const dim of ['structure', 'relation']) {
  for (const file of scores.files) {
    const got = report.results[dim][file].spearman;
    const want = reference[dim][file].spearman;
    worst = Math.max(worst, Math.abs(got - want));
    rows.push([`${dim}/${file}`, got, want]);
  }
}
const stsbWant = scores.stsb_test_spearman_sentence_transformers_fp32[report.model];
if (report.stsb_test && stsbWant !== undefined) {
  rows.push(['stsb_test', report.stsb_test.spearman, stsbWant]);
  worst = Math.max(worst, Math.abs(report.stsb_test.spearman - stsbWant));
}
console.log(`${report.model} (${report.dtype}, ${report.split}) vs ${key}, tolerance ±${tolerance}`);
for (const [cell, got, want] of rows) {
  const delta = got - want;
  const mark = Math.abs(delta) <= tolerance + 1e-9 ? 'ok' : 'OUTSIDE';
  console.log(`${cell.padEnd(20)} ${got.toFixed(2).padStart(7)} ${want.toFixed(2).padStart(7)} ${(delta >= 0 ? '+' : '') + delta.toFixed(2).padStart(6)}  ${mark}`);
}
console.log(`max |Δ| = ${worst.toFixed(2)}`);
process.exit(worst <= tolerance + 1e-9 ? 0 : 1);
