// README.md and docs/ are what people read before the code, so they must not drift from it: every
// variable they name is one that something reads, every `npm run` script and `arbitra` command they
// name exists, every relative link lands on a file and a heading that exist, and README stays a
// short front door that leads to every page of the manual.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string): string => fs.readFileSync(path.join(root, file), 'utf8');

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

const docs = fs
  .readdirSync(path.join(root, 'docs'))
  .filter((f) => f.endsWith('.md'))
  .sort()
  .map((f) => `docs/${f}`);
const pages = ['README.md', ...docs];
const text = new Map(pages.map((p) => [p, read(p)]));
const all = [...text.values()].join('\n');

/** The lines of a markdown text outside fenced code blocks. */
function prose(md: string): string[] {
  let fenced = false;
  return md.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  });
}

/** GitHub's anchors for a page's headings: lower-case, punctuation but '-' and '_' dropped, spaces to '-', repeats numbered. */
function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(md)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

/** Relative links of a page (outside code), as [target file, anchor or null]. */
function links(page: string): Array<{ raw: string; file: string; anchor: string | null }> {
  const found: Array<{ raw: string; file: string; anchor: string | null }> = [];
  for (const line of prose(text.get(page)!)) {
    for (const m of line.replace(/`[^`]*`/g, (code) => (code.includes('](') ? '' : code)).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const raw = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(raw)) continue; // https:, mailto:
      const [target, anchor] = raw.split('#') as [string, string | undefined];
      found.push({ raw, file: target === '' ? path.join(root, page) : path.resolve(path.dirname(path.join(root, page)), target), anchor: anchor ?? null });
    }
  }
  return found;
}

t.test('every ARBITRA_ variable the docs name is one that something reads', async (t) => {
  // The service (src/ and its addon in native/), what npm install runs (scripts/: the build
  // switches such as ARBITRA_CUDA) and the test harness (ARBITRA_TEST_STORE; the container tier's
  // ARBITRA_TEST_CUDA_IMAGE).
  const readers = [
    ...walk(path.join(root, 'src')).filter((f) => f.endsWith('.ts')),
    ...walk(path.join(root, 'native')).filter((f) => /\.(cc|h)$/.test(f)),
    ...walk(path.join(root, 'scripts')),
    ...walk(path.join(root, 'test/integration/helpers')),
    ...walk(path.join(root, 'test/container')),
  ];
  const known = new Set(readers.flatMap((f) => fs.readFileSync(f, 'utf8').match(/ARBITRA_[A-Z0-9_]+/g) ?? []));
  const named = new Set(all.match(/ARBITRA_[A-Z0-9_]+/g));
  t.ok(known.size >= 30, `${known.size} variables read`);
  t.ok(named.size >= 40, `${named.size} variables named`);
  t.same([...named].filter((v) => !known.has(v)).sort(), [], 'none unknown');
});

t.test('every `npm run` script the docs name is in package.json', async (t) => {
  const scripts = new Set(Object.keys((JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts));
  const named = new Set([...all.matchAll(/npm run ([a-z0-9:_-]+)/g)].map((m) => m[1]!));
  t.ok(named.size >= 8, `${named.size} scripts named: ${[...named].join(', ')}`);
  t.same([...named].filter((s) => !scripts.has(s)).sort(), [], 'none unknown');
});

t.test('every `arbitra` command the docs name is one the CLI dispatches', async (t) => {
  // main() dispatches `command === 'NAME') await handler(...)`; a handler with subcommands tests
  // `action === 'NAME'`. Read from the source text: importing the CLI runs it.
  const cliDir = path.join(root, 'src/cli');
  const cli = walk(cliDir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('\n');
  const main = read('src/cli/main.ts');
  const commands = new Map<string, Set<string>>();
  for (const m of main.matchAll(/command === '([a-z-]+)'\)\s*await\s+(\w+)\(/g)) {
    const start = cli.indexOf(`function ${m[2]!}(`);
    t.ok(start >= 0, `handler ${m[2]!} of ${m[1]!} found`);
    const body = cli.slice(start, cli.indexOf('\n}\n', start));
    commands.set(m[1]!, new Set([...body.matchAll(/action === '([a-z-]+)'/g)].map((a) => a[1]!)));
  }
  t.ok(commands.size >= 5, `commands: ${[...commands.keys()].join(', ')}`);
  t.ok([...commands.values()].filter((subs) => subs.size >= 2).length >= 2, 'keys and models have their subcommands');

  // "arbitra limits (self-hosted): ..." is a line the server prints, not a command.
  const source = walk(path.join(root, 'src'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => fs.readFileSync(f, 'utf8'))
    .join('\n');
  const named: string[] = [];
  const unknown: string[] = [];
  // In `podman exec arbitra arbitra keys …` the first `arbitra` names a container, not a command.
  for (const m of all.matchAll(/(?<![\w/.-])arbitra\s+(?!arbitra\b)([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?/g)) {
    const mention = m[0].replace(/\s+/g, ' ');
    if (all.startsWith(' (', m.index + m[0].length) && source.includes(`${mention} (`)) continue;
    const subs = commands.get(m[1]!);
    const sub = subs?.size && m[2] !== undefined ? m[2] : null;
    named.push(sub ? `arbitra ${m[1]!} ${sub}` : `arbitra ${m[1]!}`);
    if (!subs || (sub !== null && !subs.has(sub))) unknown.push(mention);
  }
  t.ok(named.length >= 20, `${named.length} mentions: ${[...new Set(named)].join(', ')}`);
  t.ok(new Set(named).size >= 8, 'of many commands');
  t.same(unknown, [], 'none unknown');
});

t.test('every relative link lands on a file, and every anchor on a heading there', async (t) => {
  let count = 0;
  let withAnchor = 0;
  const broken: string[] = [];
  for (const page of pages) {
    for (const link of links(page)) {
      count++;
      if (!fs.existsSync(link.file)) {
        broken.push(`${page}: ${link.raw} (no such file)`);
        continue;
      }
      if (link.anchor === null) continue;
      withAnchor++;
      if (!link.file.endsWith('.md') || !anchors(fs.readFileSync(link.file, 'utf8')).has(link.anchor)) broken.push(`${page}: ${link.raw} (no such heading)`);
    }
  }
  t.ok(count >= 25, `${count} links`);
  t.ok(withAnchor >= 8, `${withAnchor} with an anchor`);
  t.same(broken, [], 'none broken');
});

t.test('the anchors are GitHub’s', async (t) => {
  t.same(
    [...anchors('# API\n## POST /v1/systemone\n## What `npm install` does\n## Choices where the interface says "not shown"\n```\n# not a heading\n```\n## API\n')],
    ['api', 'post-v1systemone', 'what-npm-install-does', 'choices-where-the-interface-says-not-shown', 'api-1'],
  );
});

t.test('README is a front door of at most 200 lines that leads to every page of the manual', async (t) => {
  const readme = text.get('README.md')!;
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  t.ok(lines <= 200, `${lines} lines`);
  t.ok(docs.length >= 7, `${docs.length} pages in docs/`);
  const linked = new Set(links('README.md').map((l) => path.relative(root, l.file)));
  t.same(
    docs.filter((d) => !linked.has(d)),
    [],
    'README links every docs page',
  );
  t.match(readme, /npm install && npm start/);
  t.match(readme, /npm test/);
});

t.test('every docs page has a title and leads back to README', async (t) => {
  t.ok(docs.length >= 7, `${docs.length} pages`);
  for (const page of docs) {
    t.match(text.get(page)!, /^# \S.*\n\n\S/, `${page} starts with a title and its purpose`);
    t.ok(
      links(page).some((l) => path.relative(root, l.file) === 'README.md'),
      `${page} links to README.md`,
    );
  }
});
