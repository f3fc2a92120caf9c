// Placement of scoring requests over several engines (pure functions), and `--gpus` in the config.
import t from 'tap';
import { loadConfig } from '../../src/config.js';
import { placementKey, placeRequest, type Candidate } from '../../src/engine/placement.js';

const idle = (ids: number[]): Candidate[] => ids.map((id) => ({ id, load: 0 }));
const keys = Array.from({ length: 2000 }, (_, i) => ['', `Ticket #${i} from a customer in Lyon.\n`]);

t.test('a prefix has one home: the same engine every time, whatever the order of the list', async (t) => {
  for (const key of keys.slice(0, 50)) {
    const home = placeRequest(idle([0, 1, 2, 3]), key, 100);
    t.equal(placeRequest(idle([3, 1, 0, 2]), key, 100), home);
  }
});

t.test('homes spread evenly over the engines', async (t) => {
  const counts = [0, 0, 0, 0];
  for (const key of keys) counts[placeRequest(idle([0, 1, 2, 3]), key, 100)]!++;
  for (const [id, n] of counts.entries()) t.ok(n > 400 && n < 600, `engine ${id} is home to ${n} of 2000 prefixes`);
});

t.test('taking an engine away moves only the prefixes whose home it was', async (t) => {
  const wrongly: string[][] = [];
  let moved = 0;
  for (const key of keys) {
    const before = placeRequest(idle([0, 1, 2, 3]), key, 100);
    const after = placeRequest(idle([0, 1, 3]), key, 100);
    if (before === 2) moved++;
    else if (after !== before) wrongly.push(key);
  }
  t.same(wrongly, [], 'every prefix at home on 0, 1 or 3 stays there');
  t.ok(moved > 0, `${moved} prefixes lost their home and found another`);
});

t.test('a busy home is left only when its queue is longer than the prefix it would save', async (t) => {
  const key = keys[7]!;
  const home = placeRequest(idle([0, 1]), key, 500);
  const other = 1 - home;
  const loads = (homeLoad: number, otherLoad: number): Candidate[] => [
    { id: home, load: homeLoad },
    { id: other, load: otherLoad },
  ];
  t.equal(placeRequest(loads(400, 0), key, 500), home, 'waiting 400 at home beats evaluating a 500 prefix cold');
  t.equal(placeRequest(loads(500, 0), key, 500), home, 'a tie stays home');
  t.equal(placeRequest(loads(501, 0), key, 500), other, 'waiting 501 at home loses to evaluating it cold elsewhere');
  t.equal(placeRequest(loads(2000, 1400), key, 500), other, 'the less busy of two busy engines');
});

t.test("a state's home is its account's: the same state of other accounts is spread like new text", async (t) => {
  const request = { system: 'Answer the questions.', prefix: 'Ticket #12 from a customer in Lyon.\n' };
  const homeOf = (cacheScope?: string) => placeRequest(idle([0, 1, 2, 3]), placementKey({ ...request, cacheScope }), 100);
  t.equal(homeOf('usr_a'), homeOf('usr_a'), "one account's state has one home");
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < 400; i++) counts[homeOf(`usr_${i}`)]!++;
  for (const [id, n] of counts.entries()) t.ok(n > 60 && n < 140, `engine ${id} is home to this state for ${n} of 400 accounts`);
});

t.test('one engine takes every request, whatever its load', async (t) => {
  t.equal(placeRequest([{ id: 3, load: 1e9 }], keys[0]!, 0), 3);
});

t.test('no engine to place on is a programming error, not a silent choice', async (t) => {
  t.throws(() => placeRequest([], ['x'], 1), /at least one candidate/);
});

t.test('--gpus / ARBITRA_GPUS: one engine per listed device; a bad list is named', async (t) => {
  t.equal(loadConfig([], {}).gpus, null, 'unset: one engine on every device the build sees');
  t.same(loadConfig(['--gpus', '0,1', '--workers', '2'], {}).gpus, [0, 1]);
  t.same(loadConfig(['--workers', '1'], { ARBITRA_GPUS: ' 3 , 1 ' }).gpus, [3, 1], 'order kept, spaces allowed');
  t.throws(() => loadConfig(['--gpus', '0,0', '--workers', '2'], {}), /--gpus names a GPU twice: "0,0"/);
  t.throws(() => loadConfig(['--gpus', '0,x', '--workers', '2'], {}), /--gpus must be a comma-separated list of GPU indexes from 0 to 63, got "0,x"/);
  t.throws(() => loadConfig(['--workers', '2'], { ARBITRA_GPUS: '0,64' }), /ARBITRA_GPUS must be a comma-separated list/);
  t.throws(() => loadConfig(['--gpus', '', '--workers', '2'], {}), /--gpus must be/);
  t.throws(() => loadConfig(['--gpus', '0,1', '--workers', '0'], {}), /--gpus starts one engine process per GPU, which needs --workers 1 or more/);
});
