// @ts-check
// How much of the device the engine's helpers may take: pure functions of the browser's figures
// (cores, navigator.deviceMemory) and of Rust's estimate of one helper's memory. Shared: the page
// checks a local model file against `memoryBudget()` before it asks the engine to load it, and
// the engine sizes its pool of embedding helpers with `defaultPoolSize` (engine/pool.js).

/** Most helpers we start, whatever the core count. */
const MAX_HELPERS = 8;
/** Memory we let the helpers take together, at most: 2 GB, or a quarter of the device's RAM. */
const MEMORY_BUDGET = 2e9;

/** The navigator's figures this file reads (deviceMemory: GB, Chromium only); none outside a browser.
 * @returns {{hardwareConcurrency?: number, deviceMemory?: number}} */
function nav() {
  return typeof navigator !== 'undefined' ? navigator : {};
}

/**
 * The memory the page lets its wasm instances take, in bytes: MEMORY_BUDGET, or a quarter of
 * the device's RAM where the browser says (navigator.deviceMemory, GB, Chromium only: it is
 * what keeps a phone-class tab alive). A model file whose one instance needs more is refused.
 * @returns {number}
 */
export function memoryBudget() {
  const { deviceMemory } = nav();
  return deviceMemory ? Math.min(MEMORY_BUDGET, (deviceMemory * 1e9) / 4) : MEMORY_BUDGET;
}

/**
 * How many helpers to start: one per logical core, at most MAX_HELPERS, fewer for big models.
 * `workerBytes`: what one helper needs (its weights as held in wasm plus one batch's
 * activations), estimated by Rust: `Model.estimate_worker_bytes()` / `estimate_worker_bytes(info)`.
 * This side only knows the browser's budget: cores and navigator.deviceMemory.
 * @param {number|bigint} workerBytes
 * @returns {number}
 */
export function defaultPoolSize(workerBytes) {
  const cores = nav().hardwareConcurrency || 1;
  const budget = memoryBudget();
  const bytes = Number(workerBytes);
  const byMemory = bytes > 0 ? Math.floor(budget / bytes) : 1; // unknown: no pool
  return Math.max(1, Math.min(cores, MAX_HELPERS, byMemory));
}
