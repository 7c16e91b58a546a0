// The CPU backend's matrix products against this machine's wasm SIMD peaks, one thread. The
// peaks and per-shape figures are exports of a wasm built with the `bench` cargo feature
// (bench/site.sh builds it into bench/out/pkg; the shipped www/pkg does not have them).
// Usage: node bench/kernels.mjs [pkg dir, default bench/out/pkg]   in Node's V8
//        node bench/kernels.mjs http://127.0.0.1:PORT/               in headless Chromium, against
//                                                                     the served benchmark site (bench/out/site)
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

// Self-contained (Chromium receives its source): the figures as printed lines.
function measure(wasm) {
  // Best of 3 after a warm-up (tier-up to optimized code).
  const best = (run) => {
    run(10_000_000n);
    return [1, 2, 3].map(() => run(100_000_000n)).reduce((a, b) => a.map((v, i) => Math.max(v, b[i])));
  };
  const [f32Peak] = best((n) => [wasm.simd_peak_gflops(n)]);
  const [int16Peak] = best((n) => [wasm.int_dot_peak_gops(n)]);
  const lines = [`peaks (1 thread): f32x4 mul+add ${f32Peak.toFixed(1)} GFLOP/s; i16x8 dot+add ${int16Peak.toFixed(1)} GOPS`];
  // A kernel's ceiling: f32 and the 16-bit kernel run at their instruction's peak.
  const pct = (g, ceiling) => `${g.toFixed(1).padStart(6)} (${((100 * g) / ceiling).toFixed(0).padStart(3)}%)`;
  lines.push('GFLOP/s (multiply-adds × 2), % of each kernel\'s ceiling: f32 of the f32 peak, int16 of the i16 dot peak');
  // MiniLM's linear layers at a batch of 32 sentences × 14 tokens (448 rows), and one sentence.
  for (const [m, n, k] of [[448, 384, 384], [448, 1536, 384], [448, 384, 1536], [112, 384, 384], [2048, 384, 384]]) {
    const [dense, int16] = wasm.matmul_gflops(m, n, k, Math.max(10, Math.round(8e9 / (m * n * k))));
    lines.push(`matmul ${m}×${k} · ${k}×${n}: f32 ${pct(dense, f32Peak)}   int16×q8_0 ${pct(int16, int16Peak)}`);
  }
  return lines;
}

const target = process.argv[2] || 'bench/out/pkg';
if (/^https?:/.test(target)) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
  try {
    // The site's CSP forbids building a function from source; the benchmark is no part of it.
    const page = await (await browser.newContext({ bypassCSP: true })).newPage();
    await page.goto(new URL('bench.html?sentences=0&models=none', target).href); // a page of the site, measuring nothing
    const lines = await page.evaluate(async ([source, pkgUrl]) => {
      const wasm = await import(pkgUrl);
      await wasm.default();
      if (typeof wasm.simd_peak_gflops !== 'function') {
        throw new Error('this wasm has no benchmark exports: serve bench/out/site (bash bench/site.sh)');
      }
      return new Function(`return (${source})`)()(wasm);
    }, [measure.toString(), new URL('pkg/sr_bench.js', target).href]);
    console.log(`${lines.join('\n')}\n(${await page.evaluate(() => navigator.userAgent)})`);
  } finally {
    await browser.close();
  }
} else {
  const pkg = resolve(target);
  const wasm = await import(pathToFileURL(`${pkg}/sr_bench.js`).href);
  wasm.initSync({ module: readFileSync(`${pkg}/sr_bench_bg.wasm`) });
  if (typeof wasm.simd_peak_gflops !== 'function') {
    console.error(`${pkg} has no benchmark exports: build it with bash bench/site.sh (cargo feature bench)`);
    process.exit(1);
  }
  console.log(measure(wasm).join('\n'));
}
