// @ts-check
// Model file loading: Cache API first (verified), else a streamed fetch with byte progress,
// verified with SHA-256 against the build manifest, then stored in the cache.
// Runs inside the worker (Cache API, fetch and crypto.subtle all exist there).

import { MODEL_CACHE, modelCacheKey, ERR } from '../shared/protocol.js';
import { codedError, messageOf } from '../shared/errors.js';

/** Lowercase hex SHA-256 of the bytes. */
export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

async function openCache() {
  try {
    if (typeof caches === 'undefined') return null;
    return await caches.open(MODEL_CACHE);
  } catch {
    return null; // e.g. storage disabled: work without a cache
  }
}

/**
 * Stream `url` into one Uint8Array, reporting bytes as they arrive.
 * @param {string} url
 * @param {number} expected   bytes from the manifest (used when Content-Length is absent)
 * @param {(done: number, total: number) => void} onBytes
 * @param {AbortSignal} [signal]
 */
async function fetchBytes(url, expected, onBytes, signal) {
  let res;
  try {
    // no-store: the Cache API is our cache; the HTTP cache would only hold a second copy.
    res = await fetch(url, { cache: 'no-store', signal });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw codedError(ERR.NETWORK, `Could not download ${url}: ${messageOf(e)}`);
  }
  if (!res.ok) throw codedError(ERR.NETWORK, `Could not download ${url}: HTTP ${res.status}`);
  const header = Number(res.headers.get('content-length'));
  const total = Number.isFinite(header) && header > 0 ? header : expected;
  if (!res.body) {
    const buf = new Uint8Array(await res.arrayBuffer());
    onBytes(buf.length, total);
    return buf;
  }
  const reader = res.body.getReader();
  let out = new Uint8Array(total > 0 ? total : 1 << 20);
  let len = 0;
  onBytes(0, total);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (len + value.length > out.length) {
      const grown = new Uint8Array(Math.max(out.length * 2, len + value.length));
      grown.set(out.subarray(0, len));
      out = grown;
    }
    out.set(value, len);
    len += value.length;
    onBytes(len, total);
  }
  return len === out.length ? out : out.slice(0, len);
}

/**
 * Get the verified bytes of a model file.
 * @param {import('../shared/protocol.js').ModelEntry} entry
 * @param {string} baseUrl
 * @param {{onProgress: (phase: string, done: number, total: number, unit: string) => void,
 *          onNotice: (level: string, code: string, message: string) => void,
 *          signal?: AbortSignal}} hooks
 * @returns {Promise<{bytes: Uint8Array, source: 'cache'|'network', fetch_ms: number, verify_ms: number}>}
 */
export async function loadModelBytes(entry, baseUrl, { onProgress, onNotice, signal }) {
  const want = entry.sha256.toLowerCase();
  const key = modelCacheKey(baseUrl, entry);
  const url = new URL(`models/${encodeURIComponent(entry.file)}`, baseUrl).href;
  const cache = await openCache();
  if (!cache) onNotice('info', 'cache-unavailable', 'The browser cache is not available here: the model will be downloaded every time.');

  // 1. Cache hit: verify it; a mismatch means a corrupted entry — drop it and download again.
  if (cache) {
    const t0 = performance.now();
    const hit = await cache.match(key);
    if (hit) {
      onProgress('cache', 0, entry.bytes, 'bytes');
      const bytes = new Uint8Array(await hit.arrayBuffer());
      onProgress('cache', bytes.length, entry.bytes, 'bytes');
      const t1 = performance.now();
      onProgress('verify', 0, 1, 'steps');
      const got = await sha256Hex(bytes);
      const t2 = performance.now();
      if (got === want) return { bytes, source: 'cache', fetch_ms: t1 - t0, verify_ms: t2 - t1 };
      await cache.delete(key);
      onNotice('warning', 'cache-corrupt',
        `The cached copy of ${entry.file} is corrupted (sha256 ${got.slice(0, 12)}…, expected ${want.slice(0, 12)}…). ` +
        'It was removed and is being downloaded again.');
    }
  }

  // 2. Download with byte progress, verify, store.
  const t0 = performance.now();
  const bytes = await fetchBytes(url, entry.bytes, (done, total) => onProgress('download', done, total, 'bytes'), signal);
  const t1 = performance.now();
  onProgress('verify', 0, 1, 'steps');
  const got = await sha256Hex(bytes);
  const t2 = performance.now();
  if (got !== want) {
    throw codedError(ERR.HASH_MISMATCH,
      `The downloaded ${entry.file} does not match the manifest (sha256 ${got.slice(0, 12)}…, expected ${want.slice(0, 12)}…). ` +
      'The site may be half-updated: reload the page in a minute.');
  }
  if (cache) {
    try {
      // Drop entries of the same file with another hash (an older build of the model).
      for (const req of await cache.keys()) {
        const u = new URL(req.url);
        if (u.pathname === new URL(url).pathname && req.url !== key) await cache.delete(req);
      }
      await cache.put(key, new Response(bytes, {
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) },
      }));
    } catch (e) {
      onNotice('info', 'cache-full', `The model could not be stored in the browser cache (${messageOf(e)}); it will be downloaded again next time.`);
    }
  }
  return { bytes, source: 'network', fetch_ms: t1 - t0, verify_ms: t2 - t1 };
}
