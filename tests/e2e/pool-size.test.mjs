// defaultPoolSize: how many embedding helpers (each a wasm instance with its own model copy)
// the page starts, from the core count, the model's memory and the device's RAM.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const manifest = {
  minilmQ8: { bytes: 25_120_704, dtype: 'q8_0' },
  mpnetQ8: { bytes: 117_700_672, dtype: 'q8_0' },
  mpnetF32: { bytes: 436_065_120, dtype: 'f32' },
};

async function poolSize(entry, navigator) {
  Object.defineProperty(globalThis, 'navigator', { value: navigator, configurable: true });
  const { defaultPoolSize } = await import('../../www/pool.js');
  return defaultPoolSize(entry);
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
