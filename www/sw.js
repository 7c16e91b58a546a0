// @ts-check
/// <reference lib="webworker" />
// Offline class mode: the service worker. It keeps the app shell, the wasm engine,
// the benchmark data and the model list in one cache per build, and serves them from there, so
// that after one visit with a model loaded the site works with the network off.
//
// Model files are NOT handled here: their requests go to the network untouched. The engine
// worker keeps models in the Cache API itself (shared/protocol.js MODEL_CACHE, engine/cache.js: keyed by URL +
// ?sha256=, verified on every read), and reads them from there first, so offline they come
// from that verified store and never from this worker.
//
// Responses are stored as the server sent them, headers included (CSP, COOP/COEP, content
// types), so a page served from here is the same page. assemble.sh fills BUILD and PRECACHE in
// the built site: a new build changes this file, the browser installs it, and its activation
// drops the older shell caches.

// assemble.sh replaces the `const BUILD` and `const PRECACHE` lines in www/dist/sw.js.
const BUILD = 'unassembled';
/** @type {string[]} */
const PRECACHE = [];

/** This worker's global (the WebWorker library types `self` as any worker's). */
const sw = /** @type {ServiceWorkerGlobalScope} */ (/** @type {unknown} */ (self));

const SHELL_PREFIX = 'sr-bench-shell-';
const SHELL_CACHE = `${SHELL_PREFIX}${BUILD}`;
const SCOPE = new URL('./', sw.location.href).href;
const PRECACHED = new Set(PRECACHE.map((p) => new URL(p, SCOPE).href));

sw.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(SHELL_CACHE);
    // cache: 'reload' — the server's copy, not the HTTP cache's. addAll is all or nothing.
    await cache.addAll(PRECACHE.map((p) => new Request(new URL(p, SCOPE).href, { cache: 'reload' })));
    await sw.skipWaiting();
  })());
});

sw.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(SHELL_PREFIX) && name !== SHELL_CACHE) await caches.delete(name);
    }
    await sw.clients.claim();
  })());
});

/** The shell URL a request is answered from, or null (then the network answers it). */
function shellUrl(request) {
  if (request.method !== 'GET') return null;
  const url = new URL(request.url);
  url.hash = '';
  if (request.mode === 'navigate') {
    url.search = ''; // the page's state lives in the hash; a query never changes the document
    if (url.href === SCOPE) url.href = new URL('index.html', SCOPE).href;
  }
  return PRECACHED.has(url.href) ? url.href : null;
}

sw.addEventListener('fetch', (event) => {
  const url = shellUrl(event.request);
  if (!url) return;
  event.respondWith((async () => {
    const cache = await caches.open(SHELL_CACHE);
    const hit = await cache.match(url);
    return hit || fetch(event.request);
  })());
});

// The page asks whether this build's shell is complete: {build, stored, total}.
sw.addEventListener('message', (event) => {
  if (!event.data || event.data.type !== 'offline-status' || !event.ports[0]) return;
  event.waitUntil((async () => {
    const cache = await caches.open(SHELL_CACHE);
    const keys = new Set((await cache.keys()).map((r) => r.url));
    const stored = [...PRECACHED].filter((u) => keys.has(u)).length;
    event.ports[0].postMessage({ build: BUILD, stored, total: PRECACHED.size });
  })());
});
