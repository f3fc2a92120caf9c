import t from 'tap';
import { balancedOrderings, distinctOrderings } from '../../src/decision/permutations.js';

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
