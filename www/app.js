// The page: model picker, playground, benchmark panel, results. All model work happens in
// worker.js (see protocol.js for the messages); this thread only renders, so it never blocks.
// User text is only ever written with textContent / value, never as HTML.

import { EngineClient, ERR, SR_FILES, DIMENSIONS, MODEL_CACHE, modelCacheKey } from './protocol.js';
import { createScatter } from './charts.js';

const BASE_URL = new URL('./', import.meta.url).href;
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- examples (one per SR phenomenon)

/** @type {Array<{id: string, label: string, dimension: string, a: string, b: string, same: boolean, why: string}>} */
const EXAMPLES = [
  { id: 'active-passive', label: 'Active ↔ passive', dimension: 'structure', same: true,
    a: 'The chef cooked the meal.', b: 'The meal was cooked by the chef.',
    why: 'Only the voice changed: the chef still does the cooking.' },
  { id: 'inversion', label: 'Inversion', dimension: 'structure', same: true,
    a: 'The team has won the championship.', b: 'Won the championship has the team.',
    why: 'The word order is inverted, but the team still won.' },
  { id: 'partial-inversion', label: 'Partial inversion', dimension: 'structure', same: true,
    a: 'The team has won the championship.', b: 'The championship, the team has won.',
    why: 'Only the object moved to the front.' },
  { id: 'concept-order', label: 'Concept order swap', dimension: 'relation', same: false,
    a: 'Tom likes Taylor Swift.', b: 'Taylor Swift likes Tom.',
    why: 'Who likes whom is reversed, with exactly the same words.' },
  { id: 'cause-effect', label: 'Cause ↔ effect', dimension: 'relation', same: false,
    a: 'Rain causes floods.', b: 'Floods cause rain.',
    why: 'Cause and effect are swapped (and the new claim is false).' },
  { id: 'clause-reorder', label: 'Clause reorder', dimension: 'relation', same: true,
    a: 'He read the book because he was interested in history.', b: 'Because he was interested in history, he read the book.',
    why: 'The clauses changed places; the reason is the same.' },
];

// ---------------------------------------------------------------- formatting

const nf0 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
function formatBytes(n) {
  if (!Number.isFinite(n) || n <= 0) return '? MB';
  if (n < 1e6) return `${(n / 1e3).toFixed(0)} kB`;
  return `${(n / 1e6).toFixed(n < 1e8 ? 1 : 0)} MB`;
}
function formatDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '…';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(s % 60).padStart(2, '0')} s`;
}
const fmt2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
const fmtSigned = (x) => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(2)}` : '');
const modelKey = (e) => `${e.name}@${e.dtype}`;

function setMessage(el, text, level = 'info') {
  el.textContent = text || '';
  el.dataset.level = level;
  el.classList.toggle('is-error', level === 'error');
  el.classList.toggle('is-warning', level === 'warning');
}

// ---------------------------------------------------------------- URL state (shareable links)
// #a=…&b=…&model=NAME&dtype=q8_0&backend=cpu[&view=projector]

const URL_TEXT_LIMIT = 2000;
function readUrlState() {
  const p = new URLSearchParams(location.hash.replace(/^#/, ''));
  return {
    a: p.get('a'), b: p.get('b'),
    model: p.get('model'), dtype: p.get('dtype'),
    backend: p.get('backend'), view: p.get('view'),
  };
}
function writeUrlState() {
  const p = new URLSearchParams();
  const a = $('text-a').value;
  const b = $('text-b').value;
  if (a && a.length <= URL_TEXT_LIMIT) p.set('a', a);
  if (b && b.length <= URL_TEXT_LIMIT) p.set('b', b);
  const entry = selectedEntry();
  if (entry) { p.set('model', entry.name); p.set('dtype', entry.dtype); }
  p.set('backend', state.backend);
  if (document.documentElement.classList.contains('projector')) p.set('view', 'projector');
  const hash = `#${p.toString()}`;
  if (hash !== location.hash) history.replaceState(null, '', hash);
}

// ---------------------------------------------------------------- state

const state = {
  /** @type {import('./protocol.js').ModelEntry[]} */
  manifest: [],
  /** The backend chosen on the page (and in the URL): "cpu" | "webgpu" | "auto". */
  backend: 'cpu',
  /** @type {{entry: any, info: any, source: string, timings: any, backend_status: any}|null} */
  loaded: null,
  loadingKey: null,
  userEngaged: false,
  /** @type {{id: number, split: string, encoder: string, done: number, total: number, phase: string}|null} */
  run: null,
  /** @type {{report: any, timings: any, encoder: string, load: any, backend_status: any}|null} */
  result: null,
  playSeq: 0,
  playTimer: 0,
  urlTimer: 0,
  scatter: null,
};

// ---------------------------------------------------------------- engine (worker)

/** @type {EngineClient} */
let engine;
function startEngine() {
  const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'sr-bench-engine' });
  const client = new EngineClient(worker);
  worker.addEventListener('error', (e) => {
    const why = e.message || 'the engine script failed to load';
    client.failAll(`The engine stopped: ${why}`);
    setMessage($('model-status'), `The engine could not start: ${why}. Reload the page to try again.`, 'error');
  });
  worker.addEventListener('messageerror', () => {
    setMessage($('model-status'), 'The engine sent a message the page could not read.', 'error');
  });
  engine = client;
}

