// Orderings for options.debias = "permute": balanced rotations for unordered options (choices,
// yes/no), and a scale read both ways for ordered ones (scores).
//
// Rotations.
// Construction: pass k shows the options cyclically shifted by s_k = floor(k·N/P), i.e. at
// position j it shows option (j + s_k) mod N. Pass 0 is the identity (s_0 = 0). Option i sits at
// position j exactly in the passes whose shift is (i − j) mod N, so the number of visits of any
// option to any position equals the multiplicity of one shift. The shifts floor(k·N/P) are spread
// as evenly over 0..N−1 as P allows: every shift is used floor(P/N) or ceil(P/N) times. Hence each
// option visits each position floor(P/N) or ceil(P/N) times, and every option is first (and last)
// equally often to within one pass. For noul, N = 2: the passes alternate between offering
// yes/no and no/yes in two equal halves.

/** ordering[position] = index of the original option shown at that position. */
export type Ordering = number[];

export function shiftOf(pass: number, options: number, passes: number): number {
  return Math.floor((pass * options) / passes);
}

/** The balanced set of `passes` orderings of `options` options; pass 0 is the identity. */
function checkCounts(options: number, passes: number): void {
  if (!Number.isInteger(options) || options < 1) throw new RangeError(`options must be a positive integer, got ${options}`);
  if (!Number.isInteger(passes) || passes < 1) throw new RangeError(`passes must be a positive integer, got ${passes}`);
}

export function balancedOrderings(options: number, passes: number): Ordering[] {
  checkCounts(options, passes);
  return Array.from({ length: passes }, (_, k) => {
    const s = shiftOf(k, options, passes);
    return Array.from({ length: options }, (_, j) => (j + s) % options);
  });
}

/**
 * A scale shown ascending in even passes and descending in odd ones; pass 0 is the identity. A
 * rotation would list the highest level next to the lowest, which is no scale at all; reversal
 * keeps it one. A scale's position bias is a trend along the listing (models favour the last
 * option of a reversed Likert item), and a trend cancels exactly between the two directions when
 * the passes are pooled in log space (readout.ts, geometricPool). An odd count repeats ascending once more.
 */
export function mirroredOrderings(options: number, passes: number): Ordering[] {
  checkCounts(options, passes);
  const ascending = Array.from({ length: options }, (_, j) => j);
  return Array.from({ length: passes }, (_, k) => (k % 2 === 0 ? ascending : [...ascending].reverse()));
}

/**
 * Identical orderings give identical model outputs, so each distinct one is scored once and
 * weighted by how many passes it stands for. The first entry is pass 0 (the identity).
 */
export function distinctOrderings(orderings: Ordering[]): { ordering: Ordering; weight: number }[] {
  const byKey = new Map<string, { ordering: Ordering; weight: number }>();
  for (const ordering of orderings) {
    const key = ordering.join(',');
    const entry = byKey.get(key);
    if (entry) entry.weight += 1;
    else byKey.set(key, { ordering, weight: 1 });
  }
  return [...byKey.values()];
}
