// An embedding helper of the engine's pool (see pool.js): its own wasm instance and its own copy
// of the model, one thread. Started by worker.js (or bench.js); answers two messages:
//
//   {type: 'init',  id, module: WebAssembly.Module, bytes: Uint8Array}
//        → {type: 'ready', id, load_ms}           instantiates the module, loads the model
//   {type: 'embed', id, texts: string[]}
//        → {type: 'embedded', id, embeddings: Float32Array (n × dim, transferred), ms}
//
// Any failure answers {type: 'error', id, message}.

import init, { Model } from './pkg/sr_bench.js';

/** @type {Model|null} */
let model = null;

function messageOf(e) {
  if (e instanceof Error) return e.message;
  return typeof e === 'string' ? e : String(e);
}

self.addEventListener('message', async (e) => {
  const msg = e.data || {};
  try {
    if (msg.type === 'init') {
      const t0 = performance.now();
      await init({ module_or_path: msg.module });
      if (model) model.free();
      model = Model.load(msg.bytes);
      self.postMessage({ type: 'ready', id: msg.id, load_ms: performance.now() - t0 });
    } else if (msg.type === 'embed') {
      if (!model) throw new Error('the helper has no model');
      const t0 = performance.now();
      const embeddings = model.embed(msg.texts);
      self.postMessage({ type: 'embedded', id: msg.id, embeddings, ms: performance.now() - t0 }, [embeddings.buffer]);
    } else {
      throw new Error(`unknown message ${msg.type}`);
    }
  } catch (err) {
    self.postMessage({ type: 'error', id: msg.id, message: messageOf(err) });
  }
});
