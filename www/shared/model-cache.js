// @ts-check
// The model cache (Cache API cache `MODEL_CACHE`, keys `modelCacheKey`: protocol.js) is one store
// of this origin, open to the page and the engine alike. The engine owns it: it downloads, checks
// and stores the files there (engine/cache.js). The page only asks whether a file is there, to
// load a model at once on a later visit (no download, so no click needed) and for the offline
// line; that question needs no engine, so it is answered here, read-only.

import { MODEL_CACHE, modelCacheKeys } from './protocol.js';

/**
 * Whether the model cache holds `entry` whole (its URL with its sha256, or every part of it).
 * Never throws: no Cache API (an insecure context) or a failing one means "no".
 * @param {string} baseUrl  the site root, ending with "/"
 * @param {import('./protocol.js').ModelEntry} entry
 * @returns {Promise<boolean>}
 */
export async function isModelCached(baseUrl, entry) {
  try {
    if (typeof caches === 'undefined') return false;
    const cache = await caches.open(MODEL_CACHE);
    for (const key of modelCacheKeys(baseUrl, entry)) {
      if (!(await cache.match(key))) return false;
    }
    return true;
  } catch {
    return false;
  }
}
