// Runs bench.html (bench/web/: load time and sentences/s per model file and backend) in headless
// Chromium against the served benchmark site (bench/out/site, made by bench/site.sh) and returns
// its JSON: { userAgent, results, skipped }.
// Used by bench/browser.mjs (tables) and bench/gpu.mjs (the GPU benchmark).
import { chromium } from 'playwright-core';

// Chromium's WebGPU on the machine's GPU (Vulkan on Linux; Metal/D3D12 elsewhere by default).
export const REAL_GPU_ARGS = ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-angle=vulkan',
  '--ignore-gpu-blocklist'];
// Without a GPU process: WebGPU is SwiftShader (the GPU emulated on the CPU).
export const SWIFTSHADER_ARGS = ['--disable-gpu', '--enable-unsafe-webgpu'];

/** `backends`: "cpu,webgpu"…; `gpuArgs`: REAL_GPU_ARGS, SWIFTSHADER_ARGS or [] (CPU only). */
export async function benchInChromium(url, { sentences, models, backends, gpuArgs = [] }) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic',
      ...(gpuArgs.length ? gpuArgs : ['--disable-gpu'])],
  });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'error') console.error('console:', m.text()); });
    const query = new URLSearchParams({ sentences, models, backends });
    await page.goto(new URL(`bench.html?${query}`, url).href);
    const results = page.locator('#results[data-json], #results[data-error]');
    await results.waitFor({ state: 'attached', timeout: 60 * 60 * 1000 });
    const error = await page.locator('#results').getAttribute('data-error');
    if (error) throw new Error(error);
    return JSON.parse(await page.locator('#results').getAttribute('data-json'));
  } finally {
    await browser.close();
  }
}
