// @ts-check
// How the page (app/backend.js) and the throughput page (bench.js) name a WebGPU adapter.

/** The adapter's name from `backend_status().adapter`; in the browser wgpu gets none ("unnamed
 * adapter…"), so the browser's own vendor and architecture (`browser_info`, filled by Rust, e.g.
 * "google swiftshader") name it instead. */
export function adapterLabel(adapter) {
  if (!adapter) return 'unknown adapter';
  const info = adapter.browser_info;
  const fromBrowser = info ? [info.vendor, info.architecture, info.device].filter(Boolean).join(' ') : '';
  return adapter.name && !/^unnamed adapter/.test(adapter.name) ? adapter.name : fromBrowser || adapter.name || 'unnamed adapter';
}
