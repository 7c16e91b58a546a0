// The end-to-end tests, chosen by file name: every tests/e2e/*.test.mjs in the gate, and with
// --full also the *.full.test.mjs ones (the long proofs: probes, the soak, the site's quick
// split, a trained model). A new test file runs without being added to a list.
//
//   node tests/e2e/run.mjs [--full]
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const full = process.argv.includes('--full');
const files = readdirSync(dir)
  .filter((name) => name.endsWith('.test.mjs') && (full || !name.endsWith('.full.test.mjs')))
  .sort()
  .map((name) => path.join(dir, name));
if (files.length === 0) throw new Error(`no end-to-end tests in ${dir}`);
// The gate's files two at a time (node's default is one fewer than the cores: one on 2 cores):
// much of a file is page loads, wasm compiles and waits, and the pair took 549 s where one at a
// time took 645 s on a slow 2-core machine, every check passing. The full tier keeps one at a
// time: the soak and the probes measure memory and time.
const concurrency = full ? [] : ['--test-concurrency=2'];
const run = spawnSync(process.execPath, ['--test', ...concurrency, ...files], { stdio: 'inherit' });
process.exit(run.status ?? 1);
