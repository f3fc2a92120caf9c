// A decision's answers as probability bars: one row per label (noul: yes and no), the chosen row
// marked, the unpermuted pass as a thin second bar when the request asked for it, and a one-line
// note when the answer's own figures say the model is unsure.
import { isRecord } from './api.js';
import { doubtNote } from './doubt.js';
import { h } from './dom.js';
import { percent } from './format.js';

type Probabilities = Record<string, number>;

interface BarRow {
  label: string;
  /** Shown text; defaults to the label. */
  text?: string;
  p: number;
  raw?: number;
}

const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);

function probabilities(value: unknown): Probabilities | undefined {
  if (!isRecord(value)) return undefined;
  const out: Probabilities = {};
  for (const [key, p] of Object.entries(value)) if (typeof p === 'number') out[key] = p;
  return out;
}

function meter(className: string, label: string, p: number): HTMLDivElement {
  const bar = h('div', { class: className, role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 1, 'aria-valuenow': p, 'aria-label': label });
  // Through the CSSOM: the CSP allows this where it forbids style attributes in markup.
  bar.style.width = `${Math.min(100, Math.max(0, p * 100))}%`;
  return bar;
}

function bars(rows: BarRow[], chosen: string): HTMLDivElement {
  return h(
    'div',
    { class: 'bars' },
    ...rows.map((row) =>
      h(
        'div',
        { class: row.label === chosen ? 'bar-row chosen' : 'bar-row', 'data-label': row.label },
        h('span', { class: 'bar-label' }, row.text ?? row.label),
        h(
          'div',
          { class: 'bar-track' },
          meter('bar', `${row.label} probability`, row.p),
          row.raw !== undefined ? meter('raw-bar', `${row.label} raw probability`, row.raw) : null,
        ),
        h('span', { class: 'bar-value' }, percent(row.p), row.raw !== undefined ? h('span', { class: 'raw-value' }, ` raw ${percent(row.raw)}`) : null),
      ),
    ),
  );
}

function extras(answer: Record<string, unknown>, p: number[]): HTMLElement[] {
  const out: HTMLElement[] = [];
  const note = doubtNote(String(answer.type), p, num(answer.label_mass));
  if (note) out.push(h('p', { class: 'unsure-note', role: 'note' }, note));
  const confidence = num(answer.confidence);
  if (confidence !== undefined) out.push(h('p', { class: 'confidence' }, `Confidence ${confidence.toFixed(2)}`));
  if (typeof answer.confidence_band === 'string') out.push(h('p', { class: 'confidence-band' }, `Calibrated band: ${answer.confidence_band}`));
  const mass = num(answer.label_mass);
  if (mass !== undefined)
    out.push(h('p', { class: 'label-mass' }, `Label mass ${percent(mass)} (the share of the model\u2019s next-token probability that fell on the labels)`));
  return out;
}

function argmax(p: Probabilities): string {
  let best = '';
  let bestP = -Infinity;
  for (const [label, value] of Object.entries(p)) {
    if (value > bestP) {
      best = label;
      bestP = value;
    }
  }
  return best;
}

function legendText(value: unknown): string {
  if (typeof value === 'string') return value;
  return value === undefined ? '' : JSON.stringify(value);
}

function body(answer: Record<string, unknown>): HTMLElement[] {
  if (answer.type === 'noul') {
    const yes = num(answer.noul) ?? 0;
    const raw = num(answer.raw_noul);
    const rows: BarRow[] = [
      { label: 'yes', p: yes, ...(raw !== undefined ? { raw } : {}) },
      { label: 'no', p: 1 - yes, ...(raw !== undefined ? { raw: 1 - raw } : {}) },
    ];
    return [bars(rows, yes >= 0.5 ? 'yes' : 'no'), ...extras(answer, [yes, 1 - yes])];
  }
  const p = probabilities(answer.probabilities);
  const raw = probabilities(answer.raw_probabilities);
  if (answer.type === 'choice' && p) {
    const rows = Object.entries(p).map(([label, value]): BarRow => ({ label, p: value, ...(raw?.[label] !== undefined ? { raw: raw[label] } : {}) }));
    return [bars(rows, typeof answer.choice === 'string' ? answer.choice : argmax(p)), ...extras(answer, Object.values(p))];
  }
  if (answer.type === 'score' && p) {
    const legend = isRecord(answer.legend) ? answer.legend : {};
    const levels = Object.keys(p).sort((a, b) => Number(a) - Number(b));
    const top = Math.max(1, levels.length - 1);
    const score = num(answer.score) ?? 0;
    const rows = levels.map((level): BarRow => {
      const description = legendText(legend[level]);
      const value = p[level] ?? 0;
      return {
        label: level,
        text: description ? `${level} \u2014 ${description}` : level,
        p: value,
        ...(raw?.[level] !== undefined ? { raw: raw[level] } : {}),
      };
    });
    const marker = h('div', { class: 'score-marker', 'aria-hidden': 'true' });
    marker.style.left = `${Math.min(100, Math.max(0, (score / top) * 100))}%`;
    return [
      h('p', { class: 'score-value' }, `Expected score ${score.toFixed(2)} of 0\u2013${levels.length - 1}`),
      h('div', { class: 'score-scale', 'aria-hidden': 'true' }, marker),
      bars(rows, argmax(p)),
      ...extras(
        answer,
        levels.map((level) => p[level] ?? 0),
      ),
    ];
  }
  // A kind this page does not draw (e.g. a box preview): show it as data rather than hide it.
  return [h('pre', { class: 'answer-json' }, JSON.stringify(answer, null, 2))];
}

export function renderAnswers(answers: Record<string, unknown>): HTMLElement[] {
  return Object.entries(answers).map(([name, answer]) =>
    h(
      'section',
      { class: 'answer', 'data-question': name },
      h('h3', null, name),
      isRecord(answer) && typeof answer.type === 'string' ? h('p', { class: 'answer-type muted' }, `${answer.type} question`) : null,
      ...(isRecord(answer) ? body(answer) : [h('pre', { class: 'answer-json' }, JSON.stringify(answer))]),
    ),
  );
}
