// @ts-check
// Errors shared by the page, the engine worker and its helpers: one way to make an error that
// carries a machine-readable `code` (one of protocol.js's ERR; the wasm API sets `code` itself),
// one way to turn anything thrown into plain text, and one way to answer a failed request.

import { ERR } from './protocol.js';

/** @typedef {Error & {code?: string, reason?: string}} CodedError */

/**
 * An Error with `code` (one of ERR) and, for "cancelled", a `reason`.
 * @param {string} code
 * @param {string} message
 * @param {string} [reason]
 * @returns {CodedError}
 */
export function codedError(code, message, reason) {
  const e = /** @type {CodedError} */ (new Error(message));
  e.code = code;
  if (reason) e.reason = reason;
  return e;
}

/**
 * Plain text for anything thrown (an Error, a string, an object from a worker).
 * @param {unknown} e
 * @returns {string}
 */
export function messageOf(e) {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try { return JSON.stringify(e); } catch { return String(e); }
}

/**
 * `{code, message}` of a failed request: a coded error (ours, or the wasm API's, whose `code`
 * Rust sets) keeps its code; anything else (a trap, WebAssembly.RuntimeError, a bug) is "engine".
 * @param {any} err
 * @returns {{code: string, message: string}}
 */
export function describeError(err) {
  if (err instanceof WebAssembly.RuntimeError) {
    return { code: ERR.ENGINE, message: `The engine crashed (${messageOf(err)}). Reload the page.` };
  }
  return { code: (err && err.code) || ERR.ENGINE, message: messageOf(err) };
}
