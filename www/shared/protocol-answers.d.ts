// The answers of the page ↔ worker protocol (protocol.js; worker → page): the messages, each
// request's result, and what they describe (models, the backend). Types only, never loaded;
// protocol.js re-exports them. The requests: protocol-requests.d.ts.
//
// A JSDoc `object` is `any` in a JS file; the loosely typed fields below (`result`, `report`,
// `czech_baseline`) are `any` here for the same reason.

import type { Request } from './protocol-requests';

// ---------------------------------------------------------------- what the answers describe

/** One entry of `models/manifest.json` (`{"models": ModelEntry[]}`), written by build.sh. */
export type ModelEntry = {
  /** e.g. "all-MiniLM-L6-v2" */
  name: string;
  /** "q8_0" | "q4_0" | "f32" | … */
  dtype: string;
  /** file name under models/ */
  file: string;
  /** size in bytes */
  bytes: number;
  /** lowercase hex digest of the file */
  sha256: string;
  /** preselected in the picker */
  default?: boolean;
  /** shown beside it in the picker (e.g. "4-bit only (all that is published)") */
  note?: string;
  /** not in the manifest: the entry the engine makes for a file from this computer */
  local?: boolean;
  /** the file in parts, in order (`sr-bench site`): downloaded instead */
  parts?: ModelPart[];
  /** where the file or its parts are served (the manifest's `base_url`, copied onto each entry
   * by the page); default the site's models/ */
  base_url?: string;
};

export type ModelPart = {
  /** file name under the model base */
  file: string;
  bytes: number;
  sha256: string;
};

/** `Model.info()` as returned by the wasm module. */
export type ModelInfo = {
  name: string;
  /** `general.architecture` (the engine's table names them) */
  architecture: string;
  /** the STS instruction the architecture's model card gives, where files carry none */
  card_prefix?: string;
  dtype: string;
  dim: number;
  num_layers: number;
  intermediate_size: number;
  num_attention_heads?: number;
  /** all query heads' width (dim, but with grouped-query attention) */
  query_width?: number;
  /** all key (or value) heads' width */
  kv_width?: number;
  max_seq_length: number;
  /** put before every text the model reads (e5's "query: "; "" for none) */
  prefix: string;
  pooling: string;
  vocab_size: number;
  file_bytes: number;
  /** a K-quant file's type ("q4_k_m" …), converted at load to `dtype` */
  stored_dtype?: string;
  /** then its converted weights' bytes, which the engine holds */
  converted_bytes?: number;
  /** present in a file made by `sr-bench train` */
  trained?: TrainedFrom;
};

/** How `sr-bench train` made a file from its base (the file's srbench.train.* metadata). */
export type TrainedFrom = {
  /** "stsb", "stsb+sr", "stsb-shuffled" or the training file's name */
  data: string;
  epochs: number;
  /** best on STS-B dev, from 1; 0: no epoch beat the base model */
  kept_epoch: number;
  seed: number;
  /** training pairs after the leak filter */
  pairs: number;
  /** the f32 file it started from */
  base_sha256: string;
};

/** `Model.backend_status()`, filled by Rust: where the encoder runs and why. */
export type BackendStatus = {
  requested: 'cpu' | 'webgpu' | 'auto';
  active: 'cpu' | 'webgpu';
  /** browser_info: the browser's GPUAdapterInfo (wgpu gets no adapter name in the browser);
   * features: the optional WebGPU features the kernels can use that the adapter offers
   * ("shader-f16", "subgroups"); features_used: those the kernels use (f16 activations,
   * subgroup reductions; not when switched off) */
  adapter: {
    name: string;
    backend: string;
    device_type: string;
    driver: string;
    software: boolean;
    features: string[];
    features_used: string[];
    browser_info?: { vendor: string; architecture: string; device: string; description: string };
  } | null;
  /** a software fallback adapter (SwiftShader…): the GPU is emulated on the CPU */
  software_adapter: boolean;
  /** why the CPU runs although WebGPU was asked for */
  fallback_reason: string | null;
  /** oldest first; grows when the GPU fails mid-run (the batch is redone on the CPU) */
  notices: string[];
  /** bytes of the GPU buffers the model holds now (null off the GPU) */
  gpu_memory: {
    weights: number;
    activations: number;
    params: number;
    readback: number;
    total: number;
    largest_buffer: number;
    buffers: number;
  } | null;
};

