// A hostile tenant against the prefix cache, on the real server: a state is cached for the keys of
// its account only. Key B, of another account, sends the state key A sent a moment before, and the
// engine decodes it cold (all but the prompt frame's head, the same text for everyone), so B's time
// tells B nothing of A's text; A's second key finds it cached. Read from the engine's own count of
// the tokens it ran through the model (`arbitra_engine_tokens_evaluated_total`), one request at a
// time. `--prefix-cache-scope global` shares the cache again: the flag reaches the engine.
import t from 'tap';
import { cannotRun, metricValue, startServer, type Server } from '../integration/helpers/server.js';

/** About 300 words, as in the measurement. */
const STATE = Array.from(
  { length: 16 },
  (_, i) => `Entry ${i + 1} of the private ledger: paid invoice ${4200 + i * 17} for the warehouse lease in Ghent, approved by the finance lead.`,
).join('\n');
const BODY = { state: STATE, questions: { lease: { instructions: 'Does the ledger mention a lease?' } } };

async function tokensEvaluated(server: Server): Promise<number> {
  const value = metricValue((await server.call('/metrics')).text, 'arbitra_engine_tokens_evaluated_total');
  if (value === null) throw new Error('/metrics has no arbitra_engine_tokens_evaluated_total');
  return value;
}

/** Tokens the engine ran through the model for one decision about STATE. */
async function evaluatedFor(server: Server, key: string): Promise<number> {
  const before = await tokensEvaluated(server);
  const r = await server.call('/v1/systemone', { key, body: BODY });
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.text}`);
  return (await tokensEvaluated(server)) - before;
}

/** A's first decision, A's repeat, then the same state from B (another account) and from A's second key. */
async function fourDecisions(server: Server): Promise<{ cold: number; repeat: number; otherAccount: number; sameAccount: number }> {
  const a1 = await server.createKey('alice@example.com', 'first');
  const a2 = await server.createKey('alice@example.com', 'second');
  const b = await server.createKey('mallory@example.com');
  const cold = await evaluatedFor(server, a1.secret);
  const repeat = await evaluatedFor(server, a1.secret);
  const otherAccount = await evaluatedFor(server, b.secret);
  const sameAccount = await evaluatedFor(server, a2.secret);
  return { cold, repeat, otherAccount, sameAccount };
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  t.test('--prefix-cache-scope account (the default, uWS): another account decodes the state cold, a second key of the account finds it', async (t) => {
    const server = await startServer(t.testdir());
    t.teardown(() => server.stop());
    const { cold, repeat, otherAccount, sameAccount } = await fourDecisions(server);
    const state = cold - repeat;
    t.ok(state > 300, `A's repeat found its state cached: ${state} tokens not run again`);
    t.equal(sameAccount, repeat, "A's second key found the state cached as A's repeat did");
    const reused = cold - otherAccount;
    t.ok(reused > 0, `B reused the frame's head (${reused} tokens), which is the same for everyone`);
    t.ok(reused < state / 4, `and nothing of the state: B ran ${otherAccount - repeat} of its ${state} tokens through the model`);
  });

  t.test('--prefix-cache-scope global (node:http): every key finds the state another key sent', async (t) => {
    const server = await startServer(t.testdir(), { args: ['--prefix-cache-scope', 'global'], env: { ARBITRA_HTTP: 'node' } });
    t.teardown(() => server.stop());
    const { cold, repeat, otherAccount, sameAccount } = await fourDecisions(server);
    t.ok(cold - repeat > 300, `the repeat found the state cached (${cold - repeat} tokens not run again)`);
    t.equal(otherAccount, repeat, "another account's key found it cached");
    t.equal(sameAccount, repeat, "and so did the account's second key");
  });
}
