// @ts-check
// The message protocol between the page (page/) and the engine worker (engine/worker.js).
//
// This file, with the types of its requests (protocol-requests.d.ts) and answers
// (protocol-answers.d.ts), re-exported below, is the one place where the protocol is written
// down. Both sides import it; the request/response client and the answering loop are rpc.js
// (also used for the pool's helpers). Request names are the constants of `REQ` (the strings on
// the wire); `EngineRequests` maps each to what it sends and what it answers, and the engine
// client (rpc.js `RpcClient`) is checked against it at every call site (`npm run check:www`).
//
// Every request the page sends carries a fresh numeric `id`. The worker answers it with
// any number of `progress` / `notice` messages carrying the same id, then exactly one
// `result` or `error` with that id. Requests are handled concurrently by the worker:
// a `similarity` request is answered between two benchmark chunks, so the playground stays
// live while a benchmark runs; `cancel` is seen within one chunk (64 sentences).
//
// Page → worker (requests)
//   inspect-file  a model file from this computer (a File: a handle, never uploaded): its header
//               through Rust's inspect_model (info, worker_bytes) and, when it fits the page's
//               memory budget, its sha256 (engine/local-file.js).
//   load        a file from this computer ({file, sha256, max_seq_length}: read, sha256, load), or
//               fetch (or take from the Cache API), verify (sha256) and load a model on the
//               chosen backend ("cpu": Model.load; "webgpu"/"auto": Model.load_with_backend(bytes,
//               backend, true)). WebGPU failing never fails the load: Rust falls back to the CPU
//               and backend_status.fallback_reason says why.
//               Cancels a running benchmark first (it ends with error code "cancelled",
//               reason "model-changed"). A newer `load` supersedes an older one still in flight.
//   similarity  cosine of two texts, by the model and by the syntax-blind baseline.
//   embed       L2-normalised embeddings of a list of texts (row-major n × dim).
//   evaluate    run the SR benchmark (split quick|full) with the loaded model; at most one at a time.
//               Three strategies (engine/evaluate.js): with a CPU model the sentences are embedded by a
//               pool of helper workers (engine/pool.js + embed-worker.js: one wasm instance and model
//               copy each, one per core, as many as Model.estimate_worker_bytes lets fit), fed
//               length-sorted chunks longest first via Evaluation.next_chunk and booked in with
//               Evaluation.accept_embeddings; this worker only schedules, so it stays free.
//               With a model running on WebGPU (Model.is_async) this worker embeds the chunks
//               itself with Model.embed_async (GPU calls never overlap: a similarity waits for
//               the current chunk). Otherwise (baseline, one worker, no pool) Evaluation.step here.
//   probe       a word-order probe ("shuffle": STS-B test with sentence 2's words
//               shuffled, seeds 0..seeds, plus the SR variants' sanity row) or the layer probe
//               ("layers": Spearman per layer), stepped here through the wasm Probe (probe.js);
//               the result is exactly `sr-bench probe shuffle|layers --json`. It is the engine's
//               one run, like `evaluate` (code "busy" while one runs; `cancel` stops it).
//   cancel      stop the benchmark (or probe) started by request `target`.
//   quiz        the questions of a quiz for a seed ({set: "sr"|"czech", seed, questions, min_gap};
//               QuizRun, from the data files fetched once per engine), and with `answer: true`
//               the model's and the syntax-blind baseline's answers (needs a model). Exactly
//               `sr-bench quiz --json` (engine/quiz.js).
//   set-prefix  the text the model puts before every input from now on ({prefix}; "" for none;
//               Model.set_prefix): the page's prefix field. Refused ("busy") while a run goes.
//   --- the playground's explainers (Rust computes everything, see src/explain/):
//   explain     the pair's token-pair maps (Model.explain and, for the baseline, Model.explain_static)
//               and its cosine after each layer for A/B and for A / B's words shuffled. Sent by the
//               page only after a `similarity` answer for the same pair (it never delays the score).
//               Token states come from the CPU, also for a WebGPU model.
//   word-order  a word edit of a text by Rust (shuffle_words with a seed, reverse_words, swap_words):
//               the playground's word-order buttons; needs no model.
//   shuffle-scores  the model's cosine of a text with each of its seeded word shuffles ("Shuffle 20×").
//
// Worker → page (answers)
//   progress    phase + done/total, for progress bars (bytes while downloading, sentences while evaluating).
//   notice      something the user must see that is not a failure (e.g. a corrupted cache entry was dropped).
//   result      the request's value; ends the request.
//   error       a plain message + a machine-readable code; ends the request.
//
// The page learns of worker start-up failures through the Worker's own `error` event.
//
// --- Workers that die. A worker that stops (closed, killed by the browser) may fire
// no event, so both sides watch for silence:
//   ping        page → engine, {} → {}: sent every 2 s while any request waits (page/engine.js); one
//               unanswered for 30 s restarts the engine: what waited fails with code "engine", a
//               running benchmark says it was interrupted (no numbers of it are shown), and the
//               model the engine had is loaded again.
//   notice "helper-replaced"  engine → page during `evaluate`: an embedding helper failed (an
//               `error` event) or had work unanswered past its deadline (engine/pool.js: 5 × the slowest
//               chunk, at least 15 s); it was replaced and its chunks are redone, so the run's
//               numbers are whole. After 4 replacements the run fails with code "interrupted".
//   In every worker, `self.srBenchWasmBytes()` gives its wasm memory size (a diagnostic for the
//   soak test and the devtools console; not a message).

