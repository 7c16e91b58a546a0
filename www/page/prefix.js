// @ts-check
// The model's text prefix (e5's "query: ", an LLM embedder's instruction): what the file says,
// shown under the model and changeable there. Rust puts it before every text the model reads
// (never the baseline's). The field is one line, so a newline (Qwen3-Embedding's
// "Instruct: …\nQuery: ") is written and typed as \n.

import { REQ } from '../shared/protocol.js';
import { $, setMessage } from './ui.js';
import { updatePlayground } from './playground.js';

/** @typedef {import('./state.js').PageState} PageState */

/** How a prefix reads in a sentence: quoted with its spaces visible, or "none". */
export function prefixLabel(prefix) {
  return prefix ? `“${prefixToField(prefix)}”` : 'none';
}

/** The field's spelling of a prefix: newlines as \n. @param {string} prefix */
function prefixToField(prefix) {
  return prefix.replace(/\n/g, '\\n');
}

/** The prefix a field's text means: \n as a newline. @param {string} text */
function fieldToPrefix(text) {
  return text.replace(/\\n/g, '\n');
}

/** After a load: the field holds the model's prefix, the hint says whose it is.
 * @param {PageState} state */
export function renderPrefix(state) {
  const loaded = state.loaded;
  $('prefix-line').hidden = !loaded;
  $('prefix-hint').hidden = !loaded;
  if (!loaded) return;
  $('model-prefix').value = prefixToField(loaded.info.prefix);
  // The similarity instruction the architecture's model card gives where files carry none
  // (llama.cpp's GGUFs keep no prompts): the engine's architecture table says it.
  $('prefix-card').hidden = !loaded.info.card_prefix;
  describe(state);
}

/** @param {PageState} state */
function describe(state, extra = '') {
  const { info, filePrefix } = state.loaded;
  const whose = info.prefix === filePrefix ? 'the file’s' : `yours; the file’s is ${prefixLabel(filePrefix)}`;
  setMessage($('prefix-hint'),
    `Every text is read as prefix + text. Prefix: ${prefixLabel(info.prefix)} (${whose}). ` +
    'Models trained with one (multilingual-e5: “query: ” before both texts of a pair; Qwen3-Embedding: ' +
    '“Instruct: <task>\\nQuery:”, \\n for a new line; EmbeddingGemma: “task: sentence similarity | query: ”) ' +
    'score best with it; ' +
    'the syntax-blind baseline never sees it, and benchmark reports record it.' + extra);
}

/** @param {PageState} state @param {string} prefix */
async function apply(state, prefix) {
  if (!state.loaded) return;
  try {
    const { info } = await state.engine.call(REQ.SET_PREFIX, { prefix });
    state.loaded.info = info;
    $('model-prefix').value = prefixToField(info.prefix);
    describe(state);
    updatePlayground(state);
  } catch (err) {
    setMessage($('prefix-hint'), `The prefix was not changed: ${err.message}`, 'error');
  }
}

/** @param {PageState} state */
export function setupPrefix(state) {
  $('prefix-apply').addEventListener('click', () => apply(state, fieldToPrefix($('model-prefix').value)));
  $('model-prefix').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') apply(state, fieldToPrefix($('model-prefix').value));
  });
  $('prefix-reset').addEventListener('click', () => apply(state, state.loaded ? state.loaded.filePrefix : ''));
  $('prefix-card').addEventListener('click', () => {
    const card = state.loaded && state.loaded.info.card_prefix;
    if (card) apply(state, card);
  });
}
