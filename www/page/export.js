// @ts-check
// Step 4's downloads: the JSON report (the engine's report plus backend, browser and timings)
// and the per-pair CSV (written by Rust: `pairs_csv` of the evaluate result).

import { download } from './ui.js';

/** @typedef {import('./state.js').PageState} PageState */

/**
 * Where the run's model came from: `{kind: "local file", file_name, sha256, bytes, max_seq_length}`
 * for a file from this computer (max_seq_length: the field's value, null for the file's own), or
 * `{kind: "site", file_name, sha256, bytes}` for a model of this site.
 */
export function modelSource(load) {
  const e = load.entry;
  const source = { kind: e.local ? 'local file' : 'site', file_name: e.file, sha256: e.sha256, bytes: e.bytes };
  if (e.local) source.max_seq_length = load.max_seq_length ?? null;
  return source;
}

/** sr-bench-<model>-<dtype>-<split>[-static], safe as a file name. */
/** @param {PageState} state */
function exportBaseName(state) {
  const { report, load } = state.result;
  const enc = report.encoder === 'static' ? '-static' : '';
  return `sr-bench-${load.info.name}-${report.dtype}-${report.split}${enc}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** @param {PageState} state */
export function exportJson(state) {
  if (!state.result) return;
  const { report, timings, load } = state.result;
  // Where the run ended up running ("cpu" | "webgpu"); backend_status has the request, the
  // adapter and any fallback.
  const backendStatus = state.result.backend_status || load.backend_status || null;
  const out = {
    ...report,
    encoder: report.encoder,
    // Czech News STS runs: the syntax-blind baseline's section beside the model's.
    ...(state.result.czech_baseline ? { czech_news_sts_baseline: state.result.czech_baseline } : {}),
    model_source: modelSource(load),
    backend: backendStatus && backendStatus.active === 'webgpu' ? 'webgpu' : 'cpu',
    backend_choice: state.backend,
    backend_status: backendStatus,
    browser: {
      user_agent: navigator.userAgent,
      language: navigator.language,
      hardware_concurrency: navigator.hardwareConcurrency || null,
      webgpu_api: 'gpu' in navigator,
    },
    timings: {
      model_source: load.source,
      model_fetch_ms: load.timings.fetch_ms,
      model_verify_ms: load.timings.verify_ms,
      model_init_ms: load.timings.init_ms,
      ...timings,
    },
  };
  download(`${exportBaseName(state)}.json`, 'application/json', `${JSON.stringify(out, null, 2)}\n`);
}

/** @param {PageState} state */
export function exportCsv(state) {
  if (!state.result) return;
  download(`${exportBaseName(state)}-pairs.csv`, 'text/csv', state.result.pairs_csv);
}
