// @ts-check
// Shareable state in the URL hash: #a=…&b=…&model=NAME&dtype=q8_0&backend=cpu|webgpu|auto[&view=projector]
// [&shuffle=SEED: B is A's words shuffled with SEED (word-order.js), recomputed when the link opens]
// [&quiz=SEED&qset=sr|czech&qn=N: the quiz open on the questions SEED draws (quiz.js)]
// [&class=CODE: that quiz as a class's, answers sent to `sr-bench serve --class` (class.js)]

import { $, nf0 } from './ui.js';
import { selectedEntry } from './state.js';

/** @typedef {import('./state.js').PageState} PageState */

export const URL_TEXT_LIMIT = 2000;

export function readUrlState() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  return {
    a: p.get('a'), b: p.get('b'),
    model: p.get('model'), dtype: p.get('dtype'),
    backend: p.get('backend'), view: p.get('view'),
    shuffle: p.get('shuffle'),
    quiz: p.get('quiz'), qset: p.get('qset'), qn: p.get('qn'), class: p.get('class'),
  };
}

/** The page's state as a link's hash. @param {PageState} state */
function hashOf(state) {
  const p = new URLSearchParams();
  const a = $('text-a').value;
  const b = $('text-b').value;
  // A quiz's link is for a class to open: its questions and the model, not the playground's pair.
  if (a && a.length <= URL_TEXT_LIMIT && !state.quiz) p.set('a', a);
  if (b && b.length <= URL_TEXT_LIMIT && !state.quiz) p.set('b', b);
  const entry = selectedEntry(state);
  if (entry) { p.set('model', entry.name); p.set('dtype', entry.dtype); }
  p.set('backend', state.backend);
  if (state.shuffleSeed !== null) p.set('shuffle', String(state.shuffleSeed));
  if (document.documentElement.classList.contains('projector')) p.set('view', 'projector');
  if (state.quiz) {
    p.set('quiz', String(state.quiz.seed));
    p.set('qset', state.quiz.set);
    p.set('qn', String(state.quiz.questions));
    if (state.klass) p.set('class', state.klass.code);
  }
  return `#${p.toString()}`;
}

/** The link to the page as it is now (what "Copy a link" copies). @param {PageState} state */
export function shareUrl(state) {
  return `${location.origin}${location.pathname}${hashOf(state)}`;
}

/** @param {PageState} state */
export function writeUrlState(state) {
  const hash = hashOf(state);
  if (hash !== location.hash) history.replaceState(null, '', hash);
}

/** @param {PageState} state */
export function scheduleUrlWrite(state) {
  clearTimeout(state.urlTimer);
  state.urlTimer = setTimeout(() => writeUrlState(state), 300);
}

/** The texts of a link into the boxes (a missing one leaves its box alone). */
export function applyTextsFromUrl(u) {
  if (u.a !== null) $('text-a').value = u.a;
  if (u.b !== null) $('text-b').value = u.b;
}

/** "Copy a link to this pair": to the clipboard, else shown for copying by hand. */
/** @param {PageState} state */
export async function copyLink(state) {
  writeUrlState(state);
  const input = $('share-url');
  const note = [$('text-a').value, $('text-b').value].some((t) => t.length > URL_TEXT_LIMIT)
    ? ` (texts over ${nf0.format(URL_TEXT_LIMIT)} characters are left out)` : '';
  try {
    await navigator.clipboard.writeText(location.href);
    input.hidden = true;
    $('share-msg').textContent = `Link copied${note}.`;
  } catch {
    input.hidden = false;
    input.value = location.href;
    input.select();
    $('share-msg').textContent = `Copy this link${note}:`;
  }
}
