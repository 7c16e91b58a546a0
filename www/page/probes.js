// @ts-check
// The benchmark panel's optional probes and their results. The engine runs them
// (request `probe`, see protocol.js / probe.js); Rust computes every number and the finding
// sentence, this module only shows them: the word-order probe's table and finding, the layer
// probe's line chart and table, each with its JSON and the CLI command that reproduces it.

import { createLines } from './charts.js';
import { $, download, el, fmt2 } from './ui.js';

/** @typedef {import('./state.js').PageState} PageState */

const PROBE_KINDS = ['shuffle', 'layers'];
export const PROBE_LABELS = { shuffle: 'Word-order probe', layers: 'Layer probe' };
const DEFAULT_SEEDS = 5;
const MAX_SEEDS = 50;

/** The layer chart's lines: key in a layer row, label, colour. */
const LAYER_LINES = [
  ['structure_avg', 'SR structure avg', '#0b4ea2'],
  ['relation_avg', 'SR relation avg', '#c45a14'],
  ['stsb_test', 'STS-B test', '#5a5a5a'],
];

/** The probes ticked in the benchmark panel, in run order: [{kind, seeds}]. */
export function tickedProbes() {
  const raw = Math.round(Number($('probe-seeds').value));
  const seeds = Number.isFinite(raw) && raw >= 1 ? Math.min(raw, MAX_SEEDS) : DEFAULT_SEEDS;
  $('probe-seeds').value = String(seeds);
  return PROBE_KINDS.filter((k) => /** @type {HTMLInputElement} */ ($(`probe-${k}`)).checked).map((kind) => ({ kind, seeds }));
}

/** The command line giving the same JSON (the file name of the loaded model). */
function cliCommand(kind, load, split, seeds) {
  const model = `--model ${load.entry.file}`;
  return kind === 'shuffle'
    ? `sr-bench probe shuffle ${model} --seeds ${seeds} --sr ${split} --json OUT`
    : `sr-bench probe layers ${model} --split ${split} --json OUT`;
}

/** "mean ± sd" (sd only with two seeds or more). */
function meanSd(mean, sd) {
  return Number.isFinite(sd) ? `${fmt2(mean)} ± ${fmt2(sd)}` : fmt2(mean);
}

function numCell(value, text) {
  return el('td', { data: { value: Number.isFinite(value) ? String(value) : '' } }, text ?? fmt2(value));
}

function renderShuffle(probe) {
  const r = probe.result;
  $('shuffle-finding').textContent = r.finding;
  const sh = r.shuffled;
  const rows = [
    ['STS-B test Spearman', 'stsb-spearman', r.stsb_test.spearman, sh.spearman_mean, sh.spearman_sd],
    ['STS-B test Pearson', 'stsb-pearson', r.stsb_test.pearson, sh.pearson_mean, sh.pearson_sd],
  ];
  if (r.sr) {
    rows.push([`SR structure avg (${r.sr.split})`, 'sr-structure', r.sr.structure_avg,
      r.sr.structure_avg_shuffled_mean, r.sr.structure_avg_shuffled_sd]);
    rows.push([`SR relation avg (${r.sr.split})`, 'sr-relation', r.sr.relation_avg,
      r.sr.relation_avg_shuffled_mean, r.sr.relation_avg_shuffled_sd]);
  }
  $('shuffle-body').replaceChildren(...rows.map(([label, key, ordinary, mean, sd]) => el('tr', { data: { row: key } },
    el('th', { scope: 'row' }, label),
    numCell(ordinary),
    el('td', { data: { value: Number.isFinite(mean) ? String(mean) : '', sd: Number.isFinite(sd) ? String(sd) : '' } },
      meanSd(mean, sd)))));
  const seeds = `${sh.seeds} seed${sh.seeds === 1 ? '' : 's'}`;
  $('shuffle-table').querySelector('thead th:last-child').textContent = `words shuffled (${seeds})`;
}

/** @param {PageState} state */
function renderLayers(state, probe) {
  const layers = probe.result.layers;
  $('layers-body').replaceChildren(...layers.map((row) => el('tr', { data: { layer: String(row.layer) } },
    el('th', { scope: 'row' }, String(row.layer)),
    ...LAYER_LINES.map(([key]) => Object.assign(numCell(row[key]), { className: key })))));
  if (!state.probeLayersChart) state.probeLayersChart = createLines($('probe-layers-chart'), { yTitle: 'Spearman ×100', digits: 2 });
  state.probeLayersChart.update(layers.map((row) => row.layer),
    LAYER_LINES.map(([key, label, color]) => ({ label, color, data: layers.map((row) => row[key]) })));
}

/** Shows the finished probes of the last run (`state.probes`: kind → {result, split, seeds, load}). */
/** @param {PageState} state */
export function renderProbes(state) {
  const probes = state.probes || {};
  $('probes').hidden = !Object.keys(probes).length;
  for (const kind of PROBE_KINDS) {
    const probe = probes[kind];
    $(`probe-${kind}-box`).hidden = !probe;
    if (!probe) continue;
    if (kind === 'shuffle') renderShuffle(probe);
    else renderLayers(state, probe);
    $(`${kind}-cli`).textContent = `Same numbers on the command line: ${cliCommand(kind, probe.load, probe.split, probe.seeds)}`;
  }
}

/** "Download probe JSON": exactly the probe's result (the CLI's JSON), plus the run's timings. */
/** @param {PageState} state */
export function exportProbe(state, kind) {
  const probe = state.probes && state.probes[kind];
  if (!probe) return;
  const r = probe.result;
  const name = `sr-bench-probe-${kind}-${r.model}-${r.dtype}-${probe.split}`.replace(/[^A-Za-z0-9._-]/g, '_');
  download(`${name}.json`, 'application/json', `${JSON.stringify({ ...r, timings: probe.timings }, null, 2)}\n`);
}
