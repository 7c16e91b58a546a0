// The request/response layer of both worker protocols: the page ↔ the engine worker (worker.js,
// messages in protocol.js) and the engine ↔ its embedding helpers (pool.js ↔ embed-worker.js).
//
// A request `{type, id, …payload}` carries a fresh id; the answering side sends any number of
// `progress` / `notice` messages with that id, then exactly one `result` (`value`) or `error`
// (`code`, `message`, `reason?`). `RpcClient` is the asking side, `serve` the answering one.

import { ERR } from './protocol.js';
import { codedError, describeError } from './errors.js';

/**
 * `call(type, payload, {onProgress, onNotice, transfer})` → Promise of the result value;
 * rejects with an Error carrying the answer's `code` (and `reason`).
 */
export class RpcClient {
  /** @param {Worker} worker */
  constructor(worker) {
    this.worker = worker;
    this.nextId = 1;
    /** @type {Map<number, {resolve: Function, reject: Function, onProgress?: Function, onNotice?: Function}>} */
    this.pending = new Map();
    worker.addEventListener('message', (e) => this.#onMessage(e.data));
  }

  /**
   * @param {string} type
   * @param {object} [payload]
   * @param {{onProgress?: (m: object) => void, onNotice?: (m: object) => void, transfer?: Transferable[]}} [hooks]
   * @returns {{id: number, promise: Promise<any>}}
   */
  start(type, payload = {}, hooks = {}) {
    const id = this.nextId++;
    const promise = new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress: hooks.onProgress, onNotice: hooks.onNotice });
    });
    this.worker.postMessage({ ...payload, type, id }, hooks.transfer || []);
    return { id, promise };
  }

  call(type, payload, hooks) {
    return this.start(type, payload, hooks).promise;
  }

  /** Rejects everything in flight with code "engine" (the worker died or was stopped). */
  failAll(message) {
    for (const [, p] of this.pending) p.reject(codedError(ERR.ENGINE, message));
    this.pending.clear();
  }

  #onMessage(msg) {
    const p = this.pending.get(msg && msg.id);
    if (!p) return;
    if (msg.type === 'progress') {
      if (p.onProgress) p.onProgress(msg);
    } else if (msg.type === 'notice') {
      if (p.onNotice) p.onNotice(msg);
    } else if (msg.type === 'result') {
      this.pending.delete(msg.id);
      p.resolve(msg.value);
    } else if (msg.type === 'error') {
      this.pending.delete(msg.id);
      p.reject(codedError(msg.code, msg.message, msg.reason));
    }
  }
}

/**
 * Answers requests arriving at `scope` (a worker's global): `handlers[type](msg)` gives the value
 * (or a Promise of it). A Float32Array `embeddings` in the value is transferred, not copied.
 * @param {DedicatedWorkerGlobalScope} scope
 * @param {Record<string, (msg: any) => any>} handlers
 */
export function serve(scope, handlers) {
  scope.addEventListener('message', async (e) => {
    const msg = e.data || {};
    try {
      const handler = Object.hasOwn(handlers, msg.type) ? handlers[msg.type] : null;
      if (!handler) throw codedError(ERR.BAD_REQUEST, `Unknown request type: ${msg.type}`);
      const value = await handler(msg);
      const transfer = value && value.embeddings instanceof Float32Array ? [value.embeddings.buffer] : [];
      scope.postMessage({ type: 'result', id: msg.id, op: msg.type, value }, transfer);
    } catch (err) {
      const { code, message } = describeError(err);
      scope.postMessage({ type: 'error', id: msg.id, op: msg.type, code, message, reason: err && err.reason });
    }
  });
}
