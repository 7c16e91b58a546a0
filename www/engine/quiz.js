// @ts-check
// The engine's `quiz` request: the questions for a seed (the wasm QuizRun draws them from the
// data files, fetched once per engine), and on request the model's and the syntax-blind
// baseline's answers (QuizRun.score marks them, ties ½) — exactly `sr-bench quiz --json`.

import { QuizRun } from '../pkg/sr_bench.js';
import { CZECH_PATH, DATA_PATHS, SR_FILES } from '../shared/protocol.js';
import { fetchAllData } from './evaluate.js';
import { exclusive, requireModel, toPlain } from './engine-state.js';

/** @param {any} engine @param {import('../shared/protocol.js').QuizRequest} msg
 * @returns {Promise<import('../shared/protocol.js').QuizResult>} */
export async function quiz(engine, msg) {
  const model = msg.answer ? requireModel(engine) : null;
  const paths = msg.set === 'czech' ? [CZECH_PATH] : DATA_PATHS.slice(0, SR_FILES.length);
  const bytes = await fetchAllData(engine, msg.baseUrl, { progress: () => {}, checkCancel: () => {} }, paths);
  const run = new QuizRun(msg.set, msg.seed >>> 0, msg.questions, msg.min_gap, bytes); // bad input throws, coded
  try {
    const drawn = toPlain(run.quiz());
    if (!model) return { quiz: drawn };
    const texts = run.texts();
    const pairs = [];
    for (let i = 0; i < texts.length; i += 2) pairs.push([texts[i], texts[i + 1]]);
    // The baseline's word table is on the CPU; the model may be on the GPU (reached only
    // asynchronously, one call at a time: a benchmark chunk may be ahead).
    const baseline = pairs.map(([a, b]) => model.static_similarity(a, b));
    const cosines = model.is_async()
      ? await exclusive(engine, async () => {
        const out = [];
        for (const [a, b] of pairs) out.push(await model.similarity_async(a, b));
        return out;
      })
      : pairs.map(([a, b]) => model.similarity(a, b));
    return {
      quiz: drawn,
      model: toPlain(run.score(Float64Array.from(cosines))),
      baseline: toPlain(run.score(Float64Array.from(baseline))),
    };
  } finally {
    run.free();
  }
}
