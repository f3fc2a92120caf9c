// bench/RESULTS.md holds one "## <name>" section per benchmark; each run replaces its own section.
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';

/** Writes a run's raw figures to bench/out/<name>.json, beside the section it publishes. */
export function writeRawResult(name: string, value: unknown): void {
  const dir = path.join(packageRoot(), 'bench', 'out');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify(value, null, 2)}\n`);
}

export function replaceSection(file: string, name: string, body: string): void {
  const heading = `## ${name}`;
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmark results\n';
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.trim() === heading);
  const section = [heading, '', body.trimEnd(), ''];
  if (start < 0) {
    fs.writeFileSync(file, `${text.trimEnd()}\n\n${section.join('\n')}`);
    return;
  }
  let end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  if (end < 0) end = lines.length;
  lines.splice(start, end - start, ...section);
  fs.writeFileSync(file, lines.join('\n'));
}

/** Writes the section into `file`, or, when `file` is null (a trial run), only prints it. */
export function publishSection(file: string | null, name: string, body: string, log: (msg: string) => void): void {
  if (file === null) {
    process.stdout.write(`\n## ${name}\n\n${body.trimEnd()}\n\n`);
    log('--no-write: the section above was not written');
    return;
  }
  replaceSection(file, name, body);
  log(`wrote the "${name}" section of ${file}`);
}
