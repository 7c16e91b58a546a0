// @ts-check
// The message protocol between the page (page/) and the engine worker (engine/worker.js).
//
// This file is the one place where the protocol is written down. Both sides import it; the
// request/response client and the answering loop are rpc.js (also used for the pool's helpers).
// Request names are the constants of `REQ` (the strings on the wire); `EngineRequests` maps
// each to what it sends and what it answers, and the engine client (rpc.js `RpcClient`) is
// checked against it at every call site (`npm run check:www`).
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

/**
 * One entry of `models/manifest.json` (`{"models": ModelEntry[]}`), written by build.sh.
 * @typedef {object} ModelEntry
 * @property {string} name     e.g. "all-MiniLM-L6-v2"
 * @property {string} dtype    "q8_0" | "q4_0" | "f32" | …
 * @property {string} file     file name under models/
 * @property {number} bytes    size in bytes
 * @property {string} sha256   lowercase hex digest of the file
 * @property {boolean} [default] preselected in the picker
 * @property {string} [note]   shown beside it in the picker (e.g. "4-bit only (all that is published)")
 * @property {boolean} [local]  not in the manifest: the entry the engine makes for a file from this computer
 * @property {ModelPart[]} [parts]  the file in parts, in order (`sr-bench site`): downloaded instead
 * @property {string} [base_url]  where the file or its parts are served (the manifest's `base_url`,
 *                                copied onto each entry by the page); default the site's models/
 */
/**
 * @typedef {object} ModelPart
 * @property {string} file     file name under the model base
 * @property {number} bytes
 * @property {string} sha256
 */

/**
 * `Model.info()` as returned by the wasm module.
 * @typedef {object} ModelInfo
 * @property {string} name
 * @property {string} architecture
 * @property {string} dtype
 * @property {number} dim
 * @property {number} num_layers
 * @property {number} intermediate_size
 * @property {number} [num_attention_heads]
 * @property {number} [query_width]  all query heads' width (dim, but with grouped-query attention)
 * @property {number} [kv_width]     all key (or value) heads' width
 * @property {number} max_seq_length
 * @property {string} prefix     put before every text the model reads (e5's "query: "; "" for none)
 * @property {string} pooling
 * @property {number} vocab_size
 * @property {number} file_bytes
 * @property {string} [stored_dtype]     a K-quant file's type ("q4_k_m" …), converted at load to `dtype`
 * @property {number} [converted_bytes]  then its converted weights' bytes, which the engine holds
 * @property {TrainedFrom} [trained]  present in a file made by `sr-bench train`
 */

/**
 * How `sr-bench train` made a file from its base (the file's srbench.train.* metadata).
 * @typedef {object} TrainedFrom
 * @property {string} data         "stsb", "stsb+sr", "stsb-shuffled" or the training file's name
 * @property {number} epochs
 * @property {number} kept_epoch   best on STS-B dev, from 1; 0: no epoch beat the base model
 * @property {number} seed
 * @property {number} pairs        training pairs after the leak filter
 * @property {string} base_sha256  the f32 file it started from
 */

// ---------------------------------------------------------------- requests (page → worker)

/**
 * @typedef {object} LoadRequest
 * @property {'load'} type
 * @property {number} id
 * @property {ModelEntry} [model]  a model of this site, or:
 * @property {File} [file]         a model file from this computer
 * @property {string} [sha256]     with `file`: its sha256 from `inspect-file` (a file changed since fails)
 * @property {number} [max_seq_length]  with `file`: truncation (default: the file's value)
 * @property {string} [baseUrl]  absolute URL of the site root (ends with "/"), with `model`
 * @property {'cpu'|'webgpu'|'auto'} [backend]  default "cpu"
 */
/**
 * @typedef {object} InspectFileRequest
 * @property {'inspect-file'} type
 * @property {number} id
 * @property {File} file
 * @property {number} [max_seq_length]
 * @property {number} budget_bytes   the page's memory budget (shared/pool-size.js memoryBudget): the sha256 is
 *                                   computed only for a file whose worker_bytes fit it
 * @property {boolean} [skip_hash]   the page has the sha256 already
 */
