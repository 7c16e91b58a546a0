// The GPU benchmark (run by bench/gpu.sh): native wgpu (`sr-bench bench --backend auto`: Vulkan,
// Metal or DX12) and headless Chromium's WebGPU (bench/web/bench.html, served from the benchmark
// site bench/out/site that bench/gpu.sh builds with bench/site.sh), for every MiniLM and MPNet
// file in www/models: load time, sentences/s, GPU memory (backend_status.gpu_memory: the
// bytes of the buffers created) and the adapter. A software adapter (llvmpipe/lavapipe,
// SwiftShader, WARP: CPU emulation) is never called a GPU, and a model that ran on the CPU
// fallback says so.
//   SAMPLE=2000        SR sentences per model (FULL=1: all of them)
//   MODELS=a.gguf,b    files of www/models (default: all-MiniLM-L6-v2.* and all-mpnet-base-v2.*)
//   NATIVE=0 / BROWSER=0  skip a part;  SR_BENCH=path of the CLI;  CHROMIUM=path of the browser
//   BROWSER_WEBGPU=gpu (the machine's GPU, default) or swiftshader
//   BATCH=32           natively, sentences per batch (default: the backend's — up to 256 on a
//                      hardware GPU, 32 on a software one); BATCH=32 against the default measures
//                      the fuller grids
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { benchInChromium, REAL_GPU_ARGS, SWIFTSHADER_ARGS } from './bench-page.mjs';

const env = process.env;
const sentences = env.FULL === '1' ? 1_000_000 : Number(env.SAMPLE || 2000); // 1e6: every SR sentence
const cli = env.SR_BENCH || 'target/release/sr-bench';
const manifest = JSON.parse(readFileSync('www/models/manifest.json', 'utf8'));
const files = env.MODELS ? env.MODELS.split(',')
  : manifest.models.map((m) => m.file).filter((f) => /^all-(MiniLM-L6-v2|mpnet-base-v2)\./.test(f));

const SOFTWARE = /llvmpipe|lavapipe|swiftshader|softpipe|microsoft basic render|\bwarp\b/i;

/** Where a model ran, in words that never call a software adapter or the CPU a GPU. */
function where(status, reason) {
  if (!status || status.active !== 'webgpu') {
    return `runs on CPU fallback, not a GPU figure (${reason || status?.fallback_reason || 'no GPU'})`;
  }
  const a = status.adapter || {};
  const name = a.name && !/^unnamed adapter/.test(a.name) ? a.name
    : [a.browser_info?.vendor, a.browser_info?.architecture].filter(Boolean).join(' ') || 'unnamed adapter';
  const used = a.features_used?.length ? a.features_used.join(', ') : 'none';
  const features = a.features?.length ? `; features ${a.features.join(', ')}, used ${used}` : '; no shader-f16/subgroups';
  if (status.software_adapter || a.device_type === 'cpu' || SOFTWARE.test(`${name} ${a.driver || ''}`)) {
    return `software adapter, not a GPU: ${name} (${a.backend}${features})`;
  }
  return `GPU: ${name} (${a.backend}, ${a.device_type}${features})`;
}

const mb = (b) => (b / 1e6).toFixed(1);
function memory(m) {
  return m ? `${mb(m.total)} MB (weights ${mb(m.weights)}, activations ${mb(m.activations)})` : '-';
}

function row(file, loadMs, rate, mem, place) {
  console.log(`${file.padEnd(30)} ${loadMs.toFixed(0).padStart(9)} ${rate.toFixed(1).padStart(12)}  ${mem.padEnd(44)} ${place}`);
}

function header(title) {
  console.log(`\n== ${title}`);
  console.log(`${'model file'.padEnd(30)} ${'load (ms)'.padStart(9)} ${'sentences/s'.padStart(12)}  ${'GPU memory'.padEnd(44)} where it ran`);
}

function native() {
  header(`native wgpu (${cli} bench --backend auto), ${sentences >= 1e6 ? 'all' : sentences} SR sentences, ` +
    `batches of ${env.BATCH || "the backend's size"}`);
  for (const file of files) {
    const batch = env.BATCH ? ['--batch-size', env.BATCH] : [];
    const run = spawnSync(cli, ['bench', '--backend', 'auto', '--data', 'data', '--sentences', String(sentences),
      ...batch, '--model', `www/models/${file}`], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (run.status !== 0) {
      console.log(`${file.padEnd(30)} failed: ${(run.stderr || run.error?.message || '').trim().split('\n').pop()}`);
      continue;
    }
    const line = run.stdout.split('\n').find((l) => l.startsWith(`${file} `));
    const status = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith(`backend_status ${file}: `))
      .slice(`backend_status ${file}: `.length));
    const [, loadMs, rate] = line.trim().split(/\s+/).map(Number);
    row(file, loadMs, rate, memory(status.gpu_memory), where(status));
  }
}

async function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function browser() {
  const software = env.BROWSER_WEBGPU === 'swiftshader';
  const port = await freePort();
  const server = spawn(cli, ['serve', '--dir', 'bench/out/site', '--port', String(port)], { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 700));
    const { userAgent, results, skipped = [] } = await benchInChromium(`http://127.0.0.1:${port}/`, {
      sentences, models: files.join(','), backends: 'webgpu', gpuArgs: software ? SWIFTSHADER_ARGS : REAL_GPU_ARGS,
    });
    header(`headless Chromium WebGPU (${software ? 'SwiftShader flags' : 'GPU flags'}), ${results[0]?.sentences ?? sentences} SR sentences — ${userAgent}`);
    for (const r of results) {
      // wgpu 30 in the browser passes on `shader-f16` but not `subgroups` (SwiftShader has it).
      const status = {
        active: r.fell_back_to_cpu ? 'cpu' : 'webgpu', fallback_reason: r.fell_back_to_cpu,
        software_adapter: r.adapter?.software,
        adapter: r.adapter && { ...r.adapter, name: r.adapter.wgpu_name, features: r.adapter.features,
          features_used: r.adapter.features_used },
      };
      row(r.file, r.load_ms, r.sentences_per_s, memory(r.gpu_memory), where(status));
    }
    // The page measures the GPU only (no CPU fallback at load): a file the GPU refused has no GPU figure.
    for (const s of skipped) console.log(`not on the GPU: ${s} — in the page this model runs on the CPU fallback`);
  } finally {
    server.kill();
  }
}

if (env.NATIVE !== '0') native();
if (env.BROWSER !== '0') await browser();