export const PROTOCOL_VERSION = 1;

/** The requests' names, as they go on the wire (`type`). Use these, never the bare strings. */
export const REQ = Object.freeze({
  INSPECT_FILE: 'inspect-file',
  LOAD: 'load',
  SIMILARITY: 'similarity',
  EMBED: 'embed',
  EVALUATE: 'evaluate',
  PROBE: 'probe',
  CANCEL: 'cancel',
  EXPLAIN: 'explain',
  WORD_ORDER: 'word-order',
  SHUFFLE_SCORES: 'shuffle-scores',
  PING: 'ping',
  SET_PREFIX: 'set-prefix',
  QUIZ: 'quiz',
});

/** The engine ↔ pool helper protocol's requests (engine/pool.js → engine/embed-worker.js). */
export const HELPER_REQ = Object.freeze({
  INIT: 'init',
  EMBED: 'embed',
});

/** Name of the Cache API cache holding model files. Entries are keyed by URL + `?sha256=<hex>`. */
export const MODEL_CACHE = 'sr-bench-models-v1';

/** The six files of the SR benchmark, in Table 4 order. */
export const SR_FILES = Object.freeze(['stsb', 'sickr', 'askubuntu', 'cqa', 'twitter', 'biosses']);

/** The benchmark's data files under the site root, SR files first (SR_FILES order), then
 * STS-B test: the engine fetches them, the service worker stores them (assemble.sh). */
export const DATA_PATHS = Object.freeze([...SR_FILES.map((f) => `data/sr/${f}.csv`), 'data/stsb/stsb-en-test.csv']);
/** Czech News STS's test set (Sido et al.; 1,200 pairs, nine annotators), the benchmark's Czech choice. */
export const CZECH_PATH = 'data/czech-news-sts/free-test.tsv';
/** Largest own pairs file the engine reads (bytes; Rust's MAX_PAIRS_BYTES): checked before reading. */
export const MAX_PAIRS_BYTES = 16 * 1024 * 1024;
/** Every data file the page may fetch: what the offline class mode stores (www/assemble.sh). */
export const ALL_DATA_PATHS = Object.freeze([...DATA_PATHS, CZECH_PATH]);
/** The two dimensions of the SR benchmark (Table 4 rows). */
export const DIMENSIONS = Object.freeze(['structure', 'relation']);

/** Sentences embedded per `Evaluation.step` call: the cancel / progress granularity. */
export const EVAL_CHUNK = 64;

/** Error codes carried by `error` messages. The wasm API's errors carry the same codes in
 * `err.code` (Rust: crate::error::ErrorCode); the worker forwards them as they are. */
export const ERR = Object.freeze({
  // set by the wasm API (Rust)
  BAD_MODEL: 'bad-model',       // the model file could not be read
  UNSUPPORTED_ARCHITECTURE: 'unsupported-architecture',
  UNSUPPORTED_DTYPE: 'unsupported-dtype',
  OUT_OF_MEMORY: 'out-of-memory',
  NO_ADAPTER: 'no-adapter',     // WebGPU was required and the browser gave no adapter
  DEVICE_LOST: 'device-lost',
  DATA: 'data',                 // a benchmark data file is malformed
  BAD_REQUEST: 'bad-request',   // unknown message type / malformed request
  ENGINE: 'engine',             // the wasm engine could not start or trapped
  // page and worker only
  BUSY: 'busy',                 // a benchmark is already running
  CANCELLED: 'cancelled',       // the benchmark was cancelled (see `reason`)
  SUPERSEDED: 'superseded',     // a newer `load` replaced this one
  NO_MODEL: 'no-model',         // no model is loaded yet
  HASH_MISMATCH: 'hash-mismatch', // a freshly downloaded file does not match the manifest's sha256
  NETWORK: 'network',           // a fetch failed (HTTP status or transport)
  INTERRUPTED: 'interrupted',   // a benchmark lost its workers (helpers kept stopping): no results
});

// ---------------------------------------------------------------- types
// Every type of the protocol is declared in protocol-requests.d.ts and protocol-answers.d.ts
// (types only, never loaded, not copied into the site) and re-exported here, so
// `import('../shared/protocol.js').ModelInfo` names it. Not one `protocol.d.ts`: TypeScript
// takes a declaration file of that name for protocol.js itself and stops reading the JS (its
// constants and functions would have to be declared twice).

