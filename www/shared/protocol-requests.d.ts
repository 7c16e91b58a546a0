// The requests of the page ↔ worker protocol (protocol.js; page → worker), and the contract the
// engine client's call sites are checked against: what each request sends and answers. Types
// only, never loaded; protocol.js re-exports them. Their answers: protocol-answers.d.ts.

import type {
  EmbedResult,
  EvaluateResult,
  ExplainResult,
  InspectFileResult,
  LoadResult,
  ModelEntry,
  ModelInfo,
  ProbeResult,
  QuizResult,
  ShuffleScoresResult,
  SimilarityResult,
  WordOrderResult,
} from './protocol-answers';

export type LoadRequest = {
  type: 'load';
  id: number;
  /** a model of this site, or: */
  model?: ModelEntry;
  /** a model file from this computer */
  file?: File;
  /** with `file`: its sha256 from `inspect-file` (a file changed since fails) */
  sha256?: string;
  /** with `file`: truncation (default: the file's value) */
  max_seq_length?: number;
  /** absolute URL of the site root (ends with "/"), with `model` */
  baseUrl?: string;
  /** default "cpu" */
  backend?: 'cpu' | 'webgpu' | 'auto';
};

export type InspectFileRequest = {
  type: 'inspect-file';
  id: number;
  file: File;
  max_seq_length?: number;
  /** the page's memory budget (shared/pool-size.js memoryBudget): the sha256 is computed only
   * for a file whose worker_bytes fit it */
  budget_bytes: number;
  /** the page has the sha256 already */
  skip_hash?: boolean;
};

export type SimilarityRequest = {
  type: 'similarity';
  id: number;
  a: string;
  b: string;
};

export type EmbedRequest = {
  type: 'embed';
  id: number;
  texts: string[];
};

export type EvaluateRequest = {
  type: 'evaluate';
  id: number;
  split: 'quick' | 'full';
  /** "static" = the syntax-blind baseline */
  encoder: 'model' | 'static';
  /** some of SR_FILES (default: all six); the avg then averages these. Empty when only STS-B
   * test or Czech News STS is asked for. */
  files?: string[];
  /** score STS-B test too (default true) */
  stsb_test?: boolean;
  /** score Czech News STS too (CZECH_PATH; default false) */
  czech?: boolean;
  /** a user's own pairs file (CSV/TSV, STS or SR layout), scored alone: files, stsb_test and
   * czech are then ignored; read in the engine, never uploaded */
  own?: File;
  baseUrl: string;
  /** helper workers for the model (default 0: one per core, capped; 1: no pool, embed in the
   * engine worker, one thread) */
  workers?: number;
};

export type CancelRequest = {
  type: 'cancel';
  id: number;
  /** id of the `evaluate` request to stop */
  target: number;
};

export type ExplainRequest = {
  type: 'explain';
  id: number;
  a: string;
  b: string;
  /** B's words are shuffled with it for `layers_shuffled` (default 0) */
  shuffle_seed?: number;
};

export type WordOrderRequest = {
  type: 'word-order';
  id: number;
  op: 'shuffle' | 'reverse' | 'swap';
  text: string;
  /** with "shuffle": a non-negative safe integer */
  seed?: number;
  /** with "swap": the two words' positions (0-based, whitespace-separated words) */
  i?: number;
  j?: number;
};

export type ShuffleScoresRequest = {
  type: 'shuffle-scores';
  id: number;
  text: string;
  seeds: readonly number[];
};

export type ProbeRequest = {
  type: 'probe';
  id: number;
  kind: 'shuffle' | 'layers';
  /** the SR rows (the shuffle probe's sanity row; the layer probe's SR averages) */
  split: 'quick' | 'full';
  /** shuffle seeds 0..seeds (at least 1; ignored by "layers") */
  seeds?: number;
  baseUrl: string;
};

export type QuizRequest = {
  type: 'quiz';
  id: number;
  set: 'sr' | 'czech';
  /** 0 ≤ seed < 2³² (the link's `quiz=`) */
  seed: number;
  questions: number;
  min_gap: number;
  /** also the model's and the baseline's answers (needs a loaded model) */
  answer: boolean;
  baseUrl: string;
};

/** answered with {} (the page's liveness check) */
export type PingRequest = { type: 'ping'; id: number };

export type Request =
  | LoadRequest
  | InspectFileRequest
  | SimilarityRequest
  | EmbedRequest
  | EvaluateRequest
  | ProbeRequest
  | CancelRequest
  | ExplainRequest
  | WordOrderRequest
  | ShuffleScoresRequest
  | QuizRequest
  | PingRequest;

// ---------------------------------------------------------------- the contract the call sites are checked against

/** A request's payload: what the caller passes to `RpcClient.call` (rpc.js adds `type` and `id`). */
export type Payload<R> = Omit<R, 'type' | 'id'>;

/**
 * Every request of the page ↔ engine protocol: what it sends (`payload`) and what its `result`
 * carries. The keys are REQ's values.
 */
export type EngineRequests = {
  'inspect-file': { payload: Payload<InspectFileRequest>; result: InspectFileResult };
  'load': { payload: Payload<LoadRequest>; result: LoadResult };
  'similarity': { payload: Payload<SimilarityRequest>; result: SimilarityResult };
  'embed': { payload: Payload<EmbedRequest>; result: EmbedResult };
  'evaluate': { payload: Payload<EvaluateRequest>; result: EvaluateResult };
  'probe': { payload: Payload<ProbeRequest>; result: ProbeResult };
  'cancel': { payload: Payload<CancelRequest>; result: { cancelled: boolean } };
  'explain': { payload: Payload<ExplainRequest>; result: ExplainResult };
  'word-order': { payload: Payload<WordOrderRequest>; result: WordOrderResult };
  'shuffle-scores': { payload: Payload<ShuffleScoresRequest>; result: ShuffleScoresResult };
  'quiz': { payload: Payload<QuizRequest>; result: QuizResult };
  'ping': { payload: Payload<PingRequest>; result: {} };
  'set-prefix': { payload: { prefix: string }; result: { info: ModelInfo } };
};

/** The pool helpers' requests (engine/embed-worker.js). `module`: the engine's compiled wasm. */
export type HelperRequests = {
  'init': {
    payload: { module: WebAssembly.Module; bytes: Uint8Array; max_seq_length: number | null; prefix: string };
    result: { load_ms: number };
  };
  'embed': { payload: { texts: string[] }; result: { embeddings: Float32Array; ms: number } };
};
