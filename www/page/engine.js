// @ts-check
// The engine worker (engine/worker.js) as the page sees it: the page's one way to the engine.
// Started once, restarted when it fails or stops answering, and then given back the model it had.
//
// Restarting is owned here: `restartEngine` is the one function that replaces a dead engine, used
// by the worker's `error` event, the ping watchdog below and every panel whose request failed
// with code "engine" (`restartIfEngineFailed`). Giving the model back is the model panel's job:
// main.js passes it in (`startEngine(state, {reloadModel})`), so this module imports no panel.

import { ERR, REQ } from '../shared/protocol.js';
import { RpcClient } from '../shared/rpc.js';
import { $, setMessage } from './ui.js';

/** @typedef {import('./state.js').PageState} PageState */

/** @typedef {import('../shared/protocol.js').EngineRequests} EngineRequests */
/** @typedef {RpcClient<EngineRequests>} EngineClient */
/** @typedef {NonNullable<PageState['loaded']>} Loaded */

/** While a request waits, the engine is pinged this often… */
const PING_EVERY_MS = 2000;
/** …and taken for dead when a ping waits this long. A worker that stops (closed, killed) may fire
 * no event at all; a live one answers a ping between two steps of any work (a benchmark chunk,
 * a model load), which take seconds, not this long. */
const ENGINE_STALL_MS = 30_000;

/** What a restarted engine is given back: set by `startEngine`. @type {(loaded: Loaded) => void} */
let reloadModel = () => {};

/**
 * Starts the engine worker and makes its client `state.engine`.
 * @param {PageState} state
 * @param {{reloadModel?: (loaded: Loaded) => void}} [hooks]  `reloadModel`: loads the model a
 *   dead engine had into its replacement (the model panel's `loadModel`)
 */
/** @param {PageState} state */
export function startEngine(state, hooks = {}) {
  if (hooks.reloadModel) reloadModel = hooks.reloadModel;
  const worker = new Worker(new URL('../engine/worker.js', import.meta.url), { type: 'module', name: 'sr-bench-engine' });
  const client = /** @type {EngineClient} */ (new RpcClient(worker));
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
}

/**
 * Pings the engine while anything waits on it; one ping unanswered for ENGINE_STALL_MS restarts it.
 * @param {PageState} state
 * @param {EngineClient} client
 */
/** @param {PageState} state */
function watchEngine(state, client) {
  /** @type {number|null} */
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
    client.call(REQ.PING).then(() => { pingSent = null; }, () => {});
  }, PING_EVERY_MS);
}

/**
 * Replaces the engine `client` (default: the current one) with a fresh worker: what waited on
 * the old one fails with code "engine" and `why`, and the model it had is loaded again (from the
 * browser cache, or the same local file) unless a load was under way (that one fails, and says
 * so). Does nothing when `client` was replaced already.
 * @param {PageState} state
 * @param {string} why
 * @param {EngineClient|null} [client]
 */
/** @param {PageState} state */
export function restartEngine(state, why, client = state.engine) {
  if (!client || state.engine !== client) return;
  const had = state.loaded;
  client.worker.terminate();
  state.loaded = null;
  startEngine(state);
  client.failAll(why);
  if (had && !state.loadingKey) {
    setMessage($('model-status'), `${why} It was restarted; loading ${had.info.name} · ${had.info.dtype} again…`, 'warning');
    reloadModel(had);
  }
}

/**
 * A request to `client` failed with `err`: when its code says the engine itself failed
 * (ERR.ENGINE: a trap, a worker that died), the engine is restarted (`restartEngine`).
 * Returns whether it was.
 * @param {PageState} state
 * @param {{code?: string, message?: string}} err
 * @param {EngineClient|null} client  the client the request went to
 * @param {string} [why]  what the restart message says (default: the error's message)
 * @returns {boolean}
 */
/** @param {PageState} state */
export function restartIfEngineFailed(state, err, client, why = err.message || 'The engine failed.') {
  if (!err || err.code !== ERR.ENGINE) return false;
  restartEngine(state, why, client);
  return true;
}
