// @ts-check
// Word-order probes on sentence B: "Shuffle words" (B = A's words in a seeded random order; the
// seed shows and goes into the share link), "Reverse", "Swap two words" (click two of A's words)
// and "Shuffle 20×" (the model's cosine of A with twenty seeded shuffles of itself, as a strip
// beside the pair's score). The word edits and scores are Rust's (worker requests `word-order`
// and `shuffle-scores`); this module only asks and draws.

import { REQ } from '../shared/protocol.js';
import { $, el, setMessage } from './ui.js';

/** @typedef {import('./state.js').PageState} PageState */

/** The strip's seeds: fixed, so the same A always gives the same twenty shuffles. */
export const STRIP_SEEDS = Object.freeze(Array.from({ length: 20 }, (_, i) => i));

/** A fresh seed for "Shuffle words": any non-negative safe integer works; 32 bits read well. */
const newSeed = () => crypto.getRandomValues(new Uint32Array(1))[0];

/** A seed from a link: a non-negative safe integer, else null. */
export function parseSeed(s) {
  if (s === null || !/^\d{1,16}$/.test(s)) return null;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}

/** @param {PageState} state */
function showSeed(state) {
  const has = state.shuffleSeed !== null;
  $('shuffle-seed').hidden = !has;
  $('shuffle-seed-value').textContent = has ? String(state.shuffleSeed) : '';
}

/** B was typed (or replaced): it is no longer a shuffle of A, so its seed is dropped. */
/** @param {PageState} state */
export function forgetShuffleSeed(state) {
  if (state.shuffleSeed === null) return;
  state.shuffleSeed = null;
  showSeed(state);
}

/** B = an edit of A that is not a shuffle (reverse, swap). */
/** @param {PageState} state */
function replaceB(state, setB, text) {
  forgetShuffleSeed(state);
  setB(text);
}

/** @param {PageState} state */
async function wordEdit(state, request) {
  try {
    return (await state.engine.call(REQ.WORD_ORDER, request)).text;
  } catch (err) {
    setMessage($('word-order-msg'), `Could not change the word order: ${err.message}`, 'error');
    return null;
  }
}

/** B = A's words shuffled with `seed` (a button press, or a link's `shuffle=SEED`). */
/** @param {PageState} state */
export async function applyShuffle(state, seed, setB) {
  const text = await wordEdit(state, { op: 'shuffle', text: $('text-a').value, seed });
  if (text === null) return;
  setB(text);
  state.shuffleSeed = seed;
  showSeed(state);
}

/** A's words as buttons: the first click picks a word, the second swaps the two into B. */
/** @param {PageState} state */
function renderChips(state, setB) {
  // Display only: the words as Rust's swap_words counts them (split on whitespace).
  const words = $('text-a').value.split(/\s+/).filter(Boolean);
  const chips = words.map((w, i) => {
    const chip = el('button', { type: 'button', class: 'chip', 'aria-pressed': String(state.swapPick === i), data: { i: String(i) } }, w);
    chip.addEventListener('click', async () => {
      if (state.swapPick === null || state.swapPick === i) {
        state.swapPick = state.swapPick === i ? null : i;
        renderChips(state, setB);
        return;
      }
      const first = state.swapPick;
      state.swapPick = null;
      renderChips(state, setB);
      const text = await wordEdit(state, { op: 'swap', text: $('text-a').value, i: first, j: i });
      if (text !== null) replaceB(state, setB, text);
    });
    return chip;
  });
  const hint = state.swapPick === null ? 'Click two words of A to swap them into B:' : `Now the word to swap with “${words[state.swapPick]}”:`;
  $('word-chips').replaceChildren(el('span', { class: 'muted' }, hint), ...chips);
}

