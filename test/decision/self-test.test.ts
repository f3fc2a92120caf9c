// The load-time self-test against a model that cannot read: the base 270M model misses obvious
// decisions, and the report is a warning that names every miss (the default model's pass is
// asserted in default-model.test.ts and, through `arbitra serve`, in the CLI test).
import t from 'tap';
import { selfTest, selfTestReport } from '../../src/decision/self-test.js';
import { createLocalEngine } from '../../src/engine/local.js';
import { TEST_MODEL, TEST_MODEL_ID } from '../helpers/models.js';

const engine = await createLocalEngine(TEST_MODEL, { threads: 2, contextSize: 1024, maxSequences: 16 });
t.teardown(() => engine.close());

t.test('a base model fails the self-test, and the warning names each failure', async (t) => {
  const result = await selfTest(engine, await engine.info());
  t.ok(result.failures.length > 0, `${result.passed}/${result.total} passed`);
  t.equal(result.passed + result.failures.length, result.total);
  const [head, ...rest] = selfTestReport(TEST_MODEL_ID, result);
  t.match(head, new RegExp(`^warning: ${TEST_MODEL_ID.replaceAll('.', '\\.')} failed ${result.failures.length} of ${result.total} obvious decisions`));
  t.same(
    rest,
    result.failures.map((f) => `  - ${f}`),
  );
  for (const f of result.failures) t.match(f, /^".+" expected .+, got .+$/, 'question, expectation and answer');
});
