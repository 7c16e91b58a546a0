// The playground's examples (one per SR phenomenon) and the verdict shown for them.

import { DIMENSIONS } from '../protocol.js';
import { $ } from './ui.js';

/** @type {Array<{id: string, label: string, dimension: string, a: string, b: string, same: boolean, why: string}>} */
export const EXAMPLES = [
  { id: 'active-passive', label: 'Active ↔ passive', dimension: 'structure', same: true,
    a: 'The chef cooked the meal.', b: 'The meal was cooked by the chef.',
    why: 'Only the voice changed: the chef still does the cooking.' },
  { id: 'inversion', label: 'Inversion', dimension: 'structure', same: true,
    a: 'The team has won the championship.', b: 'Won the championship has the team.',
    why: 'The word order is inverted, but the team still won.' },
  { id: 'partial-inversion', label: 'Partial inversion', dimension: 'structure', same: true,
    a: 'The team has won the championship.', b: 'The championship, the team has won.',
    why: 'Only the object moved to the front.' },
  { id: 'concept-order', label: 'Concept order swap', dimension: 'relation', same: false,
    a: 'Tom likes Taylor Swift.', b: 'Taylor Swift likes Tom.',
    why: 'Who likes whom is reversed, with exactly the same words.' },
  { id: 'cause-effect', label: 'Cause ↔ effect', dimension: 'relation', same: false,
    a: 'Rain causes floods.', b: 'Floods cause rain.',
    why: 'Cause and effect are swapped (and the new claim is false).' },
  { id: 'clause-reorder', label: 'Clause reorder', dimension: 'relation', same: true,
    a: 'He read the book because he was interested in history.', b: 'Because he was interested in history, he read the book.',
    why: 'The clauses changed places; the reason is the same.' },
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
  for (const btn of document.querySelectorAll('#examples button')) {
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
