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
const run = spawnSync(process.execPath, ['--test', ...files], { stdio: 'inherit' });
process.exit(run.status ?? 1);
