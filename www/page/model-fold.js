// @ts-check
// On a phone the model panel folds to one line (what is loaded, or how far its download is)
// so that the two sentences and the score fit the first screen; a tap reopens it. Wider
// screens never fold it (style.css shows the toggle only in the narrow layout). The panel
// opens by itself when it needs the visitor: a failed load, or a download that waits for
// their press because the browser asks to save data.

import { $ } from './ui.js';

/** The narrow layout of style.css. */
const NARROW = '(max-width: 720px)';

/** Folds (or opens) the panel; `folded` only shows in the narrow layout. */
export function setFolded(folded) {
  $('engine').dataset.folded = String(folded);
  const toggle = $('engine-toggle');
  toggle.setAttribute('aria-expanded', String(!folded));
  /** @type {HTMLElement} */ (toggle.querySelector('.engine-toggle-verb')).textContent = folded ? ', change the model' : ', fold this panel';
  /** @type {HTMLElement} */ (toggle.querySelector('.engine-toggle-mark')).textContent = folded ? '▾' : '▴';
}

/** Folded from the start on a phone. */
export function setupModelFold() {
  setFolded(window.matchMedia(NARROW).matches);
  $('engine-toggle').addEventListener('click', () => setFolded($('engine').dataset.folded !== 'true'));
}

/** The folded line's text (the model, its progress, or what went wrong). */
export function setFoldSummary(text) {
  $('engine-summary').textContent = text;
}