// ---------------------------------------------------------------- answers (worker → page)

export type ProgressMessage = {
  type: 'progress';
  id: number;
  phase: 'cache' | 'download' | 'verify' | 'read' | 'hash' | 'init' | 'data' | 'prepare' | 'evaluate' | 'probe';
  done: number;
  /** 0 when unknown */
  total: number;
  /** ('workers': the pool is starting; 'pairs': a probe) */
  unit: 'bytes' | 'sentences' | 'files' | 'steps' | 'workers' | 'pairs';
  /** time since this phase started */
  elapsed_ms: number;
};

export type NoticeMessage = {
  type: 'notice';
  id: number;
  level: 'info' | 'warning';
  /** e.g. "cache-corrupt", "cache-unavailable", "backend" (a new backend notice during a run),
   * "helper-replaced" (an embedding helper died during a run and was replaced) */
  code: string;
  /** plain text for the user */
  message: string;
  /** with code "backend": the status after the notice */
  backend_status?: BackendStatus;
};

export type ResultMessage = {
  type: 'result';
  id: number;
  op: Request['type'];
  value:
    | LoadResult
    | InspectFileResult
    | SimilarityResult
    | EmbedResult
    | EvaluateResult
    | ProbeResult
    | { cancelled: boolean };
};

export type ErrorMessage = {
  type: 'error';
  id: number;
  op: Request['type'];
  /** one of ERR */
  code: string;
  /** plain text for the user */
  message: string;
  /** for code "cancelled": "user" | "model-changed" */
  reason?: string;
};

export type Answer = ProgressMessage | NoticeMessage | ResultMessage | ErrorMessage;

// ---------------------------------------------------------------- the requests' results

export type InspectFileResult = {
  file_name: string;
  bytes: number;
  /** as Model.info() would say, with max_seq_length applied */
  info: ModelInfo;
  /** Rust's estimate of one instance's peak memory */
  worker_bytes: number;
  /** worker_bytes ≤ budget_bytes */
  fits: boolean;
  sha256: string | null;
  inspect_ms: number;
  hash_ms: number;
};

export type LoadResult = {
  info: ModelInfo;
  /** where the model runs now: "cpu" | "webgpu" (Model.backend) */
  backend: string;
  backend_status: BackendStatus;
  /** for a file from this computer: {name, dtype, file, bytes, sha256, local: true} */
  entry: ModelEntry;
  /** the truncation asked for (a local file's field), else null */
  max_seq_length: number | null;
  source: 'cache' | 'network' | 'local file';
  timings: { fetch_ms: number; verify_ms: number; init_ms: number; total_ms: number };
};

/** One of a quiz question's two pairs (src/eval/quiz.rs QuizOption). */
export type QuizOption = { a: string; b: string; gold: number; kind: 'relation' | 'structure' | 'pair'; line: number };

/** `sr-bench quiz`'s JSON: the questions, and with `answer` the encoders' answers. */
export type QuizResult = {
  quiz: {
    set: 'sr' | 'czech';
    seed: number;
    min_gap: number;
    eligible: number;
    questions: { file: string; options: [QuizOption, QuizOption]; answer: 0 | 1 }[];
  };
  model?: QuizScore;
  baseline?: QuizScore;
};

/** An encoder's answers: cosines per question (options in the order shown), its choice (null: a
 * tie) and its accuracy (ties ½). */
