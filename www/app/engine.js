// The engine worker (worker.js) as the page sees it: started once, restarted when it fails or
// stops answering, and then given back the model it had.

import { RpcClient } from '../rpc.js';
import { $, setMessage } from './ui.js';
import { loadModel } from './model-panel.js';
import { showCpuBuild } from './backend.js';

/** While a request waits, the engine is pinged this often… */
const PING_EVERY_MS = 2000;
/** …and taken for dead when a ping waits this long. A worker that stops (closed, killed) may fire
 * no event at all; a live one answers a ping between two steps of any work (a benchmark chunk,
 * a model load), which take seconds, not this long. */
const ENGINE_STALL_MS = 30_000;

export function startEngine(state) {
  const worker = new Worker(new URL('../worker.js', import.meta.url), { type: 'module', name: 'sr-bench-engine' });
  const client = new RpcClient(worker);
  worker.addEventListener('error', (e) => {
    e.preventDefault();
    const why = e.message || 'the engine script failed to load';
    if (state.loaded) restartEngine(state, `The engine stopped: ${why}.`, client);
    else setMessage($('model-status'), `The engine could not start: ${why}. Reload the page to try again.`, 'error');
  });
  worker.addEventListener('messageerror', () => {
    setMessage($('model-status'), 'The engine sent a message the page could not read.', 'error');
  });
  state.engine = client;
  watchEngine(state, client);
  // issue 15: the CPU build chosen by the page, told first; the engine answers with what its
  // wasm says it is. A failure needs no message here: the load, which needs the wasm too, says why.
  client.call('cpu-build', { build: state.cpuBuild.build }).then(
    ({ cpu_build: build }) => { if (state.engine === client) showCpuBuild(build, state.loaded?.backend_status?.active === 'webgpu'); },
    () => {},
  );
}

/** Pings the engine while anything waits on it; one ping unanswered for ENGINE_STALL_MS restarts it. */
function watchEngine(state, client) {
  let pingSent = null;
  const timer = setInterval(() => {
    if (state.engine !== client) {
      clearInterval(timer);
      return;
    }
    if (pingSent !== null) {
      if (performance.now() - pingSent > ENGINE_STALL_MS) {
        restartEngine(state, `The engine stopped answering (no answer for ${ENGINE_STALL_MS / 1000} s).`, client);
      }
      return;
    }
    if (client.pending.size === 0) return; // nothing waits on it
    pingSent = performance.now();
    client.call('ping').then(() => { pingSent = null; }, () => {});
  }, PING_EVERY_MS);
}

/**
 * Replaces the engine `client` (default: the current one) with a fresh worker: what waited on
 * the old one fails with code "engine" and `why`, and the model it had is loaded again (from the
 * browser cache, or the same local file) unless a load was under way (that one fails, and says
 * so). Does nothing when `client` was replaced already.
 */
export function restartEngine(state, why, client = state.engine) {
  if (state.engine !== client) return;
  const had = state.loaded;
  client.worker.terminate();
  state.loaded = null;
  startEngine(state);
  client.failAll(why);
  if (had && !state.loadingKey) {
    setMessage($('model-status'), `${why} It was restarted; loading ${had.info.name} · ${had.info.dtype} again…`, 'warning');
    loadModel(state, had.local ? null : had.entry, had.local);
  }
}
