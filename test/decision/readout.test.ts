import t from 'tap';
import { averagePasses, concentration, optionDistribution, readChoice, readNoul, readScore, renormalise } from '../../src/decision/readout.js';

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

t.test('concentration = 1 - H/ln N', async (t) => {
  t.equal(concentration([1, 0, 0]), 1);
  t.ok(close(concentration([0.25, 0.25, 0.25, 0.25]), 0));
  const p = [0.5, 0.25, 0.25];
  const h = -(0.5 * Math.log(0.5) + 2 * 0.25 * Math.log(0.25));
  t.ok(close(concentration(p), 1 - h / Math.log(3)));
});

t.test('choice answer', async (t) => {
  const passes = [
    { ordering: [0, 1, 2], weight: 1, logprobs: [Math.log(0.6), Math.log(0.3), Math.log(0.1)] },
    { ordering: [1, 2, 0], weight: 1, logprobs: [Math.log(0.6), Math.log(0.3), Math.log(0.1)] },
  ];
  const a = readChoice(['x', 'y', 'z'], passes, { debiasPasses: 2, returnRaw: true });
  // pass 2 shows y,z,x → y .6, z .3, x .1; mean x .35, y .45, z .2
  t.equal(a.choice, 'y');
  t.ok(close(a.probabilities.x!, 0.35) && close(a.probabilities.y!, 0.45) && close(a.probabilities.z!, 0.2));
  t.ok(close(sum(Object.values(a.probabilities)), 1));
  t.same(Object.keys(a.raw_probabilities!), ['x', 'y', 'z']);
  t.ok(close(a.raw_probabilities!.x!, 0.6), 'raw is the unpermuted pass');
  t.equal(a.debias_passes, 2);
  t.equal(a.confidence_band, null);
  t.ok(close(a.confidence, concentration([0.35, 0.45, 0.2])));
  const plain = readChoice(['x', 'y', 'z'], passes.slice(0, 1), { debiasPasses: null, returnRaw: false });
  t.equal(plain.raw_probabilities, null);
  t.equal(plain.debias_passes, null);
  t.equal(plain.choice, 'x');
});

t.test('a label named __proto__ is an own member', async (t) => {
  const a = readChoice(['__proto__', 'b'], [{ ordering: [0, 1], weight: 1, logprobs: [0, -5] }], { debiasPasses: null, returnRaw: false });
  t.equal(a.choice, '__proto__');
  t.ok(Object.hasOwn(a.probabilities, '__proto__'));
  t.match(JSON.stringify(a.probabilities), /"__proto__":/);
});

t.test('score answer: expected level index, legend and keys from 0', async (t) => {
  const a = readScore(['bad', 'ok', 'good'], [{ ordering: [0, 1, 2], weight: 1, logprobs: [Math.log(0.2), Math.log(0.3), Math.log(0.5)] }], {
    debiasPasses: null,
    returnRaw: true,
  });
  t.ok(close(a.score, 0.3 + 2 * 0.5), String(a.score));
  t.same(a.legend, { '0': 'bad', '1': 'ok', '2': 'good' });
  t.same(Object.keys(a.probabilities), ['0', '1', '2']);
  t.same(a.raw_probabilities, a.probabilities);
});

t.test('noul answer: P(yes) averaged, raw from pass 0', async (t) => {
  const a = readNoul(
    [
      { ordering: [0, 1], weight: 2, logprobs: [Math.log(0.8), Math.log(0.2)] },
      { ordering: [1, 0], weight: 2, logprobs: [Math.log(0.6), Math.log(0.4)] },
    ],
    { debiasPasses: 4, returnRaw: true },
  );
  // second ordering offers no first: P(yes) = .4
  t.ok(close(a.noul, 0.6), String(a.noul));
  t.ok(close(a.raw_noul!, 0.8));
  t.equal(a.debias_passes, 4);
  t.equal(a.type, 'noul');
});
