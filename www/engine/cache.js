// @ts-check
// Model file loading: Cache API first (verified), else a streamed fetch with byte progress,
// verified with SHA-256 against the build manifest, then stored in the cache. A model in parts
// (`sr-bench site`) is fetched PART_CONCURRENCY parts at a time, each verified on arrival and
// stored on its own, so a dropped connection costs only the parts not yet in; the parts are
// copied into one buffer as they come (no second full copy) and the whole is verified too.
// Runs inside the worker (Cache API, fetch and crypto.subtle all exist there).

import { MODEL_CACHE, modelBase, modelCacheKey, ERR } from '../shared/protocol.js';
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
    // No referrer and no credentials go to a model host of another origin.
    res = await fetch(url, { cache: 'no-store', signal, referrerPolicy: 'no-referrer', credentials: 'omit', mode: 'cors' });
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
  if (Array.isArray(entry.parts) && entry.parts.length) return loadParts(entry, baseUrl, { onProgress, onNotice, signal });
  const want = entry.sha256.toLowerCase();
  const key = modelCacheKey(baseUrl, entry);
  const url = new URL(encodeURIComponent(entry.file), modelBase(baseUrl, entry)).href;
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
  await store(cache, key, bytes, 'The model', onNotice);
  return { bytes, source: 'network', fetch_ms: t1 - t0, verify_ms: t2 - t1 };
}

/** Stores verified `bytes` under `key` (a URL with its sha256), first dropping entries of the
 * same URL with another hash (an older build of the file). A full cache is a notice: `what`
 * ("The model", "A part") is then downloaded again next time. */
async function store(cache, key, bytes, what, onNotice) {
  if (!cache) return;
  try {
    const path = new URL(key).pathname;
    for (const req of await cache.keys()) {
      if (new URL(req.url).pathname === path && req.url !== key) await cache.delete(req);
    }
    await cache.put(key, new Response(bytes, {
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) },
    }));
  } catch (e) {
    onNotice('info', 'cache-full', `${what} could not be stored in the browser cache (${messageOf(e)}); it will be downloaded again next time.`);
  }
}

/** Parts downloaded at once: a few connections fill a link; more only compete. */
export const PART_CONCURRENCY = 3;

/** A cached part's bytes if its sha256 holds (a damaged entry is dropped), else null. */
async function cachedPart(cache, key, want) {
  if (!cache) return null;
  const hit = await cache.match(key);
  if (!hit) return null;
  const bytes = new Uint8Array(await hit.arrayBuffer());
  if ((await sha256Hex(bytes)) === want) return bytes;
  await cache.delete(key);
  return null;
}

/**
 * A model in parts: the cached ones first (each verified), the rest PART_CONCURRENCY at a time;
 * each part is verified as it arrives, stored, and copied into the one buffer the model is
 * read from. The progress counts bytes of the whole model. A failed part stops new downloads,
 * lets those under way finish (they are stored too) and fails naming the part; loading again
 * fetches only what is missing.
 * @param {import('../shared/protocol.js').ModelEntry} entry
 */
async function loadParts(entry, baseUrl, { onProgress, onNotice, signal }) {
  const parts = entry.parts || [];
  const total = parts.reduce((n, p) => n + p.bytes, 0);
  if (total !== entry.bytes) {
    throw codedError(ERR.HASH_MISMATCH, `The manifest's parts of ${entry.file} add up to ${total} bytes, not ${entry.bytes}.`);
  }
  const base = modelBase(baseUrl, entry);
  const cache = await openCache();
  if (!cache) onNotice('info', 'cache-unavailable', 'The browser cache is not available here: the model will be downloaded every time.');
  const out = new Uint8Array(entry.bytes);
  const offsets = [];
  parts.reduce((at, p) => { offsets.push(at); return at + p.bytes; }, 0);
  const done = new Array(parts.length).fill(0);
  const report = (phase) => onProgress(phase, done.reduce((a, b) => a + b, 0), entry.bytes, 'bytes');
  const keyOf = (p) => modelCacheKey(baseUrl, { file: p.file, sha256: p.sha256, base_url: entry.base_url });
  const t0 = performance.now();
  const missing = [];
  for (let i = 0; i < parts.length; i++) {
    const bytes = await cachedPart(cache, keyOf(parts[i]), parts[i].sha256.toLowerCase());
    if (bytes && bytes.length === parts[i].bytes) {
      out.set(bytes, offsets[i]);
      done[i] = bytes.length;
      report('cache');
    } else {
      missing.push(i);
    }
  }
  const stored = () => done.filter((d, i) => d === parts[i].bytes).length;
  /** The first part that failed. @type {{i: number, e: any}|null} */
  let failure = null;
  const queue = [...missing];
  const fetchOne = async (i) => {
    const p = parts[i];
    const name = `part ${i + 1} of ${parts.length} (${p.file})`;
    const url = new URL(encodeURIComponent(p.file), base).href;
    const bytes = await fetchBytes(url, p.bytes, (got) => { done[i] = Math.min(got, p.bytes); report('download'); }, signal);
    const got = await sha256Hex(bytes);
    if (bytes.length !== p.bytes || got !== p.sha256.toLowerCase()) {
      done[i] = 0;
      throw codedError(ERR.HASH_MISMATCH, `The downloaded ${name} is damaged (${bytes.length} bytes, sha256 ${got.slice(0, 12)}…; ` +
        `the manifest says ${p.bytes} bytes, ${p.sha256.slice(0, 12)}…); it was not kept.`);
    }
    out.set(bytes, offsets[i]);
    await store(cache, keyOf(p), bytes, 'A part', onNotice);
  };
  const worker = async () => {
    while (queue.length && !failure) {
      const i = queue.shift();
      try {
        await fetchOne(i);
      } catch (e) {
        if (e && e.name === 'AbortError') throw e;
        failure ??= { i, e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PART_CONCURRENCY, queue.length) }, worker));
  if (failure !== null) {
    const { i, e } = /** @type {{i: number, e: any}} */ (failure);
    const n = parts.length;
    const have = stored();
    throw codedError(e.code || ERR.NETWORK, `${entry.file}: part ${i + 1} of ${n} (${parts[i].file}) failed: ${messageOf(e)} ` +
      `${have} of ${n} parts are stored in this browser: loading the model again fetches only the other ${n - have}.`);
  }
  const t1 = performance.now();
  onProgress('verify', 0, 1, 'steps');
  const whole = await sha256Hex(out);
  const t2 = performance.now();
  if (whole !== entry.sha256.toLowerCase()) {
    if (cache) for (const p of parts) await cache.delete(keyOf(p));
    throw codedError(ERR.HASH_MISMATCH, `The parts of ${entry.file} make a file that does not match the manifest ` +
      `(sha256 ${whole.slice(0, 12)}…, expected ${entry.sha256.slice(0, 12)}…); they were dropped. Reload the page in a minute.`);
  }
  /** @type {'network'|'cache'} */
  const source = missing.length ? 'network' : 'cache';
  return { bytes: out, source, fetch_ms: t1 - t0, verify_ms: t2 - t1 };
}
