// Step 4's downloads: the JSON report (the engine's report plus backend, browser and timings)
// and the per-pair CSV (written by Rust: `pairs_csv` of the evaluate result).

import { download } from './ui.js';

/** sr-bench-<model>-<dtype>-<split>[-static], safe as a file name. */
function exportBaseName(state) {
  const { report, load } = state.result;
  const enc = report.encoder === 'static' ? '-static' : '';
  return `sr-bench-${load.info.name}-${report.dtype}-${report.split}${enc}`.replace(/[^A-Za-z0-9._-]/g, '_');
}

export function exportJson(state) {
  if (!state.result) return;
  const { report, timings, load } = state.result;
  // Where the run ended up running ("cpu" | "webgpu"); backend_status has the request, the
  // adapter and any fallback.
  const backendStatus = state.result.backend_status || load.backend_status || null;
  const out = {
    ...report,
    encoder: report.encoder,
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

export function exportCsv(state) {
  if (!state.result) return;
  download(`${exportBaseName(state)}-pairs.csv`, 'text/csv', state.result.pairs_csv);
}
