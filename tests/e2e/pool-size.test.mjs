// defaultPoolSize: how many embedding helpers (each a wasm instance with its own model copy)
// the page starts, from the core count, the device's RAM and what one helper needs, which Rust
// estimates (`estimate_worker_bytes(info)`, the wasm package in www/pkg, built by build.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';

const PKG = new URL('../../www/pkg/', import.meta.url);
const WASM = new URL('sr_bench_bg.wasm', PKG);
// A missing package is a failure, not a skip: these numbers come from Rust.
assert.ok(existsSync(WASM), 'www/pkg is not built: run ./build.sh build (wasm-pack) first');

const manifest = {
  minilmQ8: {
    architecture: 'bert', dtype: 'q8_0', dim: 384, num_layers: 6, intermediate_size: 1536,
    vocab_size: 30522, max_seq_length: 256, file_bytes: 25_120_704,
  },
  mpnetQ8: {
    architecture: 'mpnet', dtype: 'q8_0', dim: 768, num_layers: 12, intermediate_size: 3072,
    vocab_size: 30527, max_seq_length: 384, file_bytes: 117_700_672,
  },
  mpnetF32: {
    architecture: 'mpnet', dtype: 'f32', dim: 768, num_layers: 12, intermediate_size: 3072,
    vocab_size: 30527, max_seq_length: 384, file_bytes: 436_065_120,
  },
};

let wasm = null;
async function poolSize(info, navigator) {
  if (!wasm) {
    wasm = await import(new URL('sr_bench.js', PKG).href);
    await wasm.default({ module_or_path: readFileSync(WASM) });
  }
  Object.defineProperty(globalThis, 'navigator', { value: navigator, configurable: true });
  const { defaultPoolSize } = await import('../../www/shared/pool-size.js');
  return defaultPoolSize(wasm.estimate_worker_bytes(info));
}

test('a small model gets one helper per core', async () => {
  assert.equal(await poolSize(manifest.minilmQ8, { hardwareConcurrency: 2 }), 2);
  assert.equal(await poolSize(manifest.minilmQ8, { hardwareConcurrency: 8, deviceMemory: 8 }), 8);
});

test('mpnet on a 4 GB phone stays within a quarter of its RAM', async () => {
  // q8_0 MPNet keeps its weights in the file's bytes (~177 MB) + one batch (≤ 300 MB).
  assert.equal(await poolSize(manifest.mpnetQ8, { hardwareConcurrency: 8, deviceMemory: 4 }), 2);
  assert.equal(await poolSize(manifest.mpnetF32, { hardwareConcurrency: 8, deviceMemory: 4 }), 1);
});

test('never fewer than one helper', async () => {
  assert.equal(await poolSize(manifest.mpnetF32, { hardwareConcurrency: 1, deviceMemory: 0.5 }), 1);
});
