// What every end-to-end test needs from the environment, checked once: a missing variable is a
// failure with a message saying what to set, never a skipped test or a downgraded comparison.
//
//   SR_BENCH_URL     the built site, served by `sr-bench serve --dir www/dist`
//   SR_BENCH_EXPECT  the CLI's figures on the same files (build.sh writes tests/artifacts/e2e-expect.json)
//   SR_BENCH_CLI     the native CLI (only for the tests that run it)
//   CHROMIUM         the browser (default /usr/bin/chromium)

import fs from 'node:fs';

const HOW = 'run the e2e tests through `./build.sh test`, or set it by hand (see tests/e2e/env.mjs)';

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: ${HOW}`);
  return value;
}

/** The site under test (SR_BENCH_URL), normalised to end in '/'. */
export function siteUrl() {
  return new URL(required('SR_BENCH_URL')).href;
}

/** The CLI's expected figures (SR_BENCH_EXPECT), with every key in `keys` present. */
export function expected(keys) {
  const file = required('SR_BENCH_EXPECT');
  const data = JSON.parse(fs.readFileSync(file, 'utf8'));
  const missing = keys.filter((k) => data[k] === undefined || data[k] === null);
  if (missing.length) throw new Error(`${file} lacks ${missing.join(', ')}: ${HOW}`);
  return data;
}

/** The native CLI (SR_BENCH_CLI), which must exist. */
export function cliPath() {
  const cli = required('SR_BENCH_CLI');
  if (!fs.existsSync(cli)) throw new Error(`SR_BENCH_CLI=${cli} does not exist: build it (cargo build --release)`);
  return cli;
}

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
