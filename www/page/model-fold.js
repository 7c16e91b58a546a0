// @ts-check
// The model panel folds to one line on every screen — what is loaded (model, precision,
// backend, state) or how far its download is — so that the pair, its score and the verdict
// are in the first screen; "Change model…" opens the rest (the list, the backend, a file of
// the visitor's own, a URL, the prefix). A visitor who opens it finds it open on their next
// visit (kept in localStorage). The panel opens by itself when it needs the visitor: a failed
// load, a file dropped on it, or a download that waits for their press because the browser
// asks to save data.

import { $ } from './ui.js';

/** Where the visitor's own choice (open or folded) is kept between visits. */
const KEY = 'sr-bench.model-panel';

/** Folds (or opens) the panel. */
export function setFolded(folded) {
  $('engine').dataset.folded = String(folded);
  const toggle = $('engine-toggle');
  toggle.setAttribute('aria-expanded', String(!folded));
  /** @type {HTMLElement} */ (toggle.querySelector('.engine-toggle-text')).textContent = folded ? 'Change model…' : 'Fold this panel';
  /** @type {HTMLElement} */ (toggle.querySelector('.engine-toggle-mark')).textContent = folded ? '▾' : '▴';
}

/** Folded from the start, unless the visitor left it open last time. */
export function setupModelFold() {
  setFolded(remembered() !== 'open');
  $('engine-toggle').addEventListener('click', () => {
    const folded = $('engine').dataset.folded !== 'true';
    setFolded(folded);
    remember(folded ? 'folded' : 'open');
  });
}

/** The folded line's text (the model, its progress, or what went wrong). */
export function setFoldSummary(text) {
  $('engine-summary').textContent = text;
}

function remembered() {
  try { return localStorage.getItem(KEY); } catch { return null; } // storage off: fold
}

function remember(value) {
  try { localStorage.setItem(KEY, value); } catch { /* storage off: this visit only */ }
}
