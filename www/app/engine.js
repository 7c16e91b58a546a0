// The engine worker (worker.js) as the page sees it: started once, restarted after a crash.

import { RpcClient } from '../rpc.js';
import { $, setMessage } from './ui.js';

export function startEngine(state) {
  const worker = new Worker(new URL('../worker.js', import.meta.url), { type: 'module', name: 'sr-bench-engine' });
  const client = new RpcClient(worker);
  worker.addEventListener('error', (e) => {
    const why = e.message || 'the engine script failed to load';
    client.failAll(`The engine stopped: ${why}`);
    setMessage($('model-status'), `The engine could not start: ${why}. Reload the page to try again.`, 'error');
  });
  worker.addEventListener('messageerror', () => {
    setMessage($('model-status'), 'The engine sent a message the page could not read.', 'error');
  });
  state.engine = client;
}

export function restartEngine(state) {
  state.engine.worker.terminate();
  state.engine.failAll('The engine was restarted.');
  state.loaded = null;
  startEngine(state);
}
