// Seeded randomness for figures and tests that must come out the same on every run.

/** A deterministic pseudo-random stream in [0, 1) (a 32-bit linear congruential generator). */
export function seededRandom(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x * 1664525 + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

/** The option a uniform draw `u` in [0, 1) picks from the distribution `p`. */
export function drawFrom(p: readonly number[], u: number): number {
  for (let i = 0; i < p.length; i++) if ((u -= p[i]!) < 0) return i;
  return p.length - 1;
}
