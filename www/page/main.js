// @ts-check
// The page: model picker, playground, benchmark panel, results. All model work happens in
// the engine worker (engine/worker.js; see shared/protocol.js for the messages); this thread only renders, so it never blocks.
// User text is only ever written with textContent / value, never as HTML.
//
// One state object (state.js) is made here and handed to every panel.

import { $, el, formatBytes, setMessage } from './ui.js';
import { createState, modelKey, selectedEntry } from './state.js';
import { startEngine } from './engine.js';
import { EXAMPLES, renderExamples, updateVerdict } from './examples.js';
import { applyTextsFromUrl, copyLink, readUrlState, scheduleUrlWrite } from './url-state.js';
import { backendOffered, selectBackend, setupBackend } from './backend.js';
import { fetchManifest, fillModelSelect, isCached, loadModel, updateLoadButton } from './model-panel.js';
import { onTextInput, updatePlayground } from './playground.js';
import { cancelBenchmark, runBenchmark } from './benchmark.js';
import { renderPlot } from './results.js';
import { exportCsv, exportJson } from './export.js';
import { messageOf } from '../shared/errors.js';
import { setupLocalModel } from './local-model.js';
import { setupPrefix } from './prefix.js';
import { setupOwnPairs } from './own-pairs.js';
import { setupUrlModel } from './url-model.js';
import { setupCompare } from './compare.js';
import { setupMeasured } from './measured.js';
import { setupLesson } from './lesson.js';
import { openQuiz, setupQuiz } from './quiz.js';
import { joinClass, setupClass } from './class.js';
import { applyShuffle, forgetShuffleSeed, parseSeed, refreshWordOrder, setupWordOrder } from './word-order.js';
import { renderMaps } from './explain.js';
import { setFoldSummary, setFolded, setupModelFold } from './model-fold.js';

/** The texts changed (typed, an example, a link, a word-order button): rescore after `delay` ms. */
/** @param {PageState} state */
function textsChanged(state, delay) {
  refreshWordOrder(state, (text) => setB(state, text));
  onTextInput(state, delay);
}

/** A word-order button's B (word-order.js). */
/** @param {PageState} state */
function setB(state, text) {
  $('text-b').value = text;
  textsChanged(state, 0);
}

/** A link's `shuffle=SEED`: B is remade from A with that seed (so the link reproduces B). */
/** @param {PageState} state */
function applyShuffleFromUrl(state, u) {
  const seed = parseSeed(u.shuffle);
  if (seed !== null && $('text-a').value.trim()) applyShuffle(state, seed, (text) => setB(state, text));
}
import { exportProbe } from './probes.js';
import { refreshOffline, setupOffline } from './offline.js';

/** @typedef {import('./state.js').PageState} PageState */

/** @param {PageState} state */
function setProjector(state, on, scroll = false) {
  document.documentElement.classList.toggle('projector', on);
  $('projector').setAttribute('aria-pressed', String(on));
  if (on && scroll) $('playground').scrollIntoView({ block: 'start' });
  if (state.scatter && state.result) renderPlot(state);
}

/** A loaded (or loading) model is reloaded when the backend or the model changes (a file from
 * this computer from the same File, with the same max sequence length). */
/** @param {PageState} state */
function reloadIfEngaged(state) {
  if (state.loaded && state.loaded.local && !state.loadingKey) loadModel(state, null, state.loaded.local);
  else if (state.loaded || state.loadingKey) loadModel(state, selectedEntry(state));
}

/** The URL changed by hand (or a link was opened in this tab): follow it. */
/** @param {PageState} state */
function onHashChange(state) {
  const v = readUrlState();
  applyTextsFromUrl(v);
  forgetShuffleSeed(state);
  applyShuffleFromUrl(state, v);
  if (v.view !== null) setProjector(state, v.view === 'projector');
  if (v.backend !== state.backend && backendOffered(v.backend)) {
    selectBackend(state, v.backend);
    reloadIfEngaged(state);
  }
  const want = state.manifest.find((m) => m.name === v.model && m.dtype === v.dtype);
  if (want && modelKey(want) !== $('model-select').value) {
    $('model-select').value = modelKey(want);
    updateLoadButton(state);
    if (state.userEngaged) loadModel(state, want);
  }
  textsChanged(state, 0);
}

