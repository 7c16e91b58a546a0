// @ts-check
// An embedding helper of the engine's pool (see pool.js): its own wasm instance and its own copy
// of the model, one thread. Started by worker.js; answers two requests (rpc.js: a `result` with
// the value below, or an `error` with the wasm error's `code`):
//
//   {type: 'init',  id, module: WebAssembly.Module, bytes: Uint8Array, max_seq_length: number|null,
//                   prefix: string}
//        → {load_ms}                               instantiates the module, loads the model
//                                                  (truncating and prefixing as the engine's model does)
//   {type: 'embed', id, texts: string[]}
//        → {embeddings: Float32Array (n × dim, transferred), ms}

import init, { Model } from '../pkg/sr_bench.js';
import { ERR, HELPER_REQ } from '../shared/protocol.js';
import { codedError } from '../shared/errors.js';
import { serve } from '../shared/rpc.js';
import { exposeWasmMemory } from './pool.js';

/** The helper's model. @type {{model: Model|null}} */
const helper = { model: null };

serve(self, {
  async [HELPER_REQ.INIT](msg) {
    const t0 = performance.now();
    exposeWasmMemory(await init({ module_or_path: msg.module }));
    if (helper.model) helper.model.free();
    helper.model = null;
    helper.model = Model.load_with(msg.bytes, msg.max_seq_length ?? undefined, msg.prefix);
    return { load_ms: performance.now() - t0 };
  },
  [HELPER_REQ.EMBED](msg) {
    if (!helper.model) throw codedError(ERR.NO_MODEL, 'the helper has no model');
    const t0 = performance.now();
    const embeddings = helper.model.embed(msg.texts);
    return { embeddings, ms: performance.now() - t0 };
  },
});