/** The strip: twenty shuffles' cosines against A, their mean, and the pair's own score. */
function renderStrip(r, pairScore) {
  const values = r.cosines;
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  const lo = Math.floor(Math.min(...values, Number.isFinite(pairScore) ? pairScore : 1) * 10) / 10;
  const at = (v) => `${((v - lo) / (1 - lo || 1)) * 100}%`;
  const dot = (cls, v, title) => {
    const d = el('span', { class: cls, title, data: { value: String(v) } });
    d.style.left = at(v);
    return d;
  };
  const track = el('div', { class: 'strip-track', role: 'img',
    'aria-label': `${values.length} shuffles of A score ${Math.min(...values).toFixed(3)} to ${Math.max(...values).toFixed(3)} against A, mean ${mean.toFixed(3)}` },
  ...values.map((v, k) => dot('strip-dot', v, `seed ${STRIP_SEEDS[k]}: “${r.texts[k]}” → ${v.toFixed(4)}`)),
  dot('strip-mean', mean, `mean of the ${values.length} shuffles: ${mean.toFixed(4)}`));
  if (Number.isFinite(pairScore)) track.append(dot('strip-pair', pairScore, `this pair (A vs B): ${pairScore.toFixed(4)}`));
  const strip = $('shuffle-strip');
  strip.dataset.mean = String(mean);
  strip.replaceChildren(
    el('div', { class: 'strip-axis muted' }, el('span', {}, lo.toFixed(1)), el('span', {}, '1.0')),
    track,
    el('p', { class: 'strip-legend' },
      el('span', { class: 'key key-dot' }), ` ${values.length} word salads of A vs A (mean `,
      el('strong', { class: 'strip-mean-value' }, mean.toFixed(3)), ')  ',
      el('span', { class: 'key key-pair' }), ` this pair: ${Number.isFinite(pairScore) ? pairScore.toFixed(3) : '—'}`),
  );
  strip.hidden = false;
}

/** @param {PageState} state */
async function shuffle20(state) {
  const a = $('text-a').value;
  const button = $('shuffle-20');
  button.disabled = true;
  setMessage($('word-order-msg'), `Scoring ${STRIP_SEEDS.length} shuffles of A…`);
  try {
    const r = await state.engine.call(REQ.SHUFFLE_SCORES, { text: a, seeds: STRIP_SEEDS });
    if ($('text-a').value !== a) return; // A changed meanwhile: the strip would be for an old A
    state.stripFor = a;
    renderStrip(r, Number($('score-model').dataset.value));
    setMessage($('word-order-msg'), '');
  } catch (err) {
    setMessage($('word-order-msg'), `Could not score the shuffles: ${err.message}`, 'error');
  } finally {
    button.disabled = false;
  }
}

/** The texts changed: the chips follow A, and a strip made for another A goes away. */
/** @param {PageState} state */
export function refreshWordOrder(state, setB) {
  state.swapPick = null; // a half-made pick may point past A's new words
  if (!$('word-chips').hidden) renderChips(state, setB);
  if (state.stripFor !== null && state.stripFor !== $('text-a').value) {
    state.stripFor = null;
    $('shuffle-strip').hidden = true;
    $('shuffle-strip').replaceChildren();
  }
}

/** `setB(text)`: puts a text into box B and rescores (main.js). */
/** @param {PageState} state */
export function setupWordOrder(state, setB) {
  $('shuffle-b').addEventListener('click', () => applyShuffle(state, newSeed(), setB));
  $('reverse-b').addEventListener('click', async () => {
    const text = await wordEdit(state, { op: 'reverse', text: $('text-a').value });
    if (text !== null) replaceB(state, setB, text);
  });
  $('swap-b').addEventListener('click', () => {
    const open = $('word-chips').hidden;
    $('word-chips').hidden = !open;
    $('swap-b').setAttribute('aria-expanded', String(open));
    state.swapPick = null;
    if (open) renderChips(state, setB);
  });
  $('shuffle-20').addEventListener('click', () => shuffle20(state));
  showSeed(state);
}