/** @param {PageState} state */
function wire(state) {
  for (const id of ['text-a', 'text-b']) {
    $(id).addEventListener('input', () => {
      forgetShuffleSeed(state); // typed by hand: B is no longer the shuffle of A the seed says
      textsChanged(state);
    });
  }
  $('explain-words').addEventListener('change', () => renderMaps(state));
  $('copy-link').addEventListener('click', () => copyLink(state));
  $('projector').addEventListener('click', () => {
    setProjector(state, !document.documentElement.classList.contains('projector'), true);
    scheduleUrlWrite(state);
  });
  $('model-load').addEventListener('click', () => loadModel(state, selectedEntry(state)));
  $('model-select').addEventListener('change', () => {
    updateLoadButton(state);
    scheduleUrlWrite(state);
    if (state.userEngaged) loadModel(state, selectedEntry(state));
  });
  $('run').addEventListener('click', () => runBenchmark(state));
  $('cancel').addEventListener('click', () => cancelBenchmark(state));
  $('show-extra').addEventListener('change', (e) => {
    $('results-table').classList.toggle('show-extra', /** @type {HTMLInputElement} */ (e.target).checked);
  });
  $('plot-file').addEventListener('change', () => renderPlot(state));
  $('plot-dim').addEventListener('change', () => renderPlot(state));
  $('export-json').addEventListener('click', () => exportJson(state));
  $('export-csv').addEventListener('click', () => exportCsv(state));
  $('shuffle-json').addEventListener('click', () => exportProbe(state, 'shuffle')); // the word-order probe
  $('layers-json').addEventListener('click', () => exportProbe(state, 'layers'));
  window.addEventListener('hashchange', () => onHashChange(state));
}

async function main() {
  const state = createState();
  const u = readUrlState();
  setupModelFold();
  renderExamples((ex) => {
    $('text-a').value = ex.a;
    $('text-b').value = ex.b;
    forgetShuffleSeed(state);
    textsChanged(state, 0);
  });
  setupBackend(state, u.backend, () => {
    scheduleUrlWrite(state);
    reloadIfEngaged(state); // otherwise the next load uses it
  });
  setProjector(state, u.view === 'projector');
  if (u.a === null && u.b === null) {
    $('text-a').value = EXAMPLES[0].a;
    $('text-b').value = EXAMPLES[0].b;
  } else {
    applyTextsFromUrl(u);
  }
  updateVerdict($('text-a').value, $('text-b').value);
  // A restarted engine (page/engine.js) gets back the model the dead one had.
  startEngine(state, { reloadModel: (had) => loadModel(state, had.local ? null : had.entry, had.local) });
  wire(state);
  setupWordOrder(state, (text) => setB(state, text));
  applyShuffleFromUrl(state, u);
  setupLocalModel(state);
  setupPrefix(state);
  setupOwnPairs(state);
  setupUrlModel(state);
  setupCompare(state);
  setupMeasured(state);
  setupLesson(state);
  setupQuiz(state);
  setupClass(state);
  openQuizFromUrl(state, u);
  setupOffline(state); // offline class mode
  document.addEventListener('sr-bench:model-loaded', () => refreshOffline(state));

  updatePlayground(state);
  try {
    state.manifest = await fetchManifest();
  } catch (err) {
    setMessage($('model-status'), `Could not read the model list: ${messageOf(err)}`, 'error');
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
  updateLoadButton(state);
  const entry = selectedEntry(state);
  if (!entry) return;
  // The first score without a click: the default (or the link's) model starts loading on
  // arrival, unless the browser asks to save data and the file is not here yet; then nothing
  // is downloaded until the Load button (which names the size) is pressed.
  if (!(await isCached(entry)) && saveDataAsked()) {
    setFolded(false);
    $('model-status').dataset.waiting = 'save-data';
    setMessage($('model-status'), `Your browser asks to save data, so nothing is downloaded until you press “Load model”: ` +
      `${entry.name} · ${entry.dtype} is a ${formatBytes(entry.bytes)} download, kept in the browser cache afterwards.`);
    setFoldSummary(`no model loaded: ${formatBytes(entry.bytes)} to download`);
    return;
  }
  loadModel(state, entry);
}

/** A quiz's link: the quiz on the questions its seed draws (they need no model); a class's
 * link (`class=CODE`): the class's quiz, as the class server says. */
/** @param {PageState} state */
async function openQuizFromUrl(state, u) {
  if (u.quiz === null && u.class === null) return;
  const joined = u.class !== null ? await joinClass(state, u.class) : null;
  if (joined) openQuiz(state, { seed: joined.seed, set: joined.set, questions: joined.questions, inClass: true });
  else openQuiz(state, { seed: Number(u.quiz), set: u.qset, questions: u.qn === null ? null : Number(u.qn) });
}

/** Whether the browser asks pages to save data (Chromium's Data Saver, `Save-Data`). */
function saveDataAsked() {
  const connection = /** @type {any} */ (navigator).connection;
  return !!(connection && connection.saveData === true);
}

main();
