import t from 'tap';
import { argmax, averagePasses, geometricPool, identityPass, keyed, labelMass, optionDistribution, renormalise } from '../../src/decision/readout.js';

const close = (a: number, b: number, eps = 1e-12) => Math.abs(a - b) < eps;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

t.test('renormalise is a softmax over the candidates only', async (t) => {
  const p = renormalise([Math.log(0.2), Math.log(0.05)]);
  t.ok(close(p[0]!, 0.8) && close(p[1]!, 0.2), p.join(','));
  t.ok(close(sum(renormalise([-1000, -1001, -1002])), 1), 'stable for very negative log-probs');
  t.same(renormalise([-Infinity, -Infinity]), [0.5, 0.5], 'uniform when no candidate has mass');
  t.same(renormalise([0, -Infinity]), [1, 0]);
});

t.test('optionDistribution maps positions back to options', async (t) => {
  // ordering [2,0,1]: position 0 shows option 2, position 1 option 0, position 2 option 1
  const p = optionDistribution({ ordering: [2, 0, 1], weight: 1, logprobs: [Math.log(0.7), Math.log(0.2), Math.log(0.1)] });
  t.ok(close(p[2]!, 0.7) && close(p[0]!, 0.2) && close(p[1]!, 0.1), p.join(','));
});

t.test('averagePasses weights passes', async (t) => {
  const a = { ordering: [0, 1], weight: 3, logprobs: [Math.log(0.9), Math.log(0.1)] };
  const b = { ordering: [1, 0], weight: 1, logprobs: [Math.log(0.9), Math.log(0.1)] };
  const p = averagePasses([a, b]);
  // a: option0 .9; b: shows option1 first → option1 .9, option0 .1. (3*.9 + .1)/4 = .7
  t.ok(close(p[0]!, 0.7), String(p[0]));
  t.ok(close(sum(p), 1));
});

t.test('geometricPool: a linear position bias cancels exactly between a scale read both ways', async (t) => {
  const truth = [0.05, 0.1, 0.2, 0.4, 0.25];
  // A trend along the listing: each later position gets e^0.6 more mass, whatever level it shows.
  const read = (ordering: number[]) => ({
    ordering,
    weight: 1,
    logprobs: ordering.map((level, position) => Math.log(truth[level]!) + 0.6 * position),
  });
  const ascending = read([0, 1, 2, 3, 4]);
  const descending = read([4, 3, 2, 1, 0]);
  const pooled = geometricPool([ascending, descending]);
  truth.forEach((x, i) => t.ok(close(pooled[i]!, x, 1e-9), `level ${i}: ${pooled[i]} = ${x}`));
  const averaged = averagePasses([ascending, descending]);
  t.ok(Math.abs(averaged[2]! - truth[2]!) > 0.01, `the mean of probabilities only damps the trend: level 2 at ${averaged[2]} against ${truth[2]}`);
  const weighted = geometricPool([{ ...ascending, weight: 3 }, descending]);
  t.ok(weighted[4]! > truth[4]!, 'weights count: three ascending passes keep some of the trend towards the last position');
  t.ok(close(sum(weighted), 1));
});

t.test('label mass: the pass-weighted share of the distribution on the answers', async (t) => {
  const passes = [
    { ordering: [0, 1], weight: 3, logprobs: [Math.log(0.5), Math.log(0.4)] },
    { ordering: [1, 0], weight: 1, logprobs: [Math.log(0.1), Math.log(0.1)] },
  ];
  t.ok(close(labelMass(passes), (3 * 0.9 + 0.2) / 4));
  t.equal(labelMass([{ ordering: [0, 1], weight: 1, logprobs: [0, 0] }]), 1, 'capped at 1 against rounding');
});

t.test('identity pass and argmax', async (t) => {
  const id = { ordering: [0, 1, 2], weight: 1, logprobs: [0, 0, 0] };
  t.equal(identityPass([{ ordering: [2, 0, 1], weight: 1, logprobs: [0, 0, 0] }, id]), id);
  t.throws(() => identityPass([{ ordering: [1, 0], weight: 1, logprobs: [0, 0] }]), /unpermuted/);
  t.equal(argmax([0.1, 0.5, 0.5]), 1, 'the first of equals');
});

t.test('keyed: a label named __proto__ is an own member', async (t) => {
  const k = keyed(['__proto__', 'b'], [0.9, 0.1]);
  t.ok(Object.hasOwn(k, '__proto__'));
  t.match(JSON.stringify(k), /"__proto__":0.9/);
});