// requests (page → worker)
/** @typedef {import('./protocol-requests').LoadRequest} LoadRequest */
/** @typedef {import('./protocol-requests').InspectFileRequest} InspectFileRequest */
/** @typedef {import('./protocol-requests').SimilarityRequest} SimilarityRequest */
/** @typedef {import('./protocol-requests').EmbedRequest} EmbedRequest */
/** @typedef {import('./protocol-requests').EvaluateRequest} EvaluateRequest */
/** @typedef {import('./protocol-requests').CancelRequest} CancelRequest */
/** @typedef {import('./protocol-requests').ExplainRequest} ExplainRequest */
/** @typedef {import('./protocol-requests').WordOrderRequest} WordOrderRequest */
/** @typedef {import('./protocol-requests').ShuffleScoresRequest} ShuffleScoresRequest */
/** @typedef {import('./protocol-requests').ProbeRequest} ProbeRequest */
/** @typedef {import('./protocol-requests').QuizRequest} QuizRequest */
/** @typedef {import('./protocol-requests').PingRequest} PingRequest */
/** @typedef {import('./protocol-requests').Request} Request */

// answers (worker → page), the requests' results, what they describe
/** @typedef {import('./protocol-answers').ModelEntry} ModelEntry */
/** @typedef {import('./protocol-answers').ModelPart} ModelPart */
/** @typedef {import('./protocol-answers').ModelInfo} ModelInfo */
/** @typedef {import('./protocol-answers').TrainedFrom} TrainedFrom */
/** @typedef {import('./protocol-answers').BackendStatus} BackendStatus */
/** @typedef {import('./protocol-answers').ProgressMessage} ProgressMessage */
/** @typedef {import('./protocol-answers').NoticeMessage} NoticeMessage */
/** @typedef {import('./protocol-answers').ResultMessage} ResultMessage */
/** @typedef {import('./protocol-answers').ErrorMessage} ErrorMessage */
/** @typedef {import('./protocol-answers').Answer} Answer */
/** @typedef {import('./protocol-answers').InspectFileResult} InspectFileResult */
/** @typedef {import('./protocol-answers').LoadResult} LoadResult */
/** @typedef {import('./protocol-answers').SimilarityResult} SimilarityResult */
/** @typedef {import('./protocol-answers').EmbedResult} EmbedResult */
/** @typedef {import('./protocol-answers').EvaluateResult} EvaluateResult */
/** @typedef {import('./protocol-answers').ProbeResult} ProbeResult */
/** @typedef {import('./protocol-answers').TokenPairMap} TokenPairMap */
/** @typedef {import('./protocol-answers').ExplainResult} ExplainResult */
/** @typedef {import('./protocol-answers').WordOrderResult} WordOrderResult */
/** @typedef {import('./protocol-answers').ShuffleScoresResult} ShuffleScoresResult */
/** @typedef {import('./protocol-answers').QuizResult} QuizResult */
/** @typedef {import('./protocol-answers').QuizScore} QuizScore */

// the contract the call sites are checked against (rpc.js `RpcClient`)
/**
 * @template R
 * @typedef {import('./protocol-requests').Payload<R>} Payload
 */
/** @typedef {import('./protocol-requests').EngineRequests} EngineRequests */
/** @typedef {import('./protocol-requests').HelperRequests} HelperRequests */

/**
 * Cache key for a model file: its URL plus its sha256, so a rebuilt model never hits a stale entry.
 * @param {string} baseUrl
 * @param {{file: string, sha256: string, base_url?: string}} entry
 * @returns {string}
 */
export function modelCacheKey(baseUrl, entry) {
  const url = new URL(encodeURIComponent(entry.file), modelBase(baseUrl, entry));
  url.searchParams.set('sha256', entry.sha256.toLowerCase());
  return url.href;
}

/**
 * Where a model's files are fetched from: the manifest's `base_url` (another origin, e.g. a
 * Hugging Face `resolve/<commit>/` URL), else the site's `models/`.
 * @param {string} baseUrl  the site root
 * @param {{base_url?: string}} entry
 */
export function modelBase(baseUrl, entry) {
  return entry.base_url ? new URL(entry.base_url).href : new URL('models/', baseUrl).href;
}

/** The cache keys a model is stored under: one per part, or the whole file's.
 * @param {string} baseUrl @param {ModelEntry} entry */
export function modelCacheKeys(baseUrl, entry) {
  return Array.isArray(entry.parts) && entry.parts.length
    ? entry.parts.map((p) => modelCacheKey(baseUrl, { ...p, base_url: entry.base_url }))
    : [modelCacheKey(baseUrl, entry)];
}
