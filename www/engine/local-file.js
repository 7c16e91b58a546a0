// @ts-check
// A model file from the user's computer, in the engine worker: the page hands over the File
// (a structured clone: a handle, not a copy; the bytes never leave the browser). Two steps:
//
//   inspect  its header only (the first INSPECT_PREFIX bytes) → Rust's `inspect_model`: the
//            model's info and `worker_bytes` (one instance's peak memory); when that fits the
//            page's budget, also the whole file's sha256 (WebCrypto)
//   read     the whole file for loading, with byte progress and its sha256
//
// Rust's coded errors (bad-model, unsupported-architecture, unsupported-dtype, …) keep their code.

import { inspect_model } from '../pkg/sr_bench.js';
import { ERR } from '../shared/protocol.js';
import { codedError, describeError, messageOf } from '../shared/errors.js';
import { sha256Hex } from './cache.js';
import { toPlain } from './engine-state.js';

/** Bytes of the header read to inspect a file: 16 MB hold any BERT-family vocabulary. */
export const INSPECT_PREFIX = 16 << 20;

/** @param {File} file  what the page sent (anything else is a bad request) */
function checkFile(file) {
  if (!(file instanceof Blob)) throw codedError(ERR.BAD_REQUEST, 'No file was given.');
  if (file.size === 0) throw codedError(ERR.BAD_MODEL, `${file.name || 'The file'} is empty.`);
}

async function readAll(file, what) {
  try {
    return new Uint8Array(await file.arrayBuffer());
  } catch (e) {
    // e.g. the file was moved or changed on disk since it was picked
    throw codedError(ERR.BAD_MODEL, `${file.name} could not be read (${what}): ${messageOf(e)}. Pick it again.`);
  }
}

/**
 * The `inspect-file` request: `{file, max_seq_length?, budget_bytes, skip_hash?}` →
 * `{file_name, bytes, info, worker_bytes, fits, sha256|null, inspect_ms, hash_ms}`.
 * The sha256 is computed only when the file fits `budget_bytes` (a file refused for its size is
 * never read whole) and `skip_hash` is not set (the page has it from a first inspection).
 */
export async function inspectFile(msg) {
  const file = msg.file;
  checkFile(file);
  const t0 = performance.now();
  const prefix = await readAll(file.slice(0, Math.min(file.size, INSPECT_PREFIX)), 'its header');
  let inspected;
  try {
    inspected = toPlain(inspect_model(prefix, file.size, msg.max_seq_length ?? undefined));
  } catch (e) {
    const { code, message } = describeError(e);
    throw codedError(code, `${file.name}: ${message}`);
  }
  const t1 = performance.now();
  const fits = !(inspected.worker_bytes > Number(msg.budget_bytes));
  let sha256 = null;
  if (fits && !msg.skip_hash) sha256 = await sha256Hex(await readAll(file, 'to compute its sha256'));
  return {
    file_name: file.name,
    bytes: file.size,
    info: inspected.info,
    worker_bytes: inspected.worker_bytes,
    fits,
    sha256,
    inspect_ms: t1 - t0,
    hash_ms: performance.now() - t1,
  };
}

/**
 * The whole file for loading: `{bytes, sha256, source: "local file", fetch_ms, verify_ms}`;
 * `expectedSha256` (from `inspect`) catches a file changed on disk in between.
 */
export async function readLocalFile(file, expectedSha256, onProgress) {
  checkFile(file);
  const t0 = performance.now();
  onProgress('read', 0, file.size, 'bytes');
  const bytes = await readAll(file, 'to load it');
  onProgress('read', bytes.length, file.size, 'bytes');
  const t1 = performance.now();
  onProgress('hash', 0, 1, 'steps');
  const sha256 = await sha256Hex(bytes);
  if (expectedSha256 && sha256 !== expectedSha256) {
    throw codedError(ERR.BAD_MODEL, `${file.name} changed on disk since it was inspected (sha256 ${sha256.slice(0, 12)}…, ` +
      `was ${expectedSha256.slice(0, 12)}…). Pick it again.`);
  }
  return { bytes, sha256, source: 'local file', fetch_ms: t1 - t0, verify_ms: performance.now() - t1 };
}
