// @ts-check
// The benchmark panel's "your own pairs": a CSV or TSV file from this computer, kept as a File
// handle for the next run (the engine reads it; it never leaves the tab). Rust parses it and
// names the line and column of anything wrong (the run's message says so).

import { MAX_PAIRS_BYTES } from '../shared/protocol.js';
import { $, formatBytes, setMessage } from './ui.js';

/** @typedef {import('./state.js').PageState} PageState */

/** The status line's first words (its hint), kept to be put back. */
const HINT = [...$('own-pairs-status').childNodes].map((n) => n.cloneNode(true));

/** @param {PageState} state */
function clear(state) {
  state.ownPairs = null;
  $('own-pairs-file').value = '';
  $('own-pairs-clear').hidden = true;
  $('own-pairs-status').replaceChildren(...HINT.map((n) => n.cloneNode(true)));
  delete $('own-pairs-status').dataset.level;
}

/** @param {PageState} state */
export function setupOwnPairs(state) {
  $('own-pairs-file').addEventListener('change', () => {
    const file = $('own-pairs-file').files[0];
    if (!file) {
      clear(state);
      return;
    }
    $('own-pairs-clear').hidden = false;
    if (file.size > MAX_PAIRS_BYTES) {
      state.ownPairs = null;
      setMessage($('own-pairs-status'), `'${file.name}' is ${formatBytes(file.size)}; a pairs file may be at most ` +
        `${MAX_PAIRS_BYTES >> 20} MB (10,000 rows). Choose a smaller file.`, 'error');
      return;
    }
    state.ownPairs = file;
    setMessage($('own-pairs-status'), `'${file.name}' (${formatBytes(file.size)}) is scored alone when you press ` +
      'Run: every row, whatever the split; the data choices above wait until you go back to them.');
  });
  $('own-pairs-clear').addEventListener('click', () => clear(state));
}
