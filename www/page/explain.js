// @ts-check
// "Why this score?": after each similarity answer, the pair's token-pair maps (model and
// syntax-blind baseline, heatmap.js) and its layer-by-layer cosines (layers-chart.js). Rust
// computes all of it (the worker's `explain` request); this module only asks and draws.

import { REQ } from '../shared/protocol.js';
import { $, setMessage } from './ui.js';
import { renderHeatMap } from './heatmap.js';
import { renderLayers } from './layers-chart.js';

/** @typedef {import('./state.js').PageState} PageState */

/** Draws both maps from the last answer (the word toggle redraws without asking the worker). */
/** @param {PageState} state */
export function renderMaps(state) {
  const r = state.explained;
  if (!r) return;
  const words = $('explain-words').checked;
  const kind = r.model.kind === 'token_cosine' ? 'token-to-token cosines' : 'token-pair contributions';
  renderHeatMap($('heatmap-model'), r.model, { title: `Model: ${kind}`, words });
  renderHeatMap($('heatmap-static'), r.baseline, { title: 'Syntax-blind baseline: token-pair contributions', words });
}

/** After a score, the explanation waits this long for the typing to pause: the worker computes it
 * between scores, so a long pair's maps must not hold up the next keystroke's score. */
const EXPLAIN_DELAY_MS = 250;

/** Asks for the pair's explanation; `isCurrent()` false means a newer edit came meanwhile. */
/** @param {PageState} state */
export async function updateExplain(state, a, b, isCurrent) {
  const box = $('explain');
  box.dataset.state = 'pending';
  box.setAttribute('aria-busy', 'true');
  await new Promise((resolve) => { setTimeout(resolve, EXPLAIN_DELAY_MS); });
  if (!isCurrent()) return;
  try {
    const r = await state.engine.call(REQ.EXPLAIN, { a, b, shuffle_seed: state.shuffleSeed ?? undefined });
    if (!isCurrent()) return;
    state.explained = r;
    renderMaps(state);
    renderLayers(state, r);
    box.dataset.state = 'ready';
    box.removeAttribute('aria-busy');
    setMessage($('explain-msg'), `Explained in ${Math.max(1, Math.round(r.ms))} ms.`);
  } catch (err) {
    if (!isCurrent()) return;
    box.dataset.state = 'error';
    box.removeAttribute('aria-busy');
    setMessage($('explain-msg'), `Could not explain this pair: ${err.message}`, 'error');
  }
}

/** No pair to explain (empty box, no model): the old maps would mislead. */
/** @param {PageState} state */
export function clearExplain(state) {
  state.explained = null;
  $('explain').dataset.state = 'idle';
  $('explain').removeAttribute('aria-busy');
  $('heatmap-model').replaceChildren();
  $('heatmap-static').replaceChildren();
  setMessage($('explain-msg'), '');
}