export type QuizScore = {
  cosines: [number, number][];
  choices: (0 | 1 | null)[];
  accuracy: { n: number; correct: number; accuracy: number | null; ci95: [number, number] | null };
};

export type SimilarityResult = {
  /** model cosine */
  cosine: number;
  /** syntax-blind baseline cosine */
  static_cosine: number;
  ms: number;
  /** token counts of a and b after truncation (special tokens included) */
  tokens: [number, number] | null;
  /** after this call */
  backend_status: BackendStatus;
};

export type EmbedResult = {
  /** row-major n × dim */
  embeddings: Float32Array;
  dim: number;
};

export type EvaluateResult = {
  /** the CLI's report schema (model, encoder, results, stsb_test, paper?, pairs with rank_gap),
   * from Evaluation.finish */
  report: any;
  /** the per-pair CSV (wasm `pairs_csv(report)`): what "Download per-pair CSV" saves */
  pairs_csv: string;
  /** at the end of the run */
  backend_status: BackendStatus;
  /** with `czech` and the model: the syntax-blind baseline's `czech_news_sts` section (as
   * `sr-bench eval-czech --baseline static`) */
  czech_baseline: any;
  /** embed_ms is the wall time of the embedding phase; workers the number of threads that
   * embedded; gpu: the model's chunks went to WebGPU (Model.embed_async) rather than to CPU
   * helpers. flops: the forward passes' operations (Evaluation.forward_flops; 0 for the
   * baseline), over embed_ms the GFLOP/s, and per thread that embedded on the CPU (null on the
   * GPU). */
  timings: {
    data_ms: number;
    prepare_ms: number;
    embed_ms: number;
    finish_ms: number;
    total_ms: number;
    sentences: number;
    workers: number;
    gpu: boolean;
    sentences_per_s: number;
    flops: number;
    gflop_per_s: number | null;
    gflop_per_s_per_core: number | null;
  };
};

export type ProbeResult = {
  /** `sr-bench probe shuffle|layers --json`: shuffle → {model, dtype, stsb_test: {spearman,
   * pearson}, shuffled: {seeds, spearman_mean, spearman_sd, pearson_mean, pearson_sd, per_seed},
   * kept, sr, finding}; layers → {model, dtype, split, pooling, pairs, layers: [{layer,
   * structure_avg, relation_avg, stsb_test}], memory} (Spearman ×100) */
  result: any;
  timings: { total_ms: number; probe_ms: number; pairs: number };
};

/** One token-pair map, as Rust's `Explanation` (src/explain/contributions.rs) serialises it. */
export type TokenPairMap = {
  /** the pipeline's cosine of the pair */
  cosine: number;
  /** "mean" | "cls" | "last" | "max" */
  pooling: string;
  /** contributions sum to `cosine` (mean pooling); token_cosine: the token-to-token cosine
   * matrix (no decomposition) */
  kind: 'contributions' | 'token_cosine';
  encoder: 'model' | 'static';
  /** rows (special tokens included for the model) */
  tokens_a: string[];
  /** columns */
  tokens_b: string[];
  /** [row][column] */
  contributions: number[][];
  row_totals: number[];
  column_totals: number[];
  total: number;
  /** each token's word in `words.tokens_a` */
  word_of_a: number[];
  word_of_b: number[];
  /** the same map with word pieces summed into words */
  words?: TokenPairMap;
};

export type ExplainResult = {
  model: TokenPairMap;
  /** the syntax-blind baseline's map (static token vectors) */
  baseline: TokenPairMap;
  /** the pair's cosine after each layer, layer 0 = embedding output */
  layers: number[];
  /** the same for A and `shuffled_b` */
  layers_shuffled: number[];
  /** B's words shuffled with `shuffle_seed` */
  shuffled_b: string;
  shuffle_seed: number;
  ms: number;
};

export type WordOrderResult = { text: string };

/** one per seed, in order */
export type ShuffleScoresResult = { texts: string[]; cosines: number[] };
