// @ts-check
// The playground's layer-by-layer view: the pair's cosine after each layer (layer 0 = the
// embedding output), A vs B's words shuffled, and the syntax-blind baseline as a flat line.
// The values (from Rust's layer_cosines) are also kept on the canvas's data-* for tests.

import { $ } from './ui.js';
import { createLines } from './charts.js';

/** @typedef {import('./state.js').PageState} PageState */

/** @param {import('../shared/protocol.js').ExplainResult} r */
/** @param {PageState} state */
export function renderLayers(state, r) {
  const canvas = $('layers-chart');
  canvas.dataset.pair = JSON.stringify(r.layers);
  canvas.dataset.shuffled = JSON.stringify(r.layers_shuffled);
  canvas.dataset.baseline = String(r.baseline.cosine);
  canvas.setAttribute('aria-label', `Cosine per layer: from ${r.layers[0].toFixed(3)} at the embedding output to ` +
    `${r.layers[r.layers.length - 1].toFixed(3)} after the last layer; with B shuffled ${r.layers_shuffled[r.layers_shuffled.length - 1].toFixed(3)}; ` +
    `baseline ${r.baseline.cosine.toFixed(3)}.`);
  $('layers-shuffled-b').textContent = r.shuffled_b;
  $('layers-seed').textContent = String(r.shuffle_seed);
  if (!state.layersChart) state.layersChart = createLines(canvas);
  state.layersChart.update(r.layers.map((_, i) => String(i)), [
    { label: 'A vs B', color: '#0b4ea2', data: r.layers },
    { label: 'A vs B shuffled', color: '#d94e00', data: r.layers_shuffled },
    { label: 'syntax-blind baseline', color: '#4a4a4a', data: r.layers.map(() => r.baseline.cosine), dashed: true },
  ]);
}
