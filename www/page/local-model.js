// @ts-check
// Step 1, "Use a model file from this computer": a file picker and drag and drop onto the model
// panel, for .gguf files (ours or llama.cpp's BERT embedding files). The File goes to the engine
// worker (a handle, not an upload: nothing is sent anywhere), which reads its header with Rust's
// `inspect_model` and its sha256 with WebCrypto. The page shows the model's info, checks its
// memory against the page's budget (shared/pool-size.js's `memoryBudget`) and only then offers to load it,
// with the chosen max sequence length.

import { REQ } from '../shared/protocol.js';
import { memoryBudget } from '../shared/pool-size.js';
import { $, el, formatBytes, formatDuration, setMessage } from './ui.js';
import { loadModel } from './model-panel.js';
import { keepIfAsked, setupKept } from './kept-file.js';
import { setFolded } from './model-fold.js';
import { trainingText } from './trained.js';

/** @typedef {import('./state.js').PageState} PageState */

/** Field changes wait this long before the file is inspected again. */
const REINSPECT_DELAY_MS = 300;

/** The rows of the info table: key (the row's `data-field`), label, the value (its
 * `data-value`) and, where it differs, how it is shown. */
/** @type {Array<[string, string, (r: any) => unknown, ((r: any) => string)?]>} */
const INFO_ROWS = [
  ['name', 'name', (r) => r.info.name],
  ['architecture', 'architecture', (r) => r.info.architecture],
  ['dtype', 'weights', (r) => r.info.dtype,
    (r) => (r.info.stored_dtype ? `${r.info.stored_dtype}, converted to ${r.info.dtype} when it loads` : r.info.dtype)],
  ['dim', 'embedding size', (r) => r.info.dim],
  ['num_layers', 'layers', (r) => r.info.num_layers],
  ['vocab_size', 'vocabulary', (r) => r.info.vocab_size],
  ['pooling', 'pooling', (r) => r.info.pooling],
  ['max_seq_length', 'max sequence length (file)', (r) => r.file_max_seq_length],
  ['source', 'written by', (r) => r.info.source || '—'],
  ['trained', 'training', (r) => r.info.trained?.data || '', (r) => trainingText(r.info) || '—'],
  ['bytes', 'size', (r) => r.bytes, (r) => `${formatBytes(r.bytes)} (${r.bytes} bytes)`],
  ['worker_bytes', 'memory needed', (r) => r.worker_bytes, (r) => formatBytes(r.worker_bytes)],
  ['sha256', 'sha256', (r) => r.sha256 || '', (r) => r.sha256 || 'not computed (the file is not read whole)'],
];

const isGguf = (file) => /\.gguf$/i.test(file.name);

function budgetText(budget) {
  const gb = typeof navigator !== 'undefined' ? navigator.deviceMemory : undefined; // GB (Chromium only)
  return gb ? `${formatBytes(budget)} (a quarter of its ${gb} GB of memory, at most 2 GB)` : `${formatBytes(budget)} (the page's cap)`;
}

/** The max sequence length field: null when empty (the file's own), NaN when not a positive integer. */
function fieldMaxSeq() {
  const raw = $('local-max-seq').value.trim();
  if (!raw) return null;
  const n = Number(raw);
  return Number.isInteger(n) && n > 0 ? n : NaN;
}

export function setLocalStatus(text, level, data = {}) {
  const node = $('local-status');
  setMessage(node, text, level);
  for (const k of ['code', 'needs', 'allows']) delete node.dataset[k];
  Object.assign(node.dataset, data);
}

function renderInfo(r) {
  const body = $('local-info-body');
  body.replaceChildren(...INFO_ROWS.map(([key, label, value, show = value]) =>
    el('tr', { data: { field: key, value: String(value(r)) } },
      el('th', { scope: 'row' }, label), el('td', { class: key === 'sha256' ? 'hash' : '' }, String(show(r))))));
  $('local-info').hidden = false;
  const hint = $('local-max-seq-hint');
  hint.textContent = /llama\.cpp/.test(r.info.source || '')
    ? `This is a llama.cpp file: it records the size of its position table (${r.file_max_seq_length}), not the length the model was trained to read. ` +
      'sentence-transformers truncates all-MiniLM-L6-v2 at 256 tokens, for example: enter 256 to match it.'
    : `Texts are cut at this many tokens (word pieces). The file says ${r.file_max_seq_length}.`;
}

/** Shows whether the inspected file fits this device; returns true when it may be loaded. */
/** @param {PageState} state */
function showFit(state, r, budget) {
  const fits = r.worker_bytes <= budget;
  if (!fits) {
    setLocalStatus(`${r.file_name} is too large for this device: it needs ${formatBytes(r.worker_bytes)} of memory ` +
      `(its weights as held in WebAssembly plus one batch of ${r.info.max_seq_length}-token texts), this device allows ${budgetText(budget)}. ` +
      'Try a smaller dtype (q8_0 or q4_0) or a shorter max sequence length.', 'error',
    { code: 'too-large', needs: String(r.worker_bytes), allows: String(budget) });
  } else {
    setLocalStatus(`${r.file_name}: ${r.info.name} · ${r.info.dtype}, inspected in ${formatDuration(r.inspect_ms + r.hash_ms)}. ` +
      `It needs ${formatBytes(r.worker_bytes)} of memory; this device allows ${budgetText(budget)}. Press “Load this file”.`, 'info');
  }
  $('local-load').disabled = !fits || !state.localFile?.sha256;
  return fits;
}

