// @ts-check
// Step 3, the benchmark: run (split, encoder) with progress, sentences/s and ETA; cancel.

import { ERR, REQ, SR_FILES } from '../shared/protocol.js';
import { $, formatDuration, nf0, setMessage } from './ui.js';
import { BASE_URL } from './state.js';
import { renderBackend } from './backend.js';
import { renderResults } from './results.js';
import { restartIfEngineFailed } from './engine.js';
import { recordRun } from './compare.js';
import { PROBE_LABELS, renderProbes, tickedProbes } from './probes.js';

/** @typedef {import('./state.js').PageState} PageState */
/** @typedef {import('../shared/protocol.js').EvaluateRequest} EvaluateRequest */

function setRunning(running) {
  $('cancel').disabled = !running;
  $('run').classList.toggle('busy', running);
  document.body.dataset.run = running ? 'running' : 'idle';
}

/** Counted progress (sentences or pairs): the bar, "done of total unit", the rate and ETA. */
function showCounted(run, m, label, unit, withRate) {
  const bar = $('run-progress');
  const stats = $('run-stats');
  run.done = m.done;
  run.total = m.total;
  bar.max = Math.max(1, m.total);
  bar.value = m.done;
  const rate = m.elapsed_ms > 0 ? m.done / (m.elapsed_ms / 1000) : 0;
  const eta = rate > 0 ? ((m.total - m.done) / rate) * 1000 : NaN;
  stats.textContent = `${label}${nf0.format(m.done)} of ${nf0.format(m.total)} ${unit}` +
    (rate > 0 ? `${withRate ? ` · ${rate.toFixed(1)} ${unit}/s` : ''} · about ${formatDuration(eta)} left` : '');
  stats.dataset.done = String(m.done);
  stats.dataset.total = String(m.total);
}

function showProgress(run, m) {
  const bar = $('run-progress');
  const stats = $('run-stats');
  run.phase = m.phase;
  if (m.phase === 'data') {
    bar.max = Math.max(1, m.total);
    bar.value = m.done;
    stats.textContent = `Fetching the benchmark files: ${m.done} of ${m.total}`;
  } else if (m.phase === 'prepare' && m.unit === 'workers') {
    stats.textContent = `Starting ${m.total} engine workers (one per core)…`;
  } else if (m.phase === 'evaluate') {
    showCounted(run, m, '', 'sentences', true);
  } else if (m.phase === 'probe') { // a probe after the benchmark
    showCounted(run, m, `${PROBE_LABELS[run.probe]}: `, 'pairs', false);
    stats.dataset.probe = run.probe;
  }
}

/** The probes: runs each ticked probe on the loaded model, one after the other, as the same
 * run (one progress bar; Cancel stops the probe in flight: `state.run.id` follows it). */
/** @param {PageState} state */
async function runProbes(state, probes, split, load) {
  for (const { kind, seeds } of probes) {
    const seedNote = kind === 'shuffle' ? `, ${seeds} seed${seeds === 1 ? '' : 's'}` : '';
    setMessage($('run-msg'), `Running the ${PROBE_LABELS[kind].toLowerCase()} (${split} split${seedNote})…`);
    const { id, promise } = state.engine.start(REQ.PROBE, { kind, split, seeds, baseUrl: BASE_URL }, {
      onProgress: (m) => { if (state.run && state.run.id === id) showProgress(state.run, m); },
    });
    Object.assign(state.run, { id, probe: kind, done: 0, total: 0, phase: 'data' });
    const value = await promise;
    state.probes[kind] = { result: value.result, timings: value.timings, split, seeds, load };
    renderProbes(state);
  }
}

/** Why a run cannot start now, or null. */
/** @param {PageState} state @param {RunChoice} choice */
function blocker(state, choice) {
  if (state.run) {
    const pct = state.run.total ? Math.floor((100 * state.run.done) / state.run.total) : 0;
    return `A benchmark is already running (${pct} % done). Cancel it first, or wait for it to finish.`;
  }
  if (state.loadingKey) return 'Wait for the model to finish loading, then run the benchmark.';
  if (!state.loaded) return 'Load a model first (step 1).';
  if (!choice.own && !choice.files.length && !choice.stsb_test && !choice.czech) return 'Tick at least one data set under Data.';
  return null;
}

/** "2 of 6 SR files (askubuntu, biosses), no STS-B test" for a run of part of the data; '' for all.
 * @param {RunChoice} choice */
function dataNote({ files, stsb_test, czech = false, own = null }) {
  if (own) return `your own pairs, ${own.name}`;
  const parts = [];
  if (!files.length) parts.push('no SR file');
  else if (files.length < SR_FILES.length) parts.push(`${files.length} of ${SR_FILES.length} SR files (${files.join(', ')})`);
  if (!stsb_test) parts.push('no STS-B test');
  if (czech) parts.push('Czech News STS');
  return parts.join(', ');
}

/** @typedef {{split: EvaluateRequest['split'], encoder: EvaluateRequest['encoder'], files: string[],
 *   stsb_test: boolean, czech?: boolean, own?: File|null, probes: ReturnType<typeof tickedProbes>}} RunChoice */

/** What the benchmark panel asks for: split, encoder, the ticked SR files (SR_FILES order) and
 * STS-B test, and the ticked probes (the inputs' values are the protocol's: index.html).
 * @returns {RunChoice} */
