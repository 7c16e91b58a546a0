// E2E: a class's quiz with `sr-bench serve --class` (its own server on a free port, a fresh
// database). The teacher's page starts a class on the quiz of seed 4242; three students open
// the class link in their own browser contexts and answer with fixed picks; the teacher's view
// counts three, and its figures equal those computed here from the picks and the CLI's gold;
// the model's figure is the CLI's; the CSV export has a row per student; deleting the class
// makes its code unknown. axe-core checks the teacher's view.
//
//   node --test tests/e2e/class.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ARTIFACTS, ROOT, axeViolations, cliPath, launchChromium, watchErrors } from './common.mjs';

const SEED = 4242;
const MODEL = path.join(ROOT, 'www/models/all-MiniLM-L6-v2.q8_0.gguf');
const PICKS = [
  [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
  [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
  [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
];

/** `sr-bench serve --dir www/dist --port 0 --class DB`: the process and its URL. */
async function startClassServer(db) {
  const child = spawn(cliPath(), ['serve', '--dir', path.join(ROOT, 'www/dist'), '--port', '0', '--class', db],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) resolve(m[0]);
    });
    child.on('exit', (code) => reject(new Error(`serve --class exited with ${code}`)));
  });
  return { child, url: line };
}

describe('a class: the teacher\'s view of three students', () => {
  let browser;
  let server;
  let dir;
  const errors = [];
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sr-bench-class-'));
    server = await startClassServer(path.join(dir, 'class.sqlite'));
    browser = await launchChromium();
  });
  after(async () => {
    if (browser) await browser.close();
    if (server) server.child.kill();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('start a class, three students answer, the figures are theirs; export; delete', { timeout: 600_000 }, async () => {
    const cli = JSON.parse(execFileSync(cliPath(), ['quiz', '--seed', String(SEED), '--data', path.join(ROOT, 'www/dist/data'),
      '--model', MODEL], { cwd: ROOT, encoding: 'utf8' }));
    const teacherContext = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true, acceptDownloads: true });
    watchErrors(teacherContext, errors);
    const teacher = await teacherContext.newPage();
    await teacher.goto(`${server.url}#quiz=${SEED}&qset=sr&qn=12`);
    await teacher.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
    await teacher.waitForSelector('#class-box[data-server="true"]');
    await teacher.click('#class-start');
    await teacher.waitForFunction(() => /^[A-Z0-9]{6}$/.test(document.getElementById('class-code').textContent));
    const code = await teacher.textContent('#class-code');
    const link = await teacher.getAttribute('#class-link', 'href');
    assert.match(link, new RegExp(`quiz=${SEED}&qset=sr&qn=12&class=${code}`));

    for (const picks of PICKS) {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      watchErrors(context, errors);
      const student = await context.newPage();
      await student.goto(link);
      await student.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
      assert.match(await student.textContent('#class-status'), new RegExp(`You are in class ${code}`));
      assert.equal(await student.isVisible('#class-start'), false, 'a student cannot start a class');
      if (picks === PICKS[0]) {
        await student.screenshot({ path: path.join(ARTIFACTS, 'quiz-phone-first-screen.png') });
        const option = await student.locator('#quiz-option-1').boundingBox();
        assert.ok(option && option.y >= 0 && option.y + option.height <= 844, `both options on the phone's screen: ${JSON.stringify(option)}`);
      }
      for (let i = 0; i < picks.length; i++) {
        await student.waitForSelector(`#quiz-question[data-index="${i}"]:not([hidden])`);
        await student.click(`#quiz-option-${picks[i]}`);
      }
      await student.waitForSelector('#class-status[data-sent]', { timeout: 60_000 });
      await context.close();
    }

    // The teacher's view: counted from the picks and the CLI's gold answers here.
    const gold = cli.questions.map((q) => q.answer);
    const accuracy = PICKS.map((p) => (100 * p.filter((x, i) => x === gold[i]).length) / gold.length);
    const mean = accuracy.reduce((s, a) => s + a, 0) / accuracy.length;
    const majority = gold.map((g, i) => {
      const ones = PICKS.filter((p) => p[i] === 1).length;
      return (ones * 2 > PICKS.length ? 1 : 0) === g ? 1 : 0;
    }).reduce((s, x) => s + x, 0) * 100 / gold.length;
    const value = async (name) => Number(await teacher.getAttribute(`[data-figure="${name}"]`, 'data-value'));
    await teacher.waitForFunction(() => document.querySelector('[data-figure="answered"]')?.dataset.value === '3', null, { timeout: 30_000 });
    assert.ok(Math.abs((await value('accuracy')) - mean) <= 0.005, `class accuracy ${await value('accuracy')} vs ${mean}`);
    assert.ok(Math.abs((await value('majority')) - majority) <= 0.005, `majority ${await value('majority')} vs ${majority}`);
    const each = await teacher.$$eval('#class-students li', (lis) => lis.map((li) => Number(li.dataset.accuracy)));
    assert.deepEqual(each.sort((a, b) => a - b), accuracy.map((a) => Math.round(a * 100) / 100).sort((a, b) => a - b), 'each student');
    await teacher.waitForFunction(() => document.querySelector('[data-figure="model"]')?.dataset.value !== '', null, { timeout: 120_000 });
    assert.equal(await value('model'), cli.model.accuracy.accuracy, 'the model on the same questions, as the CLI');
    assert.deepEqual(await axeViolations(teacher), [], 'the teacher\'s view');
    await teacher.screenshot({ path: path.join(ARTIFACTS, 'class-teacher.png'), fullPage: true });

    const [csv] = await Promise.all([teacher.waitForEvent('download'), teacher.click('#class-csv')]);
    const rows = fs.readFileSync(await csv.path(), 'utf8').trim().split('\n');
    assert.equal(rows.length, 4, 'a header and three students');
    assert.match(rows[0], /^student,q1,q2,.*,q12,right$/);
    await teacher.click('#class-delete');
    await teacher.waitForFunction((c) => document.getElementById('class-status').textContent.includes(`Class ${c} and its answers are deleted`), code);
    const gone = await teacher.evaluate(async (c) => (await fetch(`api/class/${c}`)).status, code);
    assert.equal(gone, 404);
    await teacherContext.close();
    assert.deepEqual(errors.filter((e) => !/404 \(Not Found\)/.test(e)), []);
  });
});