function restartEngine() {
  engine.worker.terminate();
  engine.failAll('The engine was restarted.');
  state.loaded = null;
  startEngine();
}

// ---------------------------------------------------------------- model picker

function selectedEntry() {
  const key = $('model-select').value;
  return state.manifest.find((e) => modelKey(e) === key) || null;
}

async function fetchManifest() {
  const res = await fetch(new URL('models/manifest.json', BASE_URL), { cache: 'no-cache' });
  if (!res.ok) throw new Error(`models/manifest.json: HTTP ${res.status}`);
  const json = await res.json();
  const models = Array.isArray(json.models) ? json.models : [];
  return models.filter((m) => m && typeof m.name === 'string' && typeof m.dtype === 'string' &&
    typeof m.file === 'string' && typeof m.sha256 === 'string');
}

function fillModelSelect(models, wanted) {
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
      opt.textContent = `${m.name} · ${m.dtype} · ${formatBytes(m.bytes)}`;
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

function updateLoadButton() {
  const e = selectedEntry();
  const btn = $('model-load');
  btn.disabled = !e;
  if (!e) return;
  const isLoaded = state.loaded && modelKey(state.loaded.entry) === modelKey(e);
  const isLoading = state.loadingKey === modelKey(e);
  btn.disabled = isLoading;
  btn.textContent = isLoading ? 'Loading…' : isLoaded ? 'Reload model' : `Load model (${formatBytes(e.bytes)})`;
}

async function isCached(entry) {
  try {
    if (typeof caches === 'undefined') return false;
    const cache = await caches.open(MODEL_CACHE);
    return !!(await cache.match(modelCacheKey(BASE_URL, entry)));
  } catch {
    return false;
  }
}

const PHASE_TEXT = {
  cache: 'Reading from the browser cache',
  download: 'Downloading',
  verify: 'Checking the sha256 fingerprint',
  init: 'Starting the model',
};

async function loadModel(entry) {
  if (!entry) return;
  const key = modelKey(entry);
  state.loadingKey = key;
  state.userEngaged = true;
  const bar = $('model-progress');
  const text = $('model-progress-text');
  const notice = $('model-notice');
  notice.hidden = true;
  notice.textContent = '';
  if (state.run) setMessage($('run-msg'), 'Changing the model: the running benchmark is being cancelled…', 'warning');
  bar.hidden = false;
  bar.removeAttribute('value');
  setMessage($('model-status'), `Loading ${entry.name} (${entry.dtype})…`);
  $('model-active').textContent = `loading ${entry.name} · ${entry.dtype}…`;
  document.body.dataset.model = 'loading';
  updateLoadButton();
  updatePlayground();
  try {
    const value = await engine.call('load', { model: entry, baseUrl: BASE_URL, backend: state.backend }, {
      onProgress: (m) => {
        if (state.loadingKey !== key) return;
        if (m.unit === 'bytes' && m.total > 0) {
          bar.max = m.total;
          bar.value = Math.min(m.done, m.total);
          const rate = m.elapsed_ms > 0 ? m.done / (m.elapsed_ms / 1000) : 0;
          text.textContent = `${PHASE_TEXT[m.phase] || m.phase}: ${formatBytes(m.done)} of ${formatBytes(m.total)}` +
            (m.phase === 'download' && rate > 0 ? ` · ${formatBytes(rate)}/s` : '');
        } else {
          bar.removeAttribute('value');
          text.textContent = `${PHASE_TEXT[m.phase] || m.phase}…`;
        }
      },
      onNotice: (m) => {
        notice.hidden = false;
        notice.textContent = m.message;
        notice.dataset.code = m.code;
        notice.classList.toggle('is-warning', m.level === 'warning');
      },
    });
    if (state.loadingKey !== key) return;
    state.loaded = value;
    state.loadingKey = null;
    bar.hidden = true;
    text.textContent = '';
    const i = value.info;
    const from = value.source === 'cache' ? 'Taken from the browser cache' : `Downloaded (${formatBytes(entry.bytes)})`;
    setMessage($('model-status'),
      `Ready: ${i.name} · ${i.dtype} · ${i.architecture}, ${i.dim}-dimensional, reads up to ${i.max_seq_length} tokens. ` +
      `${from} and sha256-verified; ready in ${formatDuration(value.timings.total_ms)}.`);
    $('model-status').dataset.source = value.source;
    $('model-active').textContent = `${i.name} · ${i.dtype}`;
    renderBackend(value.backend_status);
    document.body.dataset.model = 'ready';
  } catch (err) {
    if (err.code === ERR.SUPERSEDED || state.loadingKey !== key) return;
    state.loadingKey = null;
    bar.hidden = true;
    text.textContent = '';
    document.body.dataset.model = state.loaded ? 'ready' : 'error';
    setMessage($('model-status'), `Could not load ${entry.name} (${entry.dtype}): ${err.message}`, 'error');
    $('model-active').textContent = state.loaded ? `${state.loaded.info.name} · ${state.loaded.info.dtype}` : 'no model loaded';
    if (err.code === ERR.ENGINE) restartEngine();
  } finally {
    updateLoadButton();
    updatePlayground();
  }
}

// ---------------------------------------------------------------- backend picker

const BACKENDS = ['cpu', 'webgpu', 'auto'];
const hasWebGpuApi = () => typeof navigator !== 'undefined' && 'gpu' in navigator;

function setupBackend(wanted) {
  const webgpu = document.querySelector('input[name="backend"][value="webgpu"]');
  const tag = $('webgpu-tag');
  if (hasWebGpuApi()) {
    $('webgpu-choice').title = 'Runs the encoder as WebGPU compute kernels; falls back to the CPU if the GPU cannot be used';
  } else {
    webgpu.disabled = true;
    const why = window.isSecureContext ? 'This browser has no WebGPU.' : 'WebGPU needs a secure context (https or localhost).';
    $('webgpu-choice').title = why;
    webgpu.title = why;
    tag.hidden = false;
    tag.textContent = 'not available';
  }
  let choice = BACKENDS.includes(wanted) ? wanted : 'cpu';
  if (wanted && !BACKENDS.includes(wanted)) {
    setMessage($('model-status'), `The link asks for an unknown backend “${wanted}”: using the CPU.`, 'warning');
  } else if (choice === 'webgpu' && webgpu.disabled) {
    setMessage($('model-status'), 'The link asks for WebGPU, which this browser does not have: using the CPU.', 'warning');
    choice = 'cpu';
  }
  selectBackend(choice);
  for (const r of document.querySelectorAll('input[name="backend"]')) {
    r.addEventListener('change', () => {
      if (!r.checked) return;
      selectBackend(r.value);
      scheduleUrlWrite();
      // A loaded (or loading) model is reloaded on the new backend; otherwise the next load uses it.
      if (state.loaded || state.loadingKey) loadModel(selectedEntry());
    });
  }
}

function selectBackend(choice) {
  state.backend = choice;
  for (const r of document.querySelectorAll('input[name="backend"]')) r.checked = r.value === choice;
  if (!state.loaded) {
    $('active-backend').textContent = { cpu: 'CPU · WebAssembly', webgpu: 'WebGPU (once a model is loaded)', auto: 'Auto: WebGPU if available, else the CPU (once a model is loaded)' }[choice];
  }
}

/** The adapter's name; in the browser wgpu gets none ("unnamed adapter…"), so the browser's
 * own vendor and architecture (e.g. "google swiftshader") name it instead. */
function adapterLabel(adapter) {
  if (!adapter) return 'unknown adapter';
  const info = adapter.browser_info;
  const fromBrowser = info ? [info.vendor, info.architecture, info.device].filter(Boolean).join(' ') : '';
  return adapter.name && !/^unnamed adapter/.test(adapter.name) ? adapter.name : fromBrowser || adapter.name || 'unnamed adapter';
}

/** Shows where the model runs (`Model.backend_status()`): active backend, adapter, software
 * adapter and CPU fallback warnings, and the backend's notices. */
function renderBackend(status) {
  if (!status) return;
  const active = $('active-backend');
  const adapter = status.adapter;
  active.dataset.active = status.active;
  active.dataset.requested = status.requested;
  const adapterName = adapterLabel(adapter);
  active.textContent = status.active === 'gpu'
    ? `WebGPU · ${adapterName}${status.software_adapter ? ' (software)' : ''}`
    : `CPU · WebAssembly${status.requested !== 'cpu' ? ' (WebGPU not used)' : ''}`;

  const software = $('backend-software');
  software.hidden = !(status.software_adapter && status.active === 'gpu');
  software.textContent = software.hidden ? '' :
    `The WebGPU adapter “${adapterName}” is a software fallback (e.g. SwiftShader): the GPU is emulated ` +
    'on the CPU, so it is likely slower than the CPU (WebAssembly) backend, and its speed says nothing about a real GPU.';

  const fallback = $('backend-fallback');
  fallback.hidden = !(status.fallback_reason && status.active === 'cpu');
  fallback.textContent = fallback.hidden ? '' : `WebGPU is not used: ${status.fallback_reason}.`;

  const list = $('backend-notices');
  // The fallback reason is also a notice: shown once, above.
  const notices = (Array.isArray(status.notices) ? status.notices : []).filter((n) => fallback.hidden || n !== status.fallback_reason);
  list.replaceChildren(...notices.map((n) => el('li', {}, n)));
  list.hidden = notices.length === 0;
}

// ---------------------------------------------------------------- playground

function renderExamples() {
  const box = $('examples');
  for (const dim of DIMENSIONS) {
    const group = document.createElement('div');
    group.className = 'example-group';
    group.setAttribute('role', 'group');
    const label = document.createElement('span');
    label.className = 'example-group-label';
    label.id = `examples-${dim}`;
    label.textContent = dim === 'structure' ? 'Structure:' : 'Relation:';
    group.setAttribute('aria-labelledby', label.id);
    group.append(label);
    for (const ex of EXAMPLES.filter((e) => e.dimension === dim)) {
      const btn = document.createElement('button');
      btn.type = 'button';
      btn.className = `example example-${ex.dimension}`;
      btn.dataset.example = ex.id;
      btn.textContent = ex.label;
      btn.title = `${ex.a} / ${ex.b}`;
      btn.setAttribute('aria-pressed', 'false');
      btn.addEventListener('click', () => {
        $('text-a').value = ex.a;
        $('text-b').value = ex.b;
        onTextInput(0);
      });
      group.append(btn);
    }
    box.append(group);
  }
}

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

function setScoreState(s) {
  $('score-model').dataset.state = s;
  $('score-static').dataset.state = s;
}

function updateVerdict(a, b) {
  const ex = EXAMPLES.find((e) => e.a === a.trim() && e.b === b.trim());
  const v = $('verdict');
  for (const btn of document.querySelectorAll('#examples button')) {
    btn.setAttribute('aria-pressed', String(!!ex && btn.dataset.example === ex.id));
  }
  if (!ex) { v.hidden = true; v.textContent = ''; return; }
  v.hidden = false;
  v.classList.toggle('same', ex.same);
  v.classList.toggle('different', !ex.same);
  v.replaceChildren();
  const strong = document.createElement('strong');
  strong.textContent = ex.same ? 'Same meaning. ' : 'Different meaning. ';
  v.append(strong, document.createTextNode(`${ex.why} ${ex.same
    ? 'A model that understands syntax should score it high.'
    : 'A model that understands syntax should score it clearly lower than a paraphrase.'}`));
}

/** A note when a text is longer than the model reads (token counts from the engine when it has them). */
function longTextNote(a, b, tokens) {
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

function onTextInput(delay = 150) {
  clearTimeout(state.playTimer);
  state.playSeq++;
  setScoreState('pending');
  updateVerdict($('text-a').value, $('text-b').value);
  scheduleUrlWrite();
  state.playTimer = setTimeout(updatePlayground, delay);
}

async function updatePlayground() {
  const a = $('text-a').value;
  const b = $('text-b').value;
  const seq = ++state.playSeq;
  const msg = $('play-msg');
  if (!a.trim() || !b.trim()) {
    setScore('score-model', 'meter-model', NaN);
    setScore('score-static', 'meter-static', NaN);
    setScoreState('empty');
    setMessage(msg, !a.trim() && !b.trim() ? 'Type a sentence in both boxes, or pick an example.'
      : `Type a sentence in box ${!a.trim() ? 'A' : 'B'} too.`, 'warning');
    return;
  }
  if (!state.loaded) {
    setScore('score-model', 'meter-model', NaN);
    setScore('score-static', 'meter-static', NaN);
    setScoreState('no-model');
    setMessage(msg, state.loadingKey ? 'The model is loading: the score appears when it is ready.'
      : 'Load a model (above) to see the similarity.', 'info');
    return;
  }
  setScoreState('pending');
  try {
    const r = await engine.call('similarity', { a, b });
    if (seq !== state.playSeq) return; // a newer edit is on its way
    if (!Number.isFinite(r.cosine) || !Number.isFinite(r.static_cosine)) {
      setScore('score-model', 'meter-model', r.cosine);
      setScore('score-static', 'meter-static', r.static_cosine);
      setScoreState('error');
      setMessage(msg, 'The model returned no number for this pair (the text may have no tokens).', 'error');
      return;
    }
    setScore('score-model', 'meter-model', r.cosine);
    setScore('score-static', 'meter-static', r.static_cosine);
    setScoreState('ready');
    if (r.backend_status) renderBackend(r.backend_status);
    $('score-model').dataset.a = String(a.length);
    const note = longTextNote(a, b, r.tokens);
    setMessage(msg, note || `Computed in ${r.ms < 1 ? '<1' : Math.round(r.ms)} ms` +
      (r.tokens ? ` (${r.tokens[0]} and ${r.tokens[1]} tokens).` : '.'), note ? 'warning' : 'info');
  } catch (err) {
    if (seq !== state.playSeq) return;
    setScore('score-model', 'meter-model', NaN);
    setScore('score-static', 'meter-static', NaN);
    setScoreState('error');
    setMessage(msg, err.code === ERR.NO_MODEL ? 'Load a model (above) to see the similarity.' : `Could not score this pair: ${err.message}`, 'error');
  }
}

function scheduleUrlWrite() {
  clearTimeout(state.urlTimer);
  state.urlTimer = setTimeout(writeUrlState, 300);
}

async function copyLink() {
  writeUrlState();
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

// ---------------------------------------------------------------- benchmark

function selectedSplit() {
  return document.querySelector('input[name="split"]:checked').value;
}

function setRunning(running) {
  $('cancel').disabled = !running;
  $('run').classList.toggle('busy', running);
  document.body.dataset.run = running ? 'running' : 'idle';
}

async function runBenchmark() {
  const msg = $('run-msg');
  if (state.run) {
    const pct = state.run.total ? Math.floor((100 * state.run.done) / state.run.total) : 0;
    setMessage(msg, `A benchmark is already running (${pct} % done). Cancel it first, or wait for it to finish.`, 'warning');
    return;
  }
  if (state.loadingKey) {
    setMessage(msg, 'Wait for the model to finish loading, then run the benchmark.', 'warning');
    return;
  }
  if (!state.loaded) {
    setMessage(msg, 'Load a model first (step 1).', 'warning');
    return;
  }
  const split = selectedSplit();
  const encoder = $('encoder').value;
  const load = state.loaded;
  const bar = $('run-progress');
  const stats = $('run-stats');
  bar.hidden = false;
  bar.removeAttribute('value');
  stats.textContent = '';
  setMessage(msg, `Running the ${split} split with ${encoder === 'static' ? 'the syntax-blind baseline of ' : ''}${load.info.name} · ${load.info.dtype}…`);
  const { id, promise } = engine.start('evaluate', { split, encoder, baseUrl: BASE_URL }, {
    onProgress: (m) => {
      if (!state.run || state.run.id !== id) return;
      state.run.phase = m.phase;
      if (m.phase === 'data') {
        bar.max = Math.max(1, m.total);
        bar.value = m.done;
        stats.textContent = `Fetching the benchmark files: ${m.done} of ${m.total}`;
      } else if (m.phase === 'prepare' && m.unit === 'workers') {
        stats.textContent = `Starting ${m.total} engine workers (one per core)…`;
      } else if (m.phase === 'evaluate') {
        state.run.done = m.done;
        state.run.total = m.total;
        bar.max = Math.max(1, m.total);
        bar.value = m.done;
        const rate = m.elapsed_ms > 0 ? m.done / (m.elapsed_ms / 1000) : 0;
        const eta = rate > 0 ? ((m.total - m.done) / rate) * 1000 : NaN;
        stats.textContent = `${nf0.format(m.done)} of ${nf0.format(m.total)} sentences` +
          (rate > 0 ? ` · ${rate.toFixed(1)} sentences/s · about ${formatDuration(eta)} left` : '');
        stats.dataset.done = String(m.done);
        stats.dataset.total = String(m.total);
      }
    },
    // The GPU's notices (e.g. it failed mid-run and the CPU took over), as they happen.
    onNotice: (m) => {
      if (m.backend_status) renderBackend(m.backend_status);
    },
  });
  state.run = { id, split, encoder, done: 0, total: 0, phase: 'data' };
  setRunning(true);
  try {
    const value = await promise;
    if (!value.report.paper) await fetchPaperTable();
    state.result = { report: value.report, timings: value.timings, encoder, load, backend_status: value.backend_status || null };
    if (value.backend_status) renderBackend(value.backend_status);
    const t = value.timings;
    setMessage(msg, `Done: ${nf0.format(t.sentences)} sentences in ${formatDuration(t.total_ms)}` +
      (t.sentences_per_s ? ` (${t.sentences_per_s.toFixed(1)} sentences/s` +
        (t.gpu ? ' on WebGPU).' : t.workers > 1 ? ` on ${t.workers} workers).` : ').') : '.'));
    renderResults();
  } catch (err) {
    if (err.code === ERR.CANCELLED) {
      setMessage(msg, err.reason === 'model-changed'
        ? 'Benchmark cancelled because the model was changed. Run it again for the new model.'
        : 'Benchmark cancelled.', 'warning');
    } else {
      setMessage(msg, `The benchmark failed: ${err.message}`, 'error');
      if (err.code === ERR.ENGINE) restartEngine();
    }
  } finally {
    if (state.run && state.run.id === id) state.run = null;
    bar.hidden = true;
    stats.textContent = '';
    delete stats.dataset.done;
    delete stats.dataset.total;
    setRunning(false);
  }
}

async function cancelBenchmark() {
  if (!state.run) {
    setMessage($('run-msg'), 'No benchmark is running.', 'info');
    return;
  }
  setMessage($('run-msg'), 'Cancelling…', 'warning');
  try {
    await engine.call('cancel', { target: state.run.id });
  } catch (err) {
    setMessage($('run-msg'), `Could not cancel: ${err.message}`, 'error');
  }
}

// ---------------------------------------------------------------- results

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'data') Object.assign(e.dataset, v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

/** The paper's Table 4 (data/sr-scores.json), for reports that do not carry `paper`. */
let paperTable = null;
async function fetchPaperTable() {
  if (paperTable) return paperTable;
  try {
    const res = await fetch(new URL('data/sr-scores.json', BASE_URL));
    paperTable = res.ok ? ((await res.json()).paper_table4 || {}) : {};
  } catch {
    paperTable = {};
  }
  return paperTable;
}

/** The report's `paper` block, or the paper's Table 4 entry for this model (model encoder only). */
function paperFor(report, encoder) {
  if (report.paper) return report.paper;
  if (encoder !== 'model' || !paperTable) return null;
  return paperTable[report.model] || null;
}

function renderResults() {
  const { report, encoder, timings } = state.result;
  const section = $('results');
  section.hidden = false;
  const paper = paperFor(report, encoder);
  $('results-caption').textContent =
    `${report.model} · ${report.dtype} · split ${report.split}` +
    `${encoder === 'static' ? ' · encoder: syntax-blind baseline' : ''} · ${nf0.format(timings.sentences)} sentences, ` +
    `${formatDuration(timings.total_ms)}` +
    (paper ? (report.split === 'quick' ? ' · the paper\'s values are for the full benchmark: expect larger differences on the quick sample' : '')
      : encoder === 'static'
      ? ' · the paper has no values for the baseline' : ' · the paper reports no values for this model');

  const head = $('results-head');
  head.replaceChildren(el('th', { scope: 'col' }, 'dimension'),
    ...SR_FILES.map((f) => el('th', { scope: 'col' }, f)), el('th', { scope: 'col' }, 'avg'));

  const body = $('results-body');
  body.replaceChildren();
  for (const dim of DIMENSIONS) {
    const res = (report.results && report.results[dim]) || {};
    const row = el('tr', {}, el('th', { scope: 'row' }, dim));
    for (const f of [...SR_FILES, 'avg']) {
      const cell = f === 'avg' ? { spearman: res.avg_spearman } : (res[f] || {});
      const ours = cell.spearman;
      const ref = paper && paper[dim] ? paper[dim][f] : undefined;
      const td = el('td', { data: { cell: `${dim}-${f}`, value: Number.isFinite(ours) ? String(ours) : '' } });
      td.append(el('span', { class: 'v' }, fmt2(ours)));
      if (Number.isFinite(ref)) {
        const d = ours - ref;
        td.append(el('span', { class: 'ref' }, `paper ${fmt2(ref)}`),
          el('span', { class: `delta ${Math.abs(d) < 1 ? 'close' : 'far'}`, data: { value: String(d) } }, `Δ ${fmtSigned(d)}`));
      }
      if (f !== 'avg') {
        const ci = Array.isArray(cell.spearman_ci95) ? cell.spearman_ci95 : null;
        td.append(el('span', { class: 'extra', data: { pearson: String(cell.pearson) } },
          'Pearson ', el('span', { class: 'nowrap' }, fmt2(cell.pearson))),
        el('span', { class: 'extra' }, ci ? '95% CI ' : '', el('span', { class: 'nowrap' }, ci ? `[${fmt2(ci[0])}, ${fmt2(ci[1])}]` : '')),
        el('span', { class: 'extra muted' }, Number.isFinite(cell.n) ? `n = ${nf0.format(cell.n)}` : ''));
      }
      row.append(td);
    }
    body.append(row);
  }
  const st = report.stsb_test || {};
  const stEl = $('stsb-test-value');
  stEl.value = Number.isFinite(st.spearman) ? String(st.spearman) : '';
  stEl.dataset.value = stEl.value;
  stEl.textContent = fmt2(st.spearman);
  $('stsb-test-extra').textContent = Number.isFinite(st.pearson) ? `(Pearson ${fmt2(st.pearson)})` : '';

  const fileSel = $('plot-file');
  if (!fileSel.options.length) {
    for (const f of SR_FILES) fileSel.append(el('option', { value: f }, f));
  }
  renderPlot();
}

function pairsOf(file, dim) {
  const pairs = (state.result && state.result.report.pairs) || [];
  return pairs.filter((p) => p.file === file && p.dimension === dim);
}

/** Average ranks (ties share the mean rank), 1-based. */
function ranks(values) {
  const idx = values.map((v, i) => i).sort((i, j) => values[i] - values[j]);
  const r = new Array(values.length);
  for (let k = 0; k < idx.length;) {
    let m = k;
    while (m + 1 < idx.length && values[idx[m + 1]] === values[idx[k]]) m++;
    const avg = (k + m) / 2 + 1;
    for (let t = k; t <= m; t++) r[idx[t]] = avg;
    k = m + 1;
  }
  return r;
}

function renderPlot() {
  if (!state.result) return;
  const file = $('plot-file').value || SR_FILES[0];
  const dim = $('plot-dim').value;
  const pairs = pairsOf(file, dim);
  const res = state.result.report.results?.[dim]?.[file];
  const title = `${file} · ${dim} · ${pairs.length} pairs · Spearman ${fmt2(res?.spearman)}`;
  const points = pairs.map((p) => ({ x: p.gold, y: p.cosine, line: p.line }));
  try {
    if (!state.scatter) state.scatter = createScatter($('scatter'));
    state.scatter.update(points, title);
    $('scatter').setAttribute('aria-label', `Scatter plot: ${title}`);
  } catch (err) {
    setMessage($('run-msg'), err.message, 'error');
  }

  const rg = ranks(pairs.map((p) => p.gold));
  const rc = ranks(pairs.map((p) => p.cosine));
  const order = pairs.map((p, i) => ({ p, d: rc[i] - rg[i] }))
    .sort((x, y) => Math.abs(y.d) - Math.abs(x.d)).slice(0, 10);
  const body = $('misranked-body');
  body.replaceChildren();
  for (const { p, d } of order) {
    body.append(el('tr', {},
      el('td', { class: 'num' }, `${d > 0 ? '+' : '−'}${nf0.format(Math.abs(d))}`),
      el('td', { class: 'num' }, String(p.gold)),
      el('td', { class: 'num' }, Number.isFinite(p.cosine) ? p.cosine.toFixed(3) : '—'),
      el('td', {}, p.sentence1),
      el('td', {}, p.sentence2)));
  }
  if (!order.length) body.append(el('tr', {}, el('td', { colspan: '5' }, 'No pairs for this file and dimension.')));
}

// ---------------------------------------------------------------- export

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function exportBaseName() {
  const r = state.result.report;
  const enc = state.result.encoder === 'static' ? '-static' : '';
  return `sr-bench-${r.model}-${r.dtype}-${r.split}${enc}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

function exportJson() {
  if (!state.result) return;
  const { report, timings, encoder, load } = state.result;
  const paper = paperFor(report, encoder);
  // Where the run ended up running ("cpu" | "webgpu", the page's names); backend_status has the
  // request, the adapter and any fallback in the wasm API's terms.
  const backendStatus = state.result.backend_status || load.backend_status || null;
  const out = {
    ...report,
    ...(paper && !report.paper ? { paper } : {}),
    encoder,
    backend: backendStatus && backendStatus.active === 'gpu' ? 'webgpu' : 'cpu',
    backend_choice: state.backend,
    backend_status: backendStatus,
    browser: {
      user_agent: navigator.userAgent,
      language: navigator.language,
      hardware_concurrency: navigator.hardwareConcurrency || null,
      webgpu_api: 'gpu' in navigator,
    },
    timings: {
      model_source: load.source,
      model_fetch_ms: load.timings.fetch_ms,
      model_verify_ms: load.timings.verify_ms,
      model_init_ms: load.timings.init_ms,
      ...timings,
    },
  };
  download(`${exportBaseName()}.json`, 'application/json', `${JSON.stringify(out, null, 2)}\n`);
}

function csvField(v) {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\r\n]/.test(s) || s !== s.trim() ? `"${s.replace(/"/g, '""')}"` : s;
}

function exportCsv() {
  if (!state.result) return;
  const cols = ['file', 'dimension', 'line', 'sentence1', 'sentence2', 'gold', 'cosine'];
  const lines = [cols.join(',')];
  for (const p of state.result.report.pairs || []) lines.push(cols.map((c) => csvField(p[c])).join(','));
  download(`${exportBaseName()}-pairs.csv`, 'text/csv', `${lines.join('\r\n')}\r\n`);
}

// ---------------------------------------------------------------- projector mode

function setProjector(on, scroll = false) {
  document.documentElement.classList.toggle('projector', on);
  $('projector').setAttribute('aria-pressed', String(on));
  if (on && scroll) $('playground').scrollIntoView({ block: 'start' });
  if (state.scatter && state.result) renderPlot();
}

// ---------------------------------------------------------------- start

function applyTextsFromUrl(u) {
  if (u.a !== null) $('text-a').value = u.a;
  if (u.b !== null) $('text-b').value = u.b;
}

async function main() {
  const u = readUrlState();
  renderExamples();
  setupBackend(u.backend);
  setProjector(u.view === 'projector');
  if (u.a === null && u.b === null) {
    $('text-a').value = EXAMPLES[0].a;
    $('text-b').value = EXAMPLES[0].b;
  } else {
    applyTextsFromUrl(u);
  }
  updateVerdict($('text-a').value, $('text-b').value);
  startEngine();

  $('text-a').addEventListener('input', () => onTextInput());
  $('text-b').addEventListener('input', () => onTextInput());
  $('copy-link').addEventListener('click', copyLink);
  $('projector').addEventListener('click', () => {
    setProjector(!document.documentElement.classList.contains('projector'), true);
    scheduleUrlWrite();
  });
  $('model-load').addEventListener('click', () => loadModel(selectedEntry()));
  $('model-select').addEventListener('change', () => {
    updateLoadButton();
    scheduleUrlWrite();
    if (state.userEngaged) loadModel(selectedEntry());
  });
  $('run').addEventListener('click', runBenchmark);
  $('cancel').addEventListener('click', cancelBenchmark);
  $('show-extra').addEventListener('change', (e) => {
    $('results-table').classList.toggle('show-extra', e.target.checked);
  });
  $('plot-file').addEventListener('change', renderPlot);
  $('plot-dim').addEventListener('change', renderPlot);
  $('export-json').addEventListener('click', exportJson);
  $('export-csv').addEventListener('click', exportCsv);
  window.addEventListener('hashchange', () => {
    const v = readUrlState();
    applyTextsFromUrl(v);
    if (v.view !== null) setProjector(v.view === 'projector');
    if (BACKENDS.includes(v.backend) && v.backend !== state.backend &&
        !document.querySelector(`input[name="backend"][value="${v.backend}"]`).disabled) {
      selectBackend(v.backend);
      if (state.loaded || state.loadingKey) loadModel(selectedEntry());
    }
    const want = state.manifest.find((m) => m.name === v.model && m.dtype === v.dtype);
    if (want && modelKey(want) !== $('model-select').value) {
      $('model-select').value = modelKey(want);
      updateLoadButton();
      if (state.userEngaged) loadModel(want);
    }
    onTextInput(0);
  });

  updatePlayground();
  try {
    state.manifest = await fetchManifest();
  } catch (err) {
    setMessage($('model-status'), `Could not read the model list: ${err.message}`, 'error');
    $('model-select').replaceChildren(el('option', {}, 'no models'));
    return;
  }
  if (!state.manifest.length) {
    setMessage($('model-status'), 'The model list is empty: this site was built without models.', 'error');
    return;
  }
  const fromUrl = fillModelSelect(state.manifest, u);
  if (u.model && !fromUrl) {
    setMessage($('model-status'), `The link asks for ${u.model} (${u.dtype || '?'}), which this site does not have: showing the default.`, 'warning');
  }
  updateLoadButton();
  const entry = selectedEntry();
  if (entry && await isCached(entry)) {
    loadModel(entry); // already on this computer: no download, so start right away
  } else if (entry) {
    setMessage($('model-status'), `Choose a model and press “Load model”. ${entry.name} · ${entry.dtype} is a ${formatBytes(entry.bytes)} download, kept in the browser cache afterwards.`);
  }
}

main();
