// @ts-check
// "Keep this file in this browser": a model file from this computer, stored (when the user ticks
// the box) in this origin's Cache API storage, so that the next visit can offer it again; with a
// visible "Forget" button. Only one file is kept; nothing is sent anywhere (Cache API writes
// are local). The kept file goes through the same inspection as a picked one.

import { $, formatBytes, setMessage } from './ui.js';
import { setFolded } from './model-fold.js';

/** The Cache API cache holding the kept file (one entry). */
export const KEPT_CACHE = 'sr-bench-local-file-v1';
/** Its key: a same-origin URL that is never requested. */
const KEPT_KEY = 'kept-model-file';

async function openKept() {
  try {
    return typeof caches === 'undefined' ? null : await caches.open(KEPT_CACHE);
  } catch {
    return null;
  }
}

/** The kept file as a File, with its sha256 as stored, or null. */
export async function readKept() {
  if (typeof caches === 'undefined' || !(await caches.has(KEPT_CACHE))) return null; // open() would make it
  const cache = await openKept();
  const hit = cache && await cache.match(KEPT_KEY);
  if (!hit) return null;
  const name = decodeURIComponent(hit.headers.get('x-file-name') || 'model.gguf');
  const blob = await hit.blob();
  return { file: new File([blob], name), sha256: hit.headers.get('x-sha256') || '' };
}

/** Stores `file` (replacing any kept one); returns an error message or null. */
export async function keepFile(file, sha256) {
  const cache = await openKept();
  if (!cache) return 'this browser gives the page no storage';
  try {
    await cache.put(KEPT_KEY, new Response(file, {
      headers: {
        'content-type': 'application/octet-stream',
        'x-file-name': encodeURIComponent(file.name),
        'x-sha256': sha256,
      },
    }));
    return null;
  } catch (e) {
    return e && e.name === 'QuotaExceededError' ? 'the browser’s storage for this site is full' : String(e && e.message);
  }
}

export async function forgetKept() {
  try {
    if (typeof caches !== 'undefined') await caches.delete(KEPT_CACHE);
  } catch { /* nothing kept */ }
}

/** Shows (or hides) the "kept from your last visit" line. */
export async function renderKept() {
  const line = $('kept');
  const kept = await readKept().catch(() => null);
  line.hidden = !kept;
  if (kept) {
    $('kept-text').textContent = `Kept in this browser: ${kept.file.name} (${formatBytes(kept.file.size)}, sha256 ${kept.sha256.slice(0, 12)}…).`;
    line.dataset.sha256 = kept.sha256;
  } else {
    delete line.dataset.sha256;
  }
  return kept;
}

/** After a local file loaded: keep it when the box is ticked, and say so. */
export async function keepIfAsked(file, sha256) {
  if (!$('local-keep').checked) return;
  const why = await keepFile(file, sha256);
  if (why) setMessage($('local-status'), `${file.name} is loaded but could not be kept for the next visit: ${why}.`, 'warning');
  await renderKept();
}

/** Wires "Use it" (hands the kept File to `pick`) and "Forget". */
export function setupKept(pick) {
  $('kept-use').addEventListener('click', async () => {
    const kept = await readKept();
    if (kept) pick(kept.file);
    else await renderKept();
  });
  $('kept-forget').addEventListener('click', async () => {
    await forgetKept();
    await renderKept();
    setMessage($('local-status'), 'The kept file was removed from this browser’s storage.', 'info');
  });
  // A file the visitor kept is what they come back for: the panel opens on its offer.
  renderKept().then((kept) => { if (kept) setFolded(false); });
}