/**
 * @typedef {object} InspectFileResult
 * @property {string} file_name
 * @property {number} bytes
 * @property {ModelInfo} info          as Model.info() would say, with max_seq_length applied
 * @property {number} worker_bytes     Rust's estimate of one instance's peak memory
 * @property {boolean} fits            worker_bytes ≤ budget_bytes
 * @property {string|null} sha256
 * @property {number} inspect_ms
 * @property {number} hash_ms
 */
/**
 * @typedef {object} SimilarityRequest
 * @property {'similarity'} type
 * @property {number} id
 * @property {string} a
 * @property {string} b
 */
/**
 * @typedef {object} EmbedRequest
 * @property {'embed'} type
 * @property {number} id
 * @property {string[]} texts
 */
/**
 * @typedef {object} EvaluateRequest
 * @property {'evaluate'} type
 * @property {number} id
 * @property {'quick'|'full'} split
 * @property {'model'|'static'} encoder  "static" = the syntax-blind baseline
 * @property {string[]} [files]  some of SR_FILES (default: all six); the avg then averages these.
 *                               Empty when only STS-B test or Czech News STS is asked for.
 * @property {boolean} [stsb_test]  score STS-B test too (default true)
 * @property {boolean} [czech]   score Czech News STS too (CZECH_PATH; default false)
 * @property {File} [own]        a user's own pairs file (CSV/TSV, STS or SR layout), scored alone:
 *                               files, stsb_test and czech are then ignored; read in the engine,
 *                               never uploaded
 * @property {string} baseUrl
 * @property {number} [workers]  helper workers for the model (default 0: one per core, capped;
 *                               1: no pool, embed in the engine worker, one thread)
 */
/**
 * @typedef {object} CancelRequest
 * @property {'cancel'} type
 * @property {number} id
 * @property {number} target  id of the `evaluate` request to stop
 */
/**
 * @typedef {object} ExplainRequest
 * @property {'explain'} type
 * @property {number} id
 * @property {string} a
 * @property {string} b
 * @property {number} [shuffle_seed]  B's words are shuffled with it for `layers_shuffled` (default 0)
 */
/**
 * @typedef {object} WordOrderRequest
 * @property {'word-order'} type
 * @property {number} id
 * @property {'shuffle'|'reverse'|'swap'} op
 * @property {string} text
 * @property {number} [seed]   with "shuffle": a non-negative safe integer
 * @property {number} [i]      with "swap": the two words' positions (0-based, whitespace-separated words)
 * @property {number} [j]
 */
/**
 * @typedef {object} ShuffleScoresRequest
 * @property {'shuffle-scores'} type
 * @property {number} id
 * @property {string} text
 * @property {readonly number[]} seeds
 */
/**
 * @typedef {object} ProbeRequest
 * @property {'probe'} type
 * @property {number} id
 * @property {'shuffle'|'layers'} kind
 * @property {'quick'|'full'} split  the SR rows (the shuffle probe's sanity row; the layer probe's SR averages)
 * @property {number} [seeds]        shuffle seeds 0..seeds (at least 1; ignored by "layers")
 * @property {string} baseUrl
 */
/**
 * @typedef {object} ProbeResult
 * @property {object} result  `sr-bench probe shuffle|layers --json`: shuffle → {model, dtype,
 *   stsb_test: {spearman, pearson}, shuffled: {seeds, spearman_mean, spearman_sd, pearson_mean,
 *   pearson_sd, per_seed}, kept, sr, finding}; layers → {model, dtype, split, pooling, pairs,
 *   layers: [{layer, structure_avg, relation_avg, stsb_test}], memory} (Spearman ×100)
 * @property {{total_ms: number, probe_ms: number, pairs: number}} timings
 */
/** @typedef {{type: 'ping', id: number}} PingRequest  answered with {} (the page's liveness check) */
/** @typedef {LoadRequest|InspectFileRequest|SimilarityRequest|EmbedRequest|EvaluateRequest|ProbeRequest|CancelRequest|ExplainRequest|WordOrderRequest|ShuffleScoresRequest|PingRequest} Request */

// ---------------------------------------------------------------- answers (worker → page)

/**
 * @typedef {object} ProgressMessage
 * @property {'progress'} type
 * @property {number} id
 * @property {'cache'|'download'|'verify'|'read'|'hash'|'init'|'data'|'prepare'|'evaluate'|'probe'} phase
 * @property {number} done
 * @property {number} total      0 when unknown
 * @property {'bytes'|'sentences'|'files'|'steps'|'workers'|'pairs'} unit   ('workers': the pool is starting; 'pairs': a probe)
 * @property {number} elapsed_ms time since this phase started
 */
