// When an answer's own figures say the model is unsure, one line that says so, so that a reader of
// the bars does not take the top answer, or a score's expectation, for a certainty.

/** Below this share of the next-token probability on the labels, the model meant to say something else. */
export const LOW_LABEL_MASS = 0.5;
/** A score whose levels spread this far (standard deviation, in levels) around its expectation is a range, not a level. */
export const WIDE_SPREAD = 1;
/** A yes/no or choice answer whose top probability is below this is close to a coin toss between its leaders. */
export const WEAK_TOP = 0.6;

/** The level distribution's standard deviation around Σ i·pᵢ, in levels. */
export function levelSpread(p: number[]): number {
  const mean = p.reduce((acc, x, i) => acc + x * i, 0);
  return Math.sqrt(p.reduce((acc, x, i) => acc + x * (i - mean) ** 2, 0));
}

const pct = (x: number): string => `${Math.round(x * 100)}%`;

/**
 * The note for one answer, or null when nothing says the model is unsure. `p` is per option (noul:
 * [yes, no]; score: by level); the label mass is the answer's, when it has one.
 */
export function doubtNote(type: string, p: number[], labelMass: number | undefined): string | null {
  if (labelMass !== undefined && labelMass < LOW_LABEL_MASS) {
    return `Unsure: only ${pct(labelMass)} of the model\u2019s next-token probability fell on the answers, so it may not have read the question as asked.`;
  }
  if (type === 'score') {
    const spread = levelSpread(p);
    return spread >= WIDE_SPREAD
      ? `Unsure: the levels spread \u00b1${spread.toFixed(1)} around the expected score, so read it as a range rather than one level.`
      : null;
  }
  const top = Math.max(...p);
  return p.length > 0 && top < WEAK_TOP ? `Unsure: the most probable answer has only ${pct(top)}.` : null;
}
