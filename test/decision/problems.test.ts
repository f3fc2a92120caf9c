// What a 422 may say about a request: a bounded number of items, each cut to a bounded size, the
// rest counted in one too_many_errors item, whatever the request held; small lists unchanged.
import t from 'tap';
import { cutText, previewValue, PREVIEW_MORE } from '../../src/decision/schema/echo.js';
import {
  MAX_LISTED_PROBLEMS,
  MAX_MESSAGE_CHARS,
  TOO_MANY_ERRORS,
  omittedProblems,
  valueError,
  ValidationFailure,
  type ValidationErrorItem,
} from '../../src/decision/schema/problems.js';

const MiB = 1024 * 1024;
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** CPU seconds `fn` takes in this process. */
function cpuOf(fn: () => void): number {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6;
}

t.test('cutText keeps short text and marks a cut, never splitting a surrogate pair', async (t) => {
  t.equal(cutText('short', 10), 'short');
  t.equal(cutText('a'.repeat(20), 5), 'aaaaa…[15 more characters]');
  const cut = cutText(`abcd${'😀'.repeat(10)}`, 5);
  t.ok(cut.isWellFormed(), 'no lone surrogate');
  t.match(cut, /^abcd…\[20 more characters\]$/);
});

t.test('previewValue: a small value as it is; a large one bounded, saying what it left out', async (t) => {
  const small = { a: [1, 'two', null, { b: true }], c: 'text' };
  t.same(previewValue(small, 1000), small);
  t.same(previewValue('x'.repeat(50), 1000), 'x'.repeat(50));

  const array = Array.from({ length: 1_000_000 }, (_, i) => i);
  const shownArray = previewValue(array, 1000) as unknown[];
  t.ok(shownArray.length < 300, `${shownArray.length} items shown`);
  t.match(shownArray.at(-1), new RegExp(`^${PREVIEW_MORE}\\d+ more items$`));

  const object = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`member-${i}`, 'v'.repeat(100)]));
  const shownObject = previewValue(object, 1000) as Record<string, unknown>;
  t.ok(Object.keys(shownObject).length < 20);
  t.match(shownObject[PREVIEW_MORE], /^\d+ more members$/);

  const named = previewValue(JSON.parse('{"__proto__":{"x":1}}'), 1000) as Record<string, unknown>;
  t.ok(Object.hasOwn(named, '__proto__'), 'a member named __proto__ stays a member');

  const nested = previewValue({ deep: [[[['y'.repeat(1_000_000)]]]], key: 'k'.repeat(1_000_000) }, 1000);
  t.ok(jsonBytes(nested) < 4096, `nested strings and long names are cut too (${jsonBytes(nested)} bytes)`);
});

t.test('previewValue costs what it shows, not what it is shown', async (t) => {
  const huge = Array.from({ length: 2_000_000 }, () => ({ a: 'b' }));
  const used = cpuOf(() => {
    for (let i = 0; i < 1000; i++) previewValue(huge, 1000);
  });
  t.ok(used < 1, `1,000 previews of 2,000,000 items in ${used.toFixed(3)} s of CPU`);
});

t.test('a short list of problems is sent as found', async (t) => {
  const items: ValidationErrorItem[] = [
    { type: 'missing', loc: ['body', 'state'], msg: 'Field required', input: { questions: {} } },
    valueError(['body', 'questions', 'q', 'criteria'], 'choice labels must not be empty', ['', 'b']),
  ];
  const failure = new ValidationFailure(items);
  t.same(failure.detail, items);
  t.equal(failure.message, 'body.state: Field required; body.questions.q.criteria: Value error, choice labels must not be empty');
});

t.test(`at most ${MAX_LISTED_PROBLEMS} items, the rest counted in one`, async (t) => {
  const big = 'x'.repeat(100_000);
  const items = Array.from({ length: 60_000 }, (_, i) => valueError(['body', 'questions', `q${i}`], `label "${big}" appears twice`, { big }));
  let failure: ValidationFailure | undefined;
  const used = cpuOf(() => (failure = new ValidationFailure(items)));
  const detail = failure!.detail;
  t.equal(detail.length, MAX_LISTED_PROBLEMS + 1);
  t.same(detail.at(-1), {
    type: TOO_MANY_ERRORS,
    loc: ['body'],
    msg: `${60_000 - MAX_LISTED_PROBLEMS} more problems were found and not listed. Fix those listed and send the request again.`,
    input: null,
    ctx: { omitted: 60_000 - MAX_LISTED_PROBLEMS },
  });
  t.ok(detail[0]!.msg.length <= MAX_MESSAGE_CHARS + 40, 'a message is cut');
  t.ok(jsonBytes((detail[0]!.input as { big: string }).big) < 2000, 'an echoed input is cut');
  t.ok(jsonBytes({ detail }) < 256 * 1024, `${jsonBytes({ detail })} bytes of JSON`);
  t.ok(failure!.message.length < 256 * 1024, 'and so is the message');
  t.ok(used < 1, `${used.toFixed(3)} s of CPU`);
});

t.test('the summaries of checks that stopped early are counted, and say so', async (t) => {
  const items = [
    valueError(['body', 'a'], 'one', 1),
    omittedProblems(1, true, ['body']),
    valueError(['body', 'b'], 'two', 2),
    omittedProblems(3, false, ['body']),
  ];
  const detail = new ValidationFailure(items).detail;
  t.same(
    detail.map((d) => d.loc),
    [['body', 'a'], ['body', 'b'], ['body']],
  );
  t.match(detail.at(-1), { type: TOO_MANY_ERRORS, ctx: { omitted: 4, checking_stopped: true }, msg: /4 more problems.*checking stopped there/ });
});

t.test('names in a loc are kept whole unless one item would pass its bound', async (t) => {
  const long = 'n'.repeat(10_000);
  t.same(new ValidationFailure([valueError(['body', 'questions', long], 'bad', null)]).detail[0]!.loc, ['body', 'questions', long]);
  const huge = 'N'.repeat(900_000);
  const detail = new ValidationFailure(Array.from({ length: 100 }, (_, i) => valueError(['body', 'questions', huge, i], 'bad', null))).detail;
  const loc = detail[0]!.loc;
  t.equal(loc[3], 0);
  t.match(loc[2], /^N+…\[\d+ more characters\]$/);
  t.ok(jsonBytes({ detail }) < MiB / 4, `${jsonBytes({ detail })} bytes for 100 items under a name of 900,000 characters`);
});

t.test('listing stops at the byte budget, keeping the order found', async (t) => {
  // Each item just under the per-item bound: a few fit the budget, the rest are counted.
  const name = 'm'.repeat(60_000);
  const detail = new ValidationFailure(Array.from({ length: 20 }, (_, i) => valueError(['body', name, i], 'bad', null))).detail;
  const listed = detail.filter((d) => d.type !== TOO_MANY_ERRORS);
  t.ok(listed.length >= 1 && listed.length < 20, `${listed.length} listed`);
  t.same(
    listed.map((d) => d.loc[2]),
    listed.map((_, i) => i),
  );
  t.equal(detail.at(-1)!.ctx!.omitted, 20 - listed.length);
  t.ok(jsonBytes({ detail }) < MiB / 2);
});
