// @ts-check
// Files made by `sr-bench train` say how they were made (ModelInfo.trained, from their
// srbench.train.* metadata): the data, epochs, seed and pairs. The local-file panel shows it
// and the lesson's benchmark step names it, beside the released model's figures when this
// tab has run that model too.

import { nf0 } from './ui.js';

/** @typedef {import('../shared/protocol.js').ModelInfo} ModelInfo */

/** What each of `sr-bench train --train`'s data sets is, in the paper's terms. */
const DATA_LABELS = {
  stsb: 'STS-B train (the control)',
  'stsb+sr': 'STS-B train plus SR-style pairs (the paper’s remedy, §4.2)',
  'stsb-shuffled': 'STS-B train with sentence 2’s words shuffled (§4.1)',
};

/** One line for a trained file's recipe, or null for a released model.
 * @param {ModelInfo} info */
export function trainingText(info) {
  const t = info.trained;
  if (!t) return null;
  const data = DATA_LABELS[t.data] || `the file ${t.data}`;
  const kept = t.kept_epoch === 0 ? 'no epoch beat the base model, so its weights were kept'
    : `epoch ${t.kept_epoch} kept, best on STS-B dev`;
  return `fine-tuned on ${data}: ${nf0.format(t.pairs)} pairs, ${t.epochs} epoch${t.epochs === 1 ? '' : 's'}, ` +
    `seed ${t.seed}, ${kept}`;
}

/** The model a trained file started from: its name less the `+data` the trainer appends.
 * @param {ModelInfo} info */
export function baseModelName(info) {
  const suffix = info.trained ? `+${info.trained.data}` : '';
  return suffix && info.name.endsWith(suffix) ? info.name.slice(0, -suffix.length) : info.name;
}
