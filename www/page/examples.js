// @ts-check
// The playground's examples (one per SR phenomenon) and the verdict shown for them.

import { DIMENSIONS } from '../shared/protocol.js';
import { $ } from './ui.js';

const example = (id, label, dimension, same, a, b, why) => ({ id, label, dimension, same, a, b, why });

/** One per SR phenomenon: the two texts, and whether they mean the same (and why).
 * @type {Array<{id: string, label: string, dimension: string, a: string, b: string, same: boolean, why: string}>} */
export const EXAMPLES = [
  example('active-passive', 'Active ↔ passive', 'structure', true, 'The chef cooked the meal.', 'The meal was cooked by the chef.', 'Only the voice changed: the chef still does the cooking.'),
  example('inversion', 'Inversion', 'structure', true, 'The team has won the championship.', 'Won the championship has the team.', 'The word order is inverted, but the team still won.'),
  example('partial-inversion', 'Partial inversion', 'structure', true, 'The team has won the championship.', 'The championship, the team has won.', 'Only the object moved to the front.'),
  example('concept-order', 'Concept order swap', 'relation', false, 'Tom likes Taylor Swift.', 'Taylor Swift likes Tom.', 'Who likes whom is reversed, with exactly the same words.'),
  example('cause-effect', 'Cause ↔ effect', 'relation', false, 'Rain causes floods.', 'Floods cause rain.', 'Cause and effect are swapped (and the new claim is false).'),
  example('clause-reorder', 'Clause reorder', 'relation', true, 'He read the book because he was interested in history.', 'Because he was interested in history, he read the book.', 'The clauses changed places; the reason is the same.'),
  // Czech, a free-word-order language: the case endings carry the roles (for a model that reads
  // Czech, e.g. multilingual-e5-small). "Petra" here is Petr in the accusative, "Marie" Marie
  // in the nominative.
  example('czech-order', 'Czech word order', 'structure', true, 'Petr miluje Marii.', 'Marii miluje Petr.', 'In Czech the endings carry the roles: Petr (subject) still loves Marii (object), whatever the order.'),
  example('czech-endings', 'Czech case endings', 'relation', false, 'Petr miluje Marii.', 'Petra miluje Marie.', 'Only the endings changed, and now Marie (subject) loves Petra, that is Petr (object): the roles are reversed.'),
];

/** One button per example, grouped by dimension; `onPick(example)` when one is pressed. */
export function renderExamples(onPick) {
  const box = $('examples');
  for (const dim of DIMENSIONS) {
    const group = document.createElement('div');
    group.className = 'example-group';
    group.setAttribute('role', 'group');
    const label = document.createElement('span');
    label.className = 'example-group-label';
    label.id = `examples-${dim}`;
    label.textContent = dim === 'structure' ? 'Structure:' : 'Relation:';
    group.setAttribute('aria-labelledby', label.id);
    group.append(label);
    for (const ex of EXAMPLES.filter((e) => e.dimension === dim)) {
      const btn = document.createElement('button');
      btn.type = 'button';
      btn.className = `example example-${ex.dimension}`;
      btn.dataset.example = ex.id;
      btn.textContent = ex.label;
      btn.title = `${ex.a} / ${ex.b}`;
      btn.setAttribute('aria-pressed', 'false');
      btn.addEventListener('click', () => onPick(ex));
      group.append(btn);
    }
    box.append(group);
  }
}

/** Marks the example the two texts are (if any) and says whether its meaning is the same. */
export function updateVerdict(a, b) {
  const ex = EXAMPLES.find((e) => e.a === a.trim() && e.b === b.trim());
  const v = $('verdict');
  for (const btn of /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll('#examples button'))) {
    btn.setAttribute('aria-pressed', String(!!ex && btn.dataset.example === ex.id));
  }
  if (!ex) { v.hidden = true; v.textContent = ''; return; }
  v.hidden = false;
  v.classList.toggle('same', ex.same);
  v.classList.toggle('different', !ex.same);
  v.replaceChildren();
  const strong = document.createElement('strong');
  strong.textContent = ex.same ? 'Same meaning. ' : 'Different meaning. ';
  v.append(strong, document.createTextNode(`${ex.why} ${ex.same
    ? 'A model that understands syntax should score it high.'
    : 'A model that understands syntax should score it clearly lower than a paraphrase.'}`));
}
