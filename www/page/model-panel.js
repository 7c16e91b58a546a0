// @ts-check
// Step 1, the model: the picker (from models/manifest.json), loading with byte progress, and
// what is loaded where.

import { ERR, REQ } from '../shared/protocol.js';
import { isModelCached } from '../shared/model-cache.js';
import { $, formatBytes, formatDuration, setMessage } from './ui.js';
import { BASE_URL, modelKey, selectedEntry } from './state.js';
import { renderBackend } from './backend.js';
import { updatePlayground } from './playground.js';
import { restartIfEngineFailed } from './engine.js';
import { renderPrefix } from './prefix.js';
import { setFoldSummary, setFolded } from './model-fold.js';

/** @typedef {import('./state.js').PageState} PageState */

const PHASE_TEXT = {
  cache: 'Reading from the browser cache',
  download: 'Downloading',
  verify: 'Checking the sha256 fingerprint',
  init: 'Starting the model',
  read: 'Reading the file from your computer',
  hash: 'Computing the sha256 fingerprint',
};

export async function fetchManifest() {
  const res = await fetch(new URL('models/manifest.json', BASE_URL), { cache: 'no-cache' });
  if (!res.ok) throw new Error(`models/manifest.json: HTTP ${res.status}`);
  const json = await res.json();
  const models = Array.isArray(json.models) ? json.models : [];
  // Models from another origin (`sr-bench site --base-url`): an absolute http(s) URL, or none.
  const base = typeof json.base_url === 'string' && /^https?:\/\/[^/]+\/(.*\/)?$/.test(json.base_url) ? json.base_url : undefined;
  return models.filter((m) => m && typeof m.name === 'string' && typeof m.dtype === 'string' &&
    typeof m.file === 'string' && typeof m.sha256 === 'string')
    .map((m) => (base ? { ...m, base_url: base } : m));
}

/** Fills the picker (default first, then by size; grouped by model) and selects the link's
 * model, else the default. Returns whether the link's model was found. */
export function fillModelSelect(models, wanted) {
  const sel = $('model-select');
  sel.replaceChildren();
  const byName = new Map();
  const ordered = [...models].sort((x, y) => (y.default ? 1 : 0) - (x.default ? 1 : 0) || (x.bytes || 0) - (y.bytes || 0));
  for (const m of ordered) {
    if (!byName.has(m.name)) byName.set(m.name, []);
    byName.get(m.name).push(m);
  }
  for (const [name, list] of byName) {
    const group = document.createElement('optgroup');
    group.label = name;
    for (const m of list) {
      const opt = document.createElement('option');
      opt.value = modelKey(m);
      opt.textContent = `${m.name} · ${m.dtype} · ${formatBytes(m.bytes)}${typeof m.note === 'string' ? ` · ${m.note}` : ''}`;
      group.append(opt);
    }
    sel.append(group);
  }
  const pick = models.find((m) => wanted && m.name === wanted.model && m.dtype === wanted.dtype) ||
    models.find((m) => m.default) || models[0];
  if (pick) sel.value = modelKey(pick);
  sel.disabled = models.length === 0;
  return !!(wanted && wanted.model && pick && pick.name === wanted.model && pick.dtype === wanted.dtype);
}

/** @param {PageState} state */
export function updateLoadButton(state) {
  const e = selectedEntry(state);
  const btn = $('model-load');
  btn.disabled = !e;
  if (!e) return;
  const isLoaded = state.loaded && modelKey(state.loaded.entry) === modelKey(e);
  const isLoading = state.loadingKey === modelKey(e);
  btn.disabled = isLoading;
  btn.textContent = isLoading ? 'Loading…' : isLoaded ? 'Reload model' : `Load model (${formatBytes(e.bytes)})`;
}

/** Whether the model file is in the engine's model cache already (then the page loads it right
 * away). @param {import('../shared/protocol.js').ModelEntry} entry */
export function isCached(entry) {
  return isModelCached(BASE_URL, entry);
}

/** What the panel's "Running on" line and its folded line say is loaded. */
function setActive(text) {
  $('model-active').textContent = text;
  setFoldSummary(text);
}

function showProgress(m, label) {
  const bar = $('model-progress');
  const text = $('model-progress-text');
  if (m.unit === 'bytes' && m.total > 0) {
    bar.max = m.total;
    bar.value = Math.min(m.done, m.total);
    setFoldSummary(`loading ${label}: ${Math.floor((100 * Math.min(m.done, m.total)) / m.total)} %`);
    const rate = m.elapsed_ms > 0 ? m.done / (m.elapsed_ms / 1000) : 0;
    text.textContent = `${PHASE_TEXT[m.phase] || m.phase}: ${formatBytes(m.done)} of ${formatBytes(m.total)}` +
      (m.phase === 'download' && rate > 0 ? ` · ${formatBytes(rate)}/s` : '');
  } else {
    bar.removeAttribute('value');
    text.textContent = `${PHASE_TEXT[m.phase] || m.phase}…`;
    setFoldSummary(`loading ${label}: ${(PHASE_TEXT[m.phase] || m.phase).toLowerCase()}…`);
  }
}

