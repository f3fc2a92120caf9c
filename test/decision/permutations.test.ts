import t from 'tap';
import { balancedOrderings, distinctOrderings, mirroredOrderings } from '../../src/decision/permutations.js';

/** visits[option][position] = passes in which the option is shown at that position. */
function visits(options: number, passes: number): number[][] {
  const v = Array.from({ length: options }, () => new Array<number>(options).fill(0));
  for (const ordering of balancedOrderings(options, passes)) ordering.forEach((option, position) => v[option]![position]!++);
  return v;
}

t.test('pass 0 is the identity and every pass is a permutation', async (t) => {
  for (let n = 1; n <= 12; n++) {
    for (let p = 1; p <= 8; p++) {
      const orderings = balancedOrderings(n, p);
      t.equal(orderings.length, p);
      t.same(orderings[0], [...Array(n).keys()], `identity first for n=${n} p=${p}`);
      for (const o of orderings)
        t.same(
          [...o].sort((a, b) => a - b),
          [...Array(n).keys()],
        );
    }
  }
});

t.test('each option visits each position floor(P/N) or ceil(P/N) times', async (t) => {
  for (let n = 2; n <= 12; n++) {
    for (let p = 2; p <= 8; p++) {
      const counts = visits(n, p).flat();
      const lo = Math.floor(p / n);
      const hi = Math.ceil(p / n);
      t.ok(
        counts.every((c) => c === lo || c === hi),
        `n=${n} p=${p}: ${counts.join(',')}`,
      );
      // each option is shown in every pass, so its visits over positions add up to P
      for (const row of visits(n, p))
        t.equal(
          row.reduce((a, b) => a + b, 0),
          p,
        );
    }
  }
});

t.test('when P is a multiple of N the balance is exact', async (t) => {
  t.same(visits(2, 4), [
    [2, 2],
    [2, 2],
  ]);
  t.same(visits(4, 8).flat(), new Array(16).fill(2));
  t.same(visits(3, 6).flat(), new Array(9).fill(2));
});

t.test('noul: two yes/no orderings in equal halves', async (t) => {
  t.same(balancedOrderings(2, 4), [
    [0, 1],
    [0, 1],
    [1, 0],
    [1, 0],
  ]);
  t.same(balancedOrderings(2, 3), [
    [0, 1],
    [0, 1],
    [1, 0],
  ]);
});

t.test('fewer passes than options: shifts spread over the cycle', async (t) => {
  t.same(
    balancedOrderings(10, 4).map((o) => o[0]),
    [0, 2, 5, 7],
  );
  t.same(
    balancedOrderings(4, 4).map((o) => o[0]),
    [0, 1, 2, 3],
  );
});

t.test('distinctOrderings keeps pass 0 first and weights duplicates', async (t) => {
  const d = distinctOrderings(balancedOrderings(2, 5));
  t.same(d, [
    { ordering: [0, 1], weight: 3 },
    { ordering: [1, 0], weight: 2 },
  ]);
  t.equal(distinctOrderings(balancedOrderings(5, 4)).length, 4);
  t.equal(distinctOrderings(balancedOrderings(3, 1)).length, 1);
});

t.test('rejects nonsense sizes', async (t) => {
  t.throws(() => balancedOrderings(0, 2), RangeError);
  t.throws(() => balancedOrderings(3, 0), RangeError);
  t.throws(() => balancedOrderings(2.5, 2), RangeError);
});

t.test('a scale is read ascending and descending, never rotated', async (t) => {
  t.same(mirroredOrderings(5, 2), [
    [0, 1, 2, 3, 4],
    [4, 3, 2, 1, 0],
  ]);
  for (let passes = 1; passes <= 8; passes++) {
    const orderings = mirroredOrderings(5, passes);
    t.equal(orderings.length, passes);
    for (const o of orderings) {
      const steps = o.slice(1).map((x, j) => x - o[j]!);
      t.ok(
        steps.every((s) => s === steps[0]) && Math.abs(steps[0]!) === 1,
        `pass ${o.join(',')}: every neighbour is the next level (a scale, in one direction)`,
      );
    }
    const weights = distinctOrderings(orderings).map((d) => d.weight);
    t.same(weights, passes === 1 ? [1] : [Math.ceil(passes / 2), Math.floor(passes / 2)], `${passes} passes: ascending first, an odd one repeats ascending`);
  }
  t.throws(() => mirroredOrderings(0, 2), RangeError);
  t.throws(() => mirroredOrderings(5, 0), RangeError);
});
