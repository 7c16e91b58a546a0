// @ts-check
// The request/response layer of both worker protocols: the page ↔ the engine worker
// (engine/worker.js, messages in protocol.js) and the engine ↔ its embedding helpers
// (engine/pool.js ↔ engine/embed-worker.js).
//
// A request `{type, id, …payload}` carries a fresh id; the answering side sends any number of
// `progress` / `notice` messages with that id, then exactly one `result` (`value`) or `error`
// (`code`, `message`, `reason?`). `RpcClient` is the asking side, `serve` the answering one.

import { ERR } from './protocol.js';
import { codedError, describeError } from './errors.js';

/** @typedef {import('./protocol.js').ProgressMessage} ProgressMessage */
/** @typedef {import('./protocol.js').NoticeMessage} NoticeMessage */
/** @typedef {{onProgress?: (m: ProgressMessage) => void, onNotice?: (m: NoticeMessage) => void, transfer?: Transferable[]}} RpcHooks */

/** @typedef {Record<string, {payload: object, result: any}>} RequestTable  request type → payload, result */

/**
 * `call(type, payload, {onProgress, onNotice, transfer})` → Promise of the result value;
 * rejects with an Error carrying the answer's `code` (and `reason`). `M` is the protocol's
 * request table (protocol.js `EngineRequests` or `HelperRequests`): each call's payload and
 * result are checked against it: the engine's client is cast to `RpcClient<EngineRequests>`
 * (page/engine.js), a pool helper's extends `RpcClient<HelperRequests>` (engine/pool.js).
 * @template {RequestTable} [M=RequestTable]
 */
export class RpcClient {
  /** @param {Worker} worker */
  constructor(worker) {
    this.worker = worker;
    this.nextId = 1;
    /** @type {Map<number, {resolve: (v: any) => void, reject: (e: Error) => void, onProgress?: (m: ProgressMessage) => void, onNotice?: (m: NoticeMessage) => void}>} */
    this.pending = new Map();
    worker.addEventListener('message', (e) => this.#onMessage(e.data));
  }

  /**
   * @template {keyof M & string} K
   * @param {K} type
   * @param {M[K]['payload']} [payload]
   * @param {RpcHooks} [hooks]
   * @returns {{id: number, promise: Promise<M[K]['result']>}}
   */
  start(type, payload = /** @type {M[K]['payload']} */ ({}), hooks = {}) {
    const id = this.nextId++;
    const promise = new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress: hooks.onProgress, onNotice: hooks.onNotice });
    });
    this.worker.postMessage({ ...payload, type, id }, hooks.transfer || []);
    return { id, promise };
  }

  /**
   * @template {keyof M & string} K
   * @param {K} type
   * @param {M[K]['payload']} [payload]
   * @param {RpcHooks} [hooks]
   * @returns {Promise<M[K]['result']>}
   */
  call(type, payload, hooks) {
    return this.start(type, payload, hooks).promise;
  }

  /**
   * Rejects everything in flight with code "engine" (the worker died or was stopped).
   * @param {string} message
   */
  failAll(message) {
    for (const [, p] of this.pending) p.reject(codedError(ERR.ENGINE, message));
    this.pending.clear();
  }

  /** @param {any} msg  an answer (protocol.js `Answer`), or anything else the worker posted */
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
 * @param {{addEventListener(type: 'message', listener: (e: MessageEvent) => void): void,
 *          postMessage(message: any, transfer?: Transferable[]): void}} scope  a worker's global
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
