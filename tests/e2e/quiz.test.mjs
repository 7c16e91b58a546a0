// E2E: "You against the model". A link with a seed opens the quiz on the questions the CLI
// (`sr-bench quiz`) draws for that seed; twelve fixed answers give the accuracy counted here
// from the CLI's gold answers; the model's and the baseline's answers are the CLI's on the same
// file; the quiz's own link, opened in a fresh tab, asks the same questions again. axe-core
// checks the quiz while asking and at the end.
//
//   node --test tests/e2e/quiz.test.mjs

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { ARTIFACTS, ROOT, axeViolations, cliPath, launchChromium, siteUrl, watchErrors } from './common.mjs';

const BASE = siteUrl();
const MODEL = path.join(ROOT, 'www/models/all-MiniLM-L6-v2.q8_0.gguf');
/** The data the site serves (build.sh copies it into the site). */
const DATA = path.join(ROOT, 'www/dist/data');
const SEED = 4242;
/** The visitor's fixed picks (the option shown first or second), question by question. */
const PICKS = [0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0];

/** `sr-bench quiz` with the model: the questions and both encoders' answers. */
function cliQuiz(seed, extra = []) {
  const out = execFileSync(cliPath(), ['quiz', '--seed', String(seed), '--data', DATA, '--model', MODEL, ...extra],
    { cwd: ROOT, maxBuffer: 16 << 20 });
  return JSON.parse(out.toString());
}

describe('the quiz: you against the model', () => {
  let browser;
  let context;
  const errors = [];
  before(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    watchErrors(context, errors);
  });
  after(async () => { if (browser) await browser.close(); });

  /** Answers every question with PICKS, checking each against the CLI's; the questions' texts. */
  async function answerAll(page, cli) {
    const shown = [];
    for (let i = 0; i < cli.questions.length; i++) {
      await page.waitForSelector(`#quiz-question[data-index="${i}"]:not([hidden])`, { timeout: 30_000 });
      const q = cli.questions[i];
      assert.equal(await page.getAttribute('#quiz-question', 'data-file'), q.file, `question ${i + 1}: the file`);
      assert.equal(await page.getAttribute('#quiz-question', 'data-line'), q.options.map((o) => o.line).join(','));
      assert.equal(await page.textContent('#quiz-original'), q.options[0].a, `question ${i + 1}: the original`);
      const options = [await page.textContent('#quiz-option-0'), await page.textContent('#quiz-option-1')];
      assert.deepEqual(options, q.options.map((o) => o.b), `question ${i + 1}: the rewrites in the CLI's order`);
      shown.push(options);
      if (i === 0) assert.deepEqual(await axeViolations(page), [], 'the quiz while asking');
      await page.click(`#quiz-option-${PICKS[i]}`);
    }
    await page.waitForSelector('#quiz[data-state="done"]', { timeout: 120_000 });
    return shown;
  }

  let link;
  let first;
  test('a link with a seed: the CLI\'s questions, the visitor\'s accuracy, the model\'s and the baseline\'s', { timeout: 300_000 }, async () => {
    const cli = cliQuiz(SEED);
    assert.equal(cli.questions.length, 12);
    const page = await context.newPage();
    await page.goto(`${BASE}#quiz=${SEED}&qset=sr&qn=12`);
    await page.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
    assert.equal(await page.isVisible('#playground'), false, 'the quiz is a page of its own');
    await page.waitForSelector('#class-box[data-server="false"]', { state: 'attached' });
    assert.equal(await page.isVisible('#class-start'), false, 'no class server behind this site: the quiz runs alone');
    await page.screenshot({ path: path.join(ARTIFACTS, 'quiz-desktop-first-screen.png') });
    const option = await page.locator('#quiz-option-1').boundingBox();
    assert.ok(option && option.y >= 0 && option.y + option.height <= 900, `both options in the screen: ${JSON.stringify(option)}`);
    first = await answerAll(page, cli);
    // Counted here from the CLI's gold answers, not by the page's code.
    const right = cli.questions.filter((q, i) => q.answer === PICKS[i]).length;
    const figure = async (id) => [Number(await page.getAttribute(id, 'data-correct')), Number(await page.getAttribute(id, 'data-n'))];
    assert.deepEqual(await figure('#quiz-person'), [right, 12], 'the visitor\'s accuracy');
    assert.deepEqual(await figure('#quiz-model'), [cli.model.accuracy.correct, 12], 'the model\'s, as the CLI\'s');
    assert.deepEqual(await figure('#quiz-baseline'), [cli.baseline.accuracy.correct, 12], 'the baseline\'s, as the CLI\'s');
    assert.deepEqual(await figure('#quiz-coin'), [6, 12]);
    const rows = await page.$$eval('#quiz-rows tr', (trs) => trs.map((tr) => ({ ...tr.dataset, disagree: tr.classList.contains('quiz-disagree') })));
    assert.equal(rows.length, 12);
    rows.forEach((r, i) => {
      assert.equal(Number(r.answer), cli.questions[i].answer);
      assert.equal(Number(r.person), PICKS[i]);
      assert.equal(r.model, String(cli.model.choices[i]), `question ${i + 1}: the model's choice`);
      assert.equal(r.disagree, String(PICKS[i]) !== r.model, `question ${i + 1}: disagreement marked`);
    });
    assert.match(await page.textContent('#quiz-summary'), new RegExp(`You picked the closer one in ${right} of 12`));
    assert.deepEqual(await axeViolations(page), [], 'the quiz\'s result');
    await page.screenshot({ path: path.join(ARTIFACTS, 'quiz-result.png'), fullPage: true });
    link = await page.getAttribute('#quiz-link', 'href');
    assert.match(link, new RegExp(`#.*quiz=${SEED}&qset=sr&qn=12`));
    await page.close();
  });

  test('the quiz\'s link in a fresh tab asks the same questions; another seed others', { timeout: 300_000 }, async () => {
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
    watchErrors(fresh, errors);
    const page = await fresh.newPage();
    await page.goto(link);
    await page.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
    assert.equal(await page.getAttribute('#quiz', 'data-seed'), String(SEED));
    assert.deepEqual(await answerAll(page, cliQuiz(SEED)), first, 'the same twelve questions, in the same order');
    // "New questions": another seed, other questions, the link follows.
    await page.click('#quiz-again');
    await page.waitForSelector('#quiz[data-state="asking"]', { timeout: 60_000 });
    const seed = Number(await page.getAttribute('#quiz', 'data-seed'));
    assert.notEqual(seed, SEED);
    await page.waitForFunction((s) => location.hash.includes(`quiz=${s}`), seed);
    const other = cliQuiz(seed);
    assert.equal(await page.textContent('#quiz-original'), other.questions[0].options[0].a);
    await page.click('#quiz-close');
    assert.equal(await page.isVisible('#playground'), true, 'the playground is back');
    await page.waitForFunction(() => !location.hash.includes('quiz='));
    await fresh.close();
    assert.deepEqual(errors, []);
  });
});
