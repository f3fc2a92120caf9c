// The load benches' request sizes are valid API requests of the sizes their reports name.
import fs from 'node:fs';
import t from 'tap';
import { decisionBody, readmeExample } from '../../bench/lib/bodies.js';
import { validateSystemOneRequest } from '../../src/api/schemas/systemone-validate.js';

t.test('small, medium and large validate with 1, 4 and 50 questions', async (t) => {
  t.equal(validateSystemOneRequest(decisionBody('small', 1)).questions.length, 1);
  t.equal(validateSystemOneRequest(decisionBody('medium', 1)).questions.length, 4);
  t.equal(validateSystemOneRequest(decisionBody('large', 1)).questions.length, 50);
});

t.test('a large body of 2,000 questions has 2,000 distinct instructions', async (t) => {
  const questions = validateSystemOneRequest(decisionBody('large', 1, 2000)).questions as { instructions?: string }[];
  t.equal(questions.length, 2000);
  t.equal(new Set(questions.map((q) => q.instructions)).size, 2000);
});

t.test('every body has its own state', async (t) => {
  t.not(decisionBody('small', 1).state, decisionBody('small', 2).state);
});

t.test("README's curl example is a valid request of three questions, the body bench:first-decision sends", async (t) => {
  const body = readmeExample(fs.readFileSync(new URL('../../README.md', import.meta.url), 'utf8'));
  const request = validateSystemOneRequest(body);
  t.equal(request.questions.length, 3);
  t.match(body.state, /order arrived broken/);
  t.throws(() => readmeExample('no example here'), /no `curl/);
});