function showNotice(m) {
  const notice = $('model-notice');
  notice.hidden = false;
  notice.textContent = m.message;
  notice.dataset.code = m.code;
  notice.classList.toggle('is-warning', m.level === 'warning');
  if (m.level === 'warning') setFolded(false); // e.g. a corrupt cached file: say so where it shows
}

function hideProgress() {
  $('model-progress').hidden = true;
  $('model-progress-text').textContent = '';
}

/** After a download: asks the browser not to evict the model cache under storage pressure
 * (`navigator.storage.persist()`), and says why and what it answered. @param {any} entry */
async function askToKeep(entry) {
  const storage = navigator.storage;
  if (!storage || typeof storage.persist !== 'function') return;
  try {
    const kept = (await storage.persisted()) || (await storage.persist());
    $('model-status').dataset.persisted = String(kept);
    $('model-status').append(` ${kept
      ? `This browser keeps it (persistent storage), so the ${formatBytes(entry.bytes)} need not be downloaded again.`
      : `The browser may clear it when space runs low (it declined persistent storage); it is then downloaded again.`}`);
  } catch {
    // No answer: the model stays cached as before.
  }
}

/**
 * Loads `entry` (a manifest entry) on the chosen backend, or, with `local`
 * ({file, sha256, max_seq_length}, see local-model.js), a file from this computer.
 * A newer load supersedes this one.
 */
/** @param {PageState} state */
export async function loadModel(state, entry, local = null) {
  if (!entry && !local) return;
  const key = local ? `local:${local.sha256}` : modelKey(entry);
  const label = local ? `local file ${local.file.name}` : `${entry.name} (${entry.dtype})`;
  state.loadingKey = key;
  state.userEngaged = true;
  delete $('model-status').dataset.waiting; // the save-data wait (main.js) is over
  const bar = $('model-progress');
  const notice = $('model-notice');
  notice.hidden = true;
  notice.textContent = '';
  if (state.run) setMessage($('run-msg'), 'Changing the model: the running benchmark is being cancelled…', 'warning');
  bar.hidden = false;
  bar.removeAttribute('value');
  setMessage($('model-status'), `Loading ${label}…`);
  setActive(`loading ${label}…`);
  document.body.dataset.model = 'loading';
  updateLoadButton(state);
  updatePlayground(state);
  /** @type {import('../shared/protocol.js').Payload<import('../shared/protocol.js').LoadRequest>} */
  const request = local
    ? { file: local.file, sha256: local.sha256, max_seq_length: local.max_seq_length, backend: state.backend }
    : { model: entry, baseUrl: BASE_URL, backend: state.backend };
  const engine = state.engine;
  try {
    const value = await engine.call(REQ.LOAD, request, {
      onProgress: (m) => { if (state.loadingKey === key) showProgress(m, label); },
      onNotice: showNotice,
    });
    if (state.loadingKey !== key) return;
    // `local`: a backend change reloads the same file; `filePrefix`: the prefix field's reset.
    state.loaded = { ...value, local, filePrefix: value.info.prefix };
    state.loadingKey = null;
    hideProgress();
    const i = value.info;
    const e = value.entry;
    const from = e.local
      ? `Read from this computer (local file ${e.file}, ${formatBytes(e.bytes)}, sha256 ${e.sha256.slice(0, 12)}…; it never left this tab)`
      : value.source === 'cache' ? 'Taken from the browser cache and sha256-verified' : `Downloaded (${formatBytes(e.bytes)}) and sha256-verified`;
    setMessage($('model-status'),
      `Ready: ${i.name} · ${i.dtype} · ${i.architecture}, ${i.dim}-dimensional, reads up to ${i.max_seq_length} tokens. ` +
      `${from}; ready in ${formatDuration(value.timings.total_ms)}.`);
    $('model-status').dataset.source = value.source;
    $('model-status').dataset.loadMs = String(value.timings.total_ms);
    setActive(`${i.name} · ${i.dtype}${e.local ? ' · local file' : ''}`);
    renderBackend(value.backend_status);
    const where = value.backend_status && value.backend_status.active === 'webgpu' ? 'WebGPU' : 'CPU';
    setFoldSummary(`${i.name} · ${i.dtype}${e.local ? ' · local file' : ''} · ${where} · ready`);
    renderPrefix(state);
    if (value.source === 'network' && !e.local) askToKeep(e);
    document.body.dataset.model = 'ready';
    document.dispatchEvent(new Event('sr-bench:model-loaded')); // e.g. offline.js updates its line
  } catch (err) {
    if (err.code === ERR.SUPERSEDED || state.loadingKey !== key) return;
    state.loadingKey = null;
    hideProgress();
    document.body.dataset.model = state.loaded ? 'ready' : 'error';
    setMessage($('model-status'), `Could not load ${label}: ${err.message}`, 'error');
    $('model-status').dataset.code = err.code || '';
    setActive(state.loaded ? `${state.loaded.info.name} · ${state.loaded.info.dtype}` : 'no model loaded');
    setFolded(false); // the message says what went wrong: show it
    restartIfEngineFailed(state, err, engine, `The engine failed: ${err.message}`);
  } finally {
    updateLoadButton(state);
    updatePlayground(state);
  }
}
