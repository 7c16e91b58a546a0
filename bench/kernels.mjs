// The CPU backend's matrix product against this machine's wasm simd128 peak, in Node's V8
// (the engine Chromium uses). Usage: node bench/kernels.mjs [pkg dir, default www/pkg]
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const pkg = resolve(process.argv[2] || 'www/pkg');
const wasm = await import(pathToFileURL(`${pkg}/sr_bench.js`).href);
wasm.initSync({ module: readFileSync(`${pkg}/sr_bench_bg.wasm`) });

wasm.simd_peak_gflops(10_000_000n); // warm-up: tier-up to optimized code
const peak = Math.max(...[1, 2, 3].map(() => wasm.simd_peak_gflops(100_000_000n)));
console.log(`wasm simd128 mul+add peak (1 thread): ${peak.toFixed(1)} GFLOP/s`);
// MiniLM's linear layers at a batch of 32 sentences × 14 tokens (448 rows), and one sentence.
const pct = (g) => `${g.toFixed(1).padStart(6)} GFLOP/s (${((100 * g) / peak).toFixed(0).padStart(3)}% of peak)`;
for (const [m, n, k] of [[448, 384, 384], [448, 1536, 384], [448, 384, 1536], [112, 384, 384], [2048, 384, 384]]) {
  const [dense, quant] = wasm.matmul_gflops(m, n, k, Math.max(3, Math.round(4e9 / (m * n * k))));
  console.log(`matmul ${m}×${k} · ${k}×${n}: f32 ${pct(dense)}   int16×q8_0 ${pct(quant)}`);
}
