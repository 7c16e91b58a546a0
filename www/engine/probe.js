// @ts-check
// The engine's `probe` request: the paper's word-order experiment ("shuffle") or the
// layer-by-layer view ("layers"), stepped here through the wasm `Probe` (Rust does all the
// work; its `finish` gives exactly the JSON of `sr-bench probe shuffle|layers --json`).
// It is the engine's one run, like a benchmark: `cancel` stops it within one chunk of pairs.

import { Probe } from '../pkg/sr_bench.js';
import { SR_FILES } from '../shared/protocol.js';
import { beginRun, fetchAllData } from './evaluate.js';
import { requireModel, toPlain, yieldToEvents } from './engine-state.js';

const PROBE_NAMES = { shuffle: 'Word-order probe', layers: 'Layer probe' };

/** @returns {Promise<import('../shared/protocol.js').ProbeResult>} */
export async function probe(engine, msg) {
  const model = requireModel(engine);
  const run = beginRun(engine, msg, PROBE_NAMES[msg.kind] || 'Probe');
  const { progress, checkCancel } = run;
  let p = null;
  try {
    const t0 = performance.now();
    const bytes = await fetchAllData(engine, msg.baseUrl, run);
    p = new Probe(msg.kind, msg.split, Number(msg.seeds) || 0); // unknown kind / no seeds: code "bad-request"
    SR_FILES.forEach((f, i) => p.add_sr_file(f, bytes[i]));
    p.set_stsb_test(bytes[SR_FILES.length]);
    const total = p.prepare();
    const t1 = performance.now();
    progress('probe', 0, total, 'pairs', 0);
    while (!p.is_done()) {
      const done = p.step(model); // the CPU encoder (a WebGPU model probes on its CPU backend)
      progress('probe', done, total, 'pairs', performance.now() - t1);
      await yieldToEvents(); // lets cancel / similarity / load messages in
      checkCancel();
    }
    const result = toPlain(p.finish(model));
    return { result, timings: { total_ms: performance.now() - t0, probe_ms: performance.now() - t1, pairs: total } };
  } finally {
    if (p) p.free();
    run.end();
  }
}