function panelChoice(state) {
  const ticked = [...document.querySelectorAll('input[name="sr-file"]:checked')].map((i) => /** @type {HTMLInputElement} */ (i).value);
  return {
    split: /** @type {EvaluateRequest['split']} */ (/** @type {HTMLInputElement} */ (document.querySelector('input[name="split"]:checked')).value),
    encoder: /** @type {EvaluateRequest['encoder']} */ ($('encoder').value),
    files: SR_FILES.filter((f) => ticked.includes(f)),
    stsb_test: /** @type {HTMLInputElement} */ ($('bench-stsb-test')).checked,
    czech: $('bench-czech').checked,
    own: state.ownPairs,
    probes: tickedProbes(),
  };
}

/** A plain run of the whole benchmark (the Lesson's). @param {EvaluateRequest['split']} split
 * @returns {RunChoice} */
export function wholeBenchmark(split) {
  return { split, encoder: 'model', files: [...SR_FILES], stsb_test: true, probes: [] };
}

/** Runs `choice` (by default the panel's; the Lesson asks for a plain quick run of the model). */
/** @param {PageState} state @param {RunChoice} choice */
export async function runBenchmark(state, choice = panelChoice(state)) {
  const msg = $('run-msg');
  const why = blocker(state, choice);
  if (why) {
    setMessage(msg, why, 'warning');
    return;
  }
  const { split, encoder, files, stsb_test, czech = false, own = null } = choice;
  const probes = own ? [] : choice.probes; // the probes read STS-B test, not the user's file
  const note = dataNote(choice);
  const load = state.loaded;
  const bar = $('run-progress');
  const stats = $('run-stats');
  bar.hidden = false;
  bar.removeAttribute('value');
  stats.textContent = '';
  setMessage(msg, `Running the ${split} split${note ? ` (${note})` : ''} with ${encoder === 'static' ? 'the syntax-blind baseline of ' : ''}${load.info.name} · ${load.info.dtype}…`);
  const engine = state.engine;
  const { id, promise } = engine.start(REQ.EVALUATE, { split, encoder, files, stsb_test, czech, ...(own ? { own } : {}), baseUrl: BASE_URL }, {
    onProgress: (m) => { if (state.run && state.run.id === id) showProgress(state.run, m); },
    // The GPU's notices (e.g. it failed mid-run and the CPU took over), as they happen.
    onNotice: (m) => {
      if (m.backend_status) renderBackend(m.backend_status);
      if (m.code === 'helper-replaced' && state.run && state.run.id === id) {
        state.run.replaced++;
        setMessage(msg, m.message, 'warning');
      }
    },
  });
  const run = { id, split, encoder, done: 0, total: 0, phase: 'data', replaced: 0 }; // `id` follows the probes
  state.run = run;
  state.probes = {};
  renderProbes(state);
  setRunning(true);
  try {
    const value = await promise;
    state.result = {
      report: value.report, pairs_csv: value.pairs_csv, timings: value.timings, load,
      czech_baseline: value.czech_baseline || null,
      backend_status: value.backend_status || null, finished_at: new Date().toISOString(),
    };
    if (value.backend_status) renderBackend(value.backend_status);
    const t = value.timings;
    setMessage(msg, `Done: ${nf0.format(t.sentences)} sentences in ${formatDuration(t.total_ms)}` +
      (t.sentences_per_s ? ` (${t.sentences_per_s.toFixed(1)} sentences/s` +
        (t.gpu ? ' on WebGPU' : t.workers > 1 ? ` on ${t.workers} workers` : '') +
        (t.gflop_per_s ? `, ${t.gflop_per_s.toFixed(1)} GFLOP/s` +
          (t.gflop_per_s_per_core && t.workers > 1 ? `, ${t.gflop_per_s_per_core.toFixed(1)} per core` : '') : '') +
        ').' : '.') +
      (run.replaced ? ` ${run.replaced} engine helper(s) stopped during the run and were replaced; their sentences were redone.` : ''));
    renderResults(state);
    recordRun(state, state.result);
    if (probes.length) {
      const done = msg.textContent;
      await runProbes(state, probes, split, load);
      setMessage(msg, `${done} Probes done: ${probes.map((p) => PROBE_LABELS[p.kind].toLowerCase()).join(', ')}.`);
    }
  } catch (err) {
    const what = run.probe ? PROBE_LABELS[run.probe] : 'Benchmark';
    const subject = run.probe ? `The ${what.toLowerCase()}` : 'The benchmark';
    if (err.code === ERR.CANCELLED) {
      setMessage(msg, err.reason === 'model-changed'
        ? `${what} cancelled because the model was changed. Run it again for the new model.`
        : `${what} cancelled.`, 'warning');
    } else if (err.code === ERR.ENGINE || err.code === ERR.INTERRUPTED) {
      // A worker died mid-run: nothing of this run (or probe) is shown (results below, if any, are
      // complete ones); the engine is restarted with the model it had.
      setMessage(msg, `${subject} was interrupted: ${err.message} ` +
        `${run.probe ? 'None of its numbers are shown' : 'No results from this run are shown'}: run it again when the model is ready.`, 'error');
      restartIfEngineFailed(state, err, engine);
    } else {
      setMessage(msg, `${subject} failed: ${err.message}`, 'error');
    }
  } finally {
    if (state.run === run) state.run = null;
    bar.hidden = true;
    stats.textContent = '';
    delete stats.dataset.done;
    delete stats.dataset.total;
    delete stats.dataset.probe;
    setRunning(false);
  }
}

/** @param {PageState} state */
export async function cancelBenchmark(state) {
  if (!state.run) {
    setMessage($('run-msg'), 'No benchmark is running.', 'info');
    return;
  }
  setMessage($('run-msg'), 'Cancelling…', 'warning');
  try {
    await state.engine.call(REQ.CANCEL, { target: state.run.id });
  } catch (err) {
    setMessage($('run-msg'), `Could not cancel: ${err.message}`, 'error');
  }
}