/**
 * @typedef {object} NoticeMessage
 * @property {'notice'} type
 * @property {number} id
 * @property {'info'|'warning'} level
 * @property {string} code      e.g. "cache-corrupt", "cache-unavailable", "backend" (a new backend notice during a run),
 *                              "helper-replaced" (an embedding helper died during a run and was replaced)
 * @property {string} message   plain text for the user
 * @property {BackendStatus} [backend_status]  with code "backend": the status after the notice
 */
/**
 * @typedef {object} ResultMessage
 * @property {'result'} type
 * @property {number} id
 * @property {Request['type']} op
 * @property {LoadResult|InspectFileResult|SimilarityResult|EmbedResult|EvaluateResult|ProbeResult|{cancelled: boolean}} value
 */
/**
 * @typedef {object} ErrorMessage
 * @property {'error'} type
 * @property {number} id
 * @property {Request['type']} op
 * @property {string} code       one of ERR
 * @property {string} message    plain text for the user
 * @property {string} [reason]   for code "cancelled": "user" | "model-changed"
 */
/** @typedef {ProgressMessage|NoticeMessage|ResultMessage|ErrorMessage} Answer */

/**
 * `Model.backend_status()`, filled by Rust: where the encoder runs and why.
 * @typedef {object} BackendStatus
 * @property {'cpu'|'webgpu'|'auto'} requested
 * @property {'cpu'|'webgpu'} active
 * @property {{name: string, backend: string, device_type: string, driver: string, software: boolean,
 *   features: string[], features_used: string[],
 *   browser_info?: {vendor: string, architecture: string, device: string, description: string}}|null} adapter
 *   browser_info: the browser's GPUAdapterInfo (wgpu gets no adapter name in the browser);
 *   features: the optional WebGPU features the kernels can use that the adapter offers ("shader-f16", "subgroups")
 *   features_used: those the kernels use (f16 activations, subgroup reductions; not when switched off)
 * @property {boolean} software_adapter  a software fallback adapter (SwiftShader…): the GPU is emulated on the CPU
 * @property {string|null} fallback_reason  why the CPU runs although WebGPU was asked for
 * @property {string[]} notices  oldest first; grows when the GPU fails mid-run (the batch is redone on the CPU)
 * @property {{weights: number, activations: number, params: number, readback: number, total: number,
 *   largest_buffer: number, buffers: number}|null} gpu_memory  bytes of the GPU buffers the model holds now
 *   (null off the GPU)
 */
/**
 * @typedef {object} LoadResult
 * @property {ModelInfo} info
 * @property {string} backend        where the model runs now: "cpu" | "webgpu" (Model.backend)
 * @property {BackendStatus} backend_status
 * @property {ModelEntry} entry    for a file from this computer: {name, dtype, file, bytes, sha256, local: true}
 * @property {number|null} max_seq_length  the truncation asked for (a local file's field), else null
 * @property {'cache'|'network'|'local file'} source
 * @property {{fetch_ms: number, verify_ms: number, init_ms: number, total_ms: number}} timings
 */
/**
 * @typedef {object} SimilarityResult
 * @property {number} cosine         model cosine
 * @property {number} static_cosine  syntax-blind baseline cosine
 * @property {number} ms
 * @property {[number, number]|null} tokens  token counts of a and b after truncation (special tokens included)
 * @property {BackendStatus} backend_status  after this call
 */
/**
 * @typedef {object} EmbedResult
 * @property {Float32Array} embeddings  row-major n × dim
 * @property {number} dim
 */
