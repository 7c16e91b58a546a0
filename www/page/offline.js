// @ts-check
// Offline class mode: registers the service worker (../sw.js) and says, in the model
// panel, when this browser holds everything for a lesson without network: the app and data
// (the service worker's cache for this build, complete) and the loaded model (the engine's
// sha256-checked model cache, protocol.js MODEL_CACHE).

import { $, setMessage } from './ui.js';
import { BASE_URL } from './state.js';
import { isCached } from './model-panel.js';

/** @typedef {import('./state.js').PageState} PageState */

/** How long the page waits for the service worker's answer about its cache. */
const ASK_TIMEOUT_MS = 5000;

let registration = null;

/** Registers the service worker once; resolves to the registration, or null where there is none. */
/** @param {PageState} state */
export async function setupOffline(state) {
  if (!('serviceWorker' in navigator)) {
    setMessage($('offline-status'), 'Offline use is not available in this browser (no service workers).', 'warning');
    return null;
  }
  try {
    registration = await navigator.serviceWorker.register(new URL('sw.js', BASE_URL), { scope: BASE_URL });
  } catch (err) {
    setMessage($('offline-status'), `Offline use is not available: ${err.message}`, 'warning');
    return null;
  }
  navigator.serviceWorker.addEventListener('controllerchange', () => refreshOffline(state));
  // A new build's worker that cannot store every file is dropped by the browser ("redundant").
  registration.addEventListener('updatefound', () => watchInstall(registration.installing));
  watchInstall(registration.installing);
  refreshOffline(state);
  return registration;
}

function watchInstall(worker) {
  if (!worker) return;
  worker.addEventListener('statechange', () => {
    if (worker.state !== 'redundant' || registration.active) return;
    const line = $('offline-status');
    line.dataset.ready = 'no';
    setMessage(line, 'Offline use could not be prepared: the browser could not store all of the app’s files (storage full or the site half-updated). Reload to try again.', 'warning');
  });
}

/** The active service worker's answer: {build, stored, total}. */
async function askShell() {
  const ready = await navigator.serviceWorker.ready;
  const worker = ready.active;
  if (!worker) return null;
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => resolve(null), ASK_TIMEOUT_MS);
    channel.port1.onmessage = (e) => { clearTimeout(timer); resolve(e.data); };
    worker.postMessage({ type: 'offline-status' }, [channel.port2]);
  });
}

/** Updates the offline line: call it after a model loads (and when the service worker changes). */
/** @param {PageState} state */
export async function refreshOffline(state) {
  if (!registration) return;
  const line = $('offline-status');
  if (!line.dataset.ready) setMessage(line, 'Preparing offline use: storing the app and the benchmark data in this browser…');
  const shell = await askShell();
  const complete = shell && shell.total > 0 && shell.stored === shell.total;
  const loaded = state.loaded;
  const entry = loaded && loaded.entry;
  const modelStored = entry && !entry.local && await isCached(entry);
  line.dataset.build = shell ? shell.build : '';
  if (!complete) {
    line.dataset.ready = 'no';
    setMessage(line, 'Preparing offline use: storing the app and the benchmark data in this browser…');
  } else if (!modelStored) {
    line.dataset.ready = 'app';
    setMessage(line, entry && entry.local
      ? 'The app and the data are stored in this browser; a model file from this computer is read from the computer, so for offline use load one of this site’s models once.'
      : 'The app and the data are stored in this browser; load a model once to use the site offline.');
  } else {
    line.dataset.ready = 'yes';
    setMessage(line, `Ready for offline use: app, data and ${entry.name} · ${entry.dtype} are stored in this browser.`);
  }
}
