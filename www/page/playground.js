// @ts-check
// The playground: two texts, the model's cosine and the syntax-blind baseline's, live as you type.

import { ERR, REQ } from '../shared/protocol.js';
import { $, nf0, setMessage } from './ui.js';
import { updateVerdict } from './examples.js';
import { scheduleUrlWrite } from './url-state.js';
import { renderBackend } from './backend.js';
import { clearExplain, updateExplain } from './explain.js';

/** @typedef {import('./state.js').PageState} PageState */

function setScore(outId, meterId, value) {
  const out = $(outId);
  const meter = $(meterId);
  if (Number.isFinite(value)) {
    out.textContent = value.toFixed(3);
    out.dataset.value = String(value);
    meter.value = value;
  } else {
    out.textContent = '—';
    delete out.dataset.value;
    meter.value = 0;
  }
}

function setScores(cosine, staticCosine, scoreState) {
  setScore('score-model', 'meter-model', cosine);
  setScore('score-static', 'meter-static', staticCosine);
  setScoreState(scoreState);
}

function setScoreState(s) {
  $('score-model').dataset.state = s;
  $('score-static').dataset.state = s;
}

/** A note when a text is longer than the model reads (token counts from the engine when it has them). */
/** @param {PageState} state */
function longTextNote(state, a, b, tokens) {
  const max = state.loaded ? state.loaded.info.max_seq_length : 256;
  const notes = [];
  [['Sentence A', a], ['Sentence B', b]].forEach(([name, t], i) => {
    const cut = tokens ? tokens[i] >= max : t.length > max * 4; // ~4 characters per word piece
    if (cut) {
      notes.push(`${name} has ${nf0.format(t.length)} characters: the model reads only its first ${max} tokens (word pieces), the rest is cut off.`);
    }
  });
  return notes.join(' ');
}

/** A text changed: the score is recomputed after `delay` ms without further typing. */
/** @param {PageState} state */
export function onTextInput(state, delay = 150) {
  clearTimeout(state.playTimer);
  state.playSeq++;
  setScoreState('pending');
  updateVerdict($('text-a').value, $('text-b').value);
  scheduleUrlWrite(state);
  state.playTimer = setTimeout(() => updatePlayground(state), delay);
}

/** @param {PageState} state */
export async function updatePlayground(state) {
  const a = $('text-a').value;
  const b = $('text-b').value;
  const seq = ++state.playSeq;
  const msg = $('play-msg');
  if (!a.trim() || !b.trim()) {
    clearExplain(state);
    setScores(NaN, NaN, 'empty');
    setMessage(msg, !a.trim() && !b.trim() ? 'Type a sentence in both boxes, or pick an example.'
      : `Type a sentence in box ${!a.trim() ? 'A' : 'B'} too.`, 'warning');
    return;
  }
  if (!state.loaded) {
    clearExplain(state);
    setScores(NaN, NaN, 'no-model');
    setMessage(msg, state.loadingKey ? 'The model is loading: the score appears when it is ready.'
      : 'Load a model (above) to see the similarity.', 'info');
    return;
  }
  setScoreState('pending');
  try {
    const r = await state.engine.call(REQ.SIMILARITY, { a, b });
    if (seq !== state.playSeq) return; // a newer edit is on its way
    if (!Number.isFinite(r.cosine) || !Number.isFinite(r.static_cosine)) {
      setScores(r.cosine, r.static_cosine, 'error');
      setMessage(msg, 'The model returned no number for this pair (the text may have no tokens).', 'error');
      return;
    }
    setScores(r.cosine, r.static_cosine, 'ready');
    if (r.backend_status) renderBackend(r.backend_status);
    $('score-model').dataset.a = String(a.length);
    const note = longTextNote(state, a, b, r.tokens);
    setMessage(msg, note || `Computed in ${r.ms < 1 ? '<1' : Math.round(r.ms)} ms` +
      (r.tokens ? ` (${r.tokens[0]} and ${r.tokens[1]} tokens).` : '.'), note ? 'warning' : 'info');
    // The explainers only after the score: they never delay it.
    updateExplain(state, a, b, () => seq === state.playSeq);
  } catch (err) {
    if (seq !== state.playSeq) return;
    setScores(NaN, NaN, 'error');
    setMessage(msg, err.code === ERR.NO_MODEL ? 'Load a model (above) to see the similarity.' : `Could not score this pair: ${err.message}`, 'error');
  }
}