/**
 * Inspects the picked file with the field's max sequence length (the first time also its
 * sha256). Returns the inspection, or null (shown as a message) when it cannot be used.
 */
/** @param {PageState} state */
async function inspect(state) {
  const picked = state.localFile;
  const maxSeq = fieldMaxSeq();
  if (Number.isNaN(maxSeq)) {
    setLocalStatus('The max sequence length must be a whole number of tokens, 1 or more (empty: the file’s own).', 'error');
    $('local-load').disabled = true;
    return null;
  }
  const budget = memoryBudget();
  /** The engine's answer, with the file's own max sequence length kept by the page.
   * @type {import('../shared/protocol.js').InspectFileResult & {file_max_seq_length?: number}} */
  let r;
  try {
    r = await state.engine.call(REQ.INSPECT_FILE, {
      file: picked.file, max_seq_length: maxSeq ?? undefined, budget_bytes: budget, skip_hash: !!picked.sha256,
    });
  } catch (err) {
    if (state.localFile !== picked) return null;
    setLocalStatus(`${picked.file.name} cannot be used: ${err.message}`, 'error', { code: err.code || '' });
    $('local-load').disabled = true;
    return null;
  }
  if (state.localFile !== picked) return null; // another file was picked meanwhile
  if (r.sha256) picked.sha256 = r.sha256;
  r.sha256 = picked.sha256;
  if (!picked.inspected) r.file_max_seq_length = r.info.max_seq_length;
  else r.file_max_seq_length = picked.inspected.file_max_seq_length;
  picked.inspected = r;
  renderInfo(r);
  if (maxSeq === null) $('local-max-seq').value = String(r.file_max_seq_length);
  return showFit(state, r, budget) ? r : null;
}

/** A file was picked or dropped. */
/** @param {PageState} state */
export async function pickFile(state, file) {
  if (!file) return;
  if (!isGguf(file)) {
    setLocalStatus(`${file.name} is not a .gguf file. Pick a GGUF model file (ours or one made by llama.cpp’s converter).`, 'error', { code: 'not-gguf' });
    return;
  }
  setFolded(false); // the file's figures and its Load button are in the panel
  state.localFile = { file, inspected: null, sha256: null };
  $('local-info').hidden = true;
  $('local-max-seq').value = '';
  $('local-load').disabled = true;
  setLocalStatus(`Reading ${file.name} (${formatBytes(file.size)}) in this tab: its header, then its sha256…`, 'info');
  await inspect(state);
}

/** "Load this file": inspect again with the field's value (memory check), then load. */
/** @param {PageState} state */
export async function loadLocalFile(state) {
  const picked = state.localFile;
  if (!picked) return;
  const r = await inspect(state);
  if (!r || state.localFile !== picked) return;
  await loadModel(state, null, { file: picked.file, sha256: picked.sha256, max_seq_length: fieldMaxSeq() ?? undefined });
  const e = state.loaded && state.loaded.entry;
  if (e && e.local && e.sha256 === picked.sha256) await keepIfAsked(picked.file, picked.sha256);
}

/** @param {PageState} state */
export function setupLocalModel(state) {
  setupKept((file) => pickFile(state, file));
  $('local-file').addEventListener('change', (e) => {
    const input = /** @type {HTMLInputElement} */ (e.target);
    const file = input.files && input.files[0];
    input.value = ''; // picking the same file again is a new pick
    pickFile(state, file);
  });
  $('local-load').addEventListener('click', () => loadLocalFile(state));
  let timer = 0;
  $('local-max-seq').addEventListener('input', () => {
    clearTimeout(timer);
    if (state.localFile) timer = setTimeout(() => inspect(state), REINSPECT_DELAY_MS);
  });
  // Drag and drop anywhere on the model panel.
  const zone = $('engine');
  const over = (e) => {
    if (!e.dataTransfer || ![...e.dataTransfer.types].includes('Files')) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
    zone.classList.add('dragging');
  };
  zone.addEventListener('dragenter', over);
  zone.addEventListener('dragover', over);
  zone.addEventListener('dragleave', (e) => { if (!zone.contains(/** @type {Node|null} */ (e.relatedTarget))) zone.classList.remove('dragging'); });
  zone.addEventListener('drop', (e) => {
    zone.classList.remove('dragging');
    const files = e.dataTransfer ? [...e.dataTransfer.files] : [];
    if (!files.length) return;
    e.preventDefault();
    pickFile(state, files[0]);
  });
  // A file dropped beside the panel must not make the browser leave the page to show it.
  for (const type of ['dragover', 'drop']) window.addEventListener(type, (e) => e.preventDefault());
}
