// The CPU backend's matrix products against this machine's wasm SIMD peaks, one thread.
// Usage: node bench/kernels.mjs [pkg dir, default www/pkg]      in Node's V8
//        node bench/kernels.mjs http://127.0.0.1:PORT/ [relaxed] in headless Chromium, the site's pkg/
//                                                                (relaxed: its relaxed-SIMD build)
// The relaxed-SIMD build in Node: node --experimental-wasm-relaxed-simd bench/kernels.mjs www/pkg-relaxed
// (Node 20's V8 11.3 needs the flag, and lowers the relaxed dot without AVX-VNNI: Chromium's figures
// are the ones the page gets).
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
  const [int16Peak, relaxedPeak] = best((n) => Array.from(wasm.int_dot_peak_gops(n)));
  const hasRelaxed = Number.isFinite(relaxedPeak);
  const lines = [`peaks (1 thread): f32x4 mul+add ${f32Peak.toFixed(1)} GFLOP/s; i16x8 dot+add ${int16Peak.toFixed(1)} GOPS; ` +
    (hasRelaxed ? `relaxed i8 dot ${relaxedPeak.toFixed(1)} GOPS` : 'relaxed i8 dot: not in this build')];
  // A kernel's ceiling: f32 and the 16-bit kernel run at their instruction's peak; the 14-bit
  // relaxed kernel needs two relaxed dots per multiply-add pair of digits, so half the dot's peak.
  const pct = (g, ceiling) => `${g.toFixed(1).padStart(6)} (${((100 * g) / ceiling).toFixed(0).padStart(3)}%)`;
  lines.push('GFLOP/s (multiply-adds × 2), % of each kernel\'s ceiling: f32 of the f32 peak, int16 of the i16 dot peak, ' +
    'relaxed int14 of half the relaxed-dot peak (two dots per product), relaxed int7 of the relaxed-dot peak (one dot per product)');
  // MiniLM's linear layers at a batch of 32 sentences × 14 tokens (448 rows), and one sentence.
  for (const [m, n, k] of [[448, 384, 384], [448, 1536, 384], [448, 384, 1536], [112, 384, 384], [2048, 384, 384]]) {
    const [dense, int16, relaxed, relaxed7] = wasm.matmul_gflops(m, n, k, Math.max(10, Math.round(8e9 / (m * n * k))));
    const relaxedText = hasRelaxed
      ? `   relaxed int14×q8_0 ${pct(relaxed, relaxedPeak / 2)}   relaxed int7×q8_0 ${pct(relaxed7, relaxedPeak)}` : '';
    lines.push(`matmul ${m}×${k} · ${k}×${n}: f32 ${pct(dense, f32Peak)}   int16×q8_0 ${pct(int16, int16Peak)}${relaxedText}`);
  }
  return lines;
}

const target = process.argv[2] || 'www/pkg';
if (/^https?:/.test(target)) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
  try {
    // The site's CSP forbids building a function from source; the benchmark is no part of it.
    const page = await (await browser.newContext({ bypassCSP: true })).newPage();
    await page.goto(new URL('bench.html?sentences=0', target).href);
    // The site's two builds share pkg/sr_bench.js; the relaxed one is only a .wasm (www/cpu-build.js).
    const wasmUrl = new URL(process.argv[3] === 'relaxed' ? 'pkg-relaxed/sr_bench_bg.wasm' : 'pkg/sr_bench_bg.wasm', target).href;
    const lines = await page.evaluate(async ([source, pkgUrl, wasmUrl]) => {
      const wasm = await import(pkgUrl);
      await wasm.default({ module_or_path: wasmUrl });
      return new Function(`return (${source})`)()(wasm);
    }, [measure.toString(), new URL('pkg/sr_bench.js', target).href, wasmUrl]);
    console.log(`${lines.join('\n')}\n(${await page.evaluate(() => navigator.userAgent)})`);
  } finally {
    await browser.close();
  }
} else {
  const pkg = resolve(target);
  const wasm = await import(pathToFileURL(`${pkg}/sr_bench.js`).href);
  wasm.initSync({ module: readFileSync(`${pkg}/sr_bench_bg.wasm`) });
  console.log(measure(wasm).join('\n'));
}