/**
 * @typedef {object} EvaluateResult
 * @property {object} report   the CLI's report schema (model, encoder, results, stsb_test, paper?, pairs
 *                             with rank_gap), from Evaluation.finish
 * @property {string} pairs_csv  the per-pair CSV (wasm `pairs_csv(report)`): what "Download per-pair CSV" saves
 * @property {BackendStatus} backend_status  at the end of the run
 * @property {object|null} czech_baseline  with `czech` and the model: the syntax-blind baseline's
 *                             `czech_news_sts` section (as `sr-bench eval-czech --baseline static`)
 * @property {{data_ms: number, prepare_ms: number, embed_ms: number, finish_ms: number,
 *             total_ms: number, sentences: number, workers: number, gpu: boolean, sentences_per_s: number,
 *             flops: number, gflop_per_s: number|null, gflop_per_s_per_core: number|null}} timings
 *   embed_ms is the wall time of the embedding phase; workers the number of threads that embedded;
 *   gpu: the model's chunks went to WebGPU (Model.embed_async) rather than to CPU helpers.
 *   flops: the forward passes' operations (Evaluation.forward_flops; 0 for the baseline), over
 *   embed_ms the GFLOP/s, and per thread that embedded on the CPU (null on the GPU).
 */

/**
 * One token-pair map, as Rust's `Explanation` (src/explain/contributions.rs) serialises it.
 * @typedef {object} TokenPairMap
 * @property {number} cosine     the pipeline's cosine of the pair
 * @property {string} pooling    "mean" | "cls" | "last" | "max"
 * @property {'contributions'|'token_cosine'} kind  contributions sum to `cosine` (mean pooling);
 *                               token_cosine: the token-to-token cosine matrix (no decomposition)
 * @property {'model'|'static'} encoder
 * @property {string[]} tokens_a rows (special tokens included for the model)
 * @property {string[]} tokens_b columns
 * @property {number[][]} contributions  [row][column]
 * @property {number[]} row_totals
 * @property {number[]} column_totals
 * @property {number} total
 * @property {number[]} word_of_a  each token's word in `words.tokens_a`
 * @property {number[]} word_of_b
 * @property {TokenPairMap} [words]  the same map with word pieces summed into words
 */
/**
 * @typedef {object} ExplainResult
 * @property {TokenPairMap} model
 * @property {TokenPairMap} baseline   the syntax-blind baseline's map (static token vectors)
 * @property {number[]} layers          the pair's cosine after each layer, layer 0 = embedding output
 * @property {number[]} layers_shuffled  the same for A and `shuffled_b`
 * @property {string} shuffled_b        B's words shuffled with `shuffle_seed`
 * @property {number} shuffle_seed
 * @property {number} ms
 */
/** @typedef {{text: string}} WordOrderResult */
/** @typedef {{texts: string[], cosines: number[]}} ShuffleScoresResult  one per seed, in order */

// ---------------------------------------------------------------- the contract the call sites are checked against

/**
 * A request's payload: what the caller passes to `RpcClient.call` (rpc.js adds `type` and `id`).
 * @template R
 * @typedef {Omit<R, 'type'|'id'>} Payload
 */
/**
 * Every request of the page ↔ engine protocol: what it sends (`payload`) and what its `result`
 * carries. The keys are REQ's values.
 * @typedef {{
 *   'inspect-file': {payload: Payload<InspectFileRequest>, result: InspectFileResult},
 *   'load': {payload: Payload<LoadRequest>, result: LoadResult},
 *   'similarity': {payload: Payload<SimilarityRequest>, result: SimilarityResult},
 *   'embed': {payload: Payload<EmbedRequest>, result: EmbedResult},
 *   'evaluate': {payload: Payload<EvaluateRequest>, result: EvaluateResult},
 *   'probe': {payload: Payload<ProbeRequest>, result: ProbeResult},
 *   'cancel': {payload: Payload<CancelRequest>, result: {cancelled: boolean}},
 *   'explain': {payload: Payload<ExplainRequest>, result: ExplainResult},
 *   'word-order': {payload: Payload<WordOrderRequest>, result: WordOrderResult},
 *   'shuffle-scores': {payload: Payload<ShuffleScoresRequest>, result: ShuffleScoresResult},
 *   'ping': {payload: Payload<PingRequest>, result: {}},
 *   'set-prefix': {payload: {prefix: string}, result: {info: ModelInfo}},
 * }} EngineRequests
 */
/**
 * The pool helpers' requests (engine/embed-worker.js). `module`: the engine's compiled wasm.
 * @typedef {{
 *   'init': {payload: {module: WebAssembly.Module, bytes: Uint8Array, max_seq_length: number|null, prefix: string}, result: {load_ms: number}},
 *   'embed': {payload: {texts: string[]}, result: {embeddings: Float32Array, ms: number}},
 * }} HelperRequests
 */

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
