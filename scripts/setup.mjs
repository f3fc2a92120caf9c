#!/usr/bin/env node
// One-shot set-up run by `npm install` (postinstall): llama.cpp source, addon build, TypeScript
// build and the default model (resumed where an interrupted install left it), and on a development
// install what the suite needs (scripts/test-setup.mjs). Every step is skipped when its output is
// current, so a second `npm install` costs seconds.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));
const log = (msg) => process.stdout.write(`[arbitra setup] ${msg}\n`);

function run(cmd, argv, opts = {}) {
  execFileSync(cmd, argv, { stdio: 'inherit', cwd: root, ...opts });
}

function llamaSource() {
  const pkgDir = path.join(root, 'node_modules', 'node-llama-cpp', 'llama');
  const bundle = path.join(pkgDir, 'gitRelease.bundle');
  const info = JSON.parse(fs.readFileSync(path.join(pkgDir, 'llama.cpp.info.json'), 'utf8'));
  const dest = path.join(root, 'deps', 'llama.cpp');
  const stampFile = path.join(root, 'deps', 'llama.cpp.stamp');
  // Our patches (native/patches, applied in name order) are part of the source's identity.
  const patchDir = path.join(root, 'native', 'patches');
  const patches = fs.readdirSync(patchDir).filter((f) => f.endsWith('.patch')).sort();
  const patchHash = createHash('sha256');
  for (const f of patches) patchHash.update(f).update(fs.readFileSync(path.join(patchDir, f)));
  const bundleId = `${info.tag}:${fs.statSync(bundle).size}:${patchHash.digest('hex')}`;
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === bundleId) return;
  log(`extracting llama.cpp ${info.tag} from the node-llama-cpp git bundle`);
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  run('git', ['clone', '--quiet', bundle, dest]);
  for (const f of patches) {
    log(`applying ${f}`);
    run('git', ['-C', dest, 'apply', path.join(patchDir, f)]);
  }
  // Committed, so that `git archive` of the tree (scripts/device-pack.mjs) carries the patches too,
  // the files they add included.
  if (patches.length > 0) {
    run('git', ['-C', dest, 'add', '--all']);
    run('git', ['-C', dest, '-c', 'user.name=arbitra', '-c', 'user.email=setup@arbitra.invalid', 'commit', '--quiet', '-m', `arbitra patches: ${patches.join(', ')}`]);
  }
  fs.writeFileSync(stampFile, bundleId);
}

function wantCuda() {
  const flag = process.env.ARBITRA_CUDA;
  if (flag === '0' || flag === 'off') return false;
  if (flag === '1' || flag === 'on') return true;
  try {
    execFileSync('nvcc', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function hashTree(hash, dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) hashTree(hash, p);
    else hash.update(entry.name).update(fs.readFileSync(p));
  }
}

function buildAddon() {
  const cuda = wantCuda();
  const native = process.env.ARBITRA_NATIVE === '1';
  // An x86-64 CPU build carries the CPU backend once per instruction set and picks at load
  // (cmake/llama-settings.cmake); ARBITRA_CPU_VARIANTS=0 builds the one portable backend into the addon.
  const variants = !cuda && !native && process.arch === 'x64' && process.platform === 'linux' && process.env.ARBITRA_CPU_VARIANTS !== '0';
  // Without a GPU to ask (an image build), the CUDA architectures to compile for must be named.
  const cudaArchitectures = (cuda && process.env.ARBITRA_CUDA_ARCHITECTURES) || '';
  const hash = createHash('sha256');
  hashTree(hash, path.join(root, 'native'));
  hash.update(fs.readFileSync(path.join(root, 'CMakeLists.txt')));
  hashTree(hash, path.join(root, 'cmake'));
  hash.update(fs.readFileSync(path.join(root, 'deps', 'llama.cpp.stamp')));
  hash.update(`${process.versions.modules}:${cuda}:${native}:${variants}`);
  if (cudaArchitectures) hash.update(`:${cudaArchitectures}`);
  const stamp = hash.digest('hex');
  const stampFile = path.join(root, 'build', 'arbitra.stamp');
  const addon = path.join(root, 'build', 'Release', 'arbitra.node');
  if (fs.existsSync(addon) && fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp) {
    log('addon is up to date');
    return;
  }
  const backend = cuda ? `cuda${cudaArchitectures && ` for ${cudaArchitectures}`}` : 'cpu';
  const cpuFlags = native ? 'native' : variants ? 'one backend per CPU variant, chosen at load' : 'portable x86-64-v3';
  log(`building the addon (backend: ${backend}, cpu flags: ${cpuFlags})`);
  const jobs = String(Number(process.env.ARBITRA_BUILD_JOBS) || os.availableParallelism());
  // cmake-js would download Node's headers; the ones installed beside node are used when present.
  const env = { ...process.env };
  const localHeaders = path.resolve(path.dirname(process.execPath), '..');
  if (!env.npm_config_nodedir && fs.existsSync(path.join(localHeaders, 'include', 'node', 'node.h'))) env.npm_config_nodedir = localHeaders;
  const cmakeJs = path.join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
  // Configured every time: `cmake-js build` alone keeps an existing tree's options (another backend's).
  run(process.execPath, [
    cmakeJs, 'configure', '--out', 'build',
    `--CDARBITRA_CUDA=${cuda ? 'ON' : 'OFF'}`,
    `--CDARBITRA_NATIVE=${native ? 'ON' : 'OFF'}`,
    `--CDARBITRA_CPU_VARIANTS=${variants ? 'ON' : 'OFF'}`,
    ...(cudaArchitectures ? [`--CDCMAKE_CUDA_ARCHITECTURES=${cudaArchitectures}`] : []),
  ], { env });
  run(process.execPath, [cmakeJs, 'build', '--out', 'build', '--parallel', jobs], { env });
  fs.writeFileSync(stampFile, stamp);
}

function buildTypeScript() {
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  if (!fs.existsSync(tsc)) {
    log('typescript is not installed (production install): using the shipped dist/');
    return;
  }
  log('compiling TypeScript');
  run(process.execPath, [tsc, '-p', 'tsconfig.json']);
  log('building the browser console');
  run(process.execPath, [path.join(root, 'scripts', 'build-web.mjs')]);
}

/** A development install (devDependencies present) also prepares what `npm test` needs in the checkout. */
function testSetup() {
  if (!fs.existsSync(path.join(root, 'node_modules', 'tap')) || process.env.ARBITRA_SKIP_TEST_SETUP === '1') return;
  log('preparing the test models and tools (scripts/test-setup.mjs)');
  try {
    run(process.execPath, [path.join(root, 'scripts', 'test-setup.mjs')]);
  } catch {
    // Serving needs none of it; npm test runs the same script and says what is missing.
    log('the test set-up did not finish; npm test will try again');
  }
}

try {
  llamaSource();
  buildAddon();
  if (!args.has('--addon-only')) {
    buildTypeScript();
    if (process.env.ARBITRA_SKIP_MODEL !== '1') {
      const { DEFAULT_MODEL } = await import('../dist/src/models/catalogue.js');
      const { ensureModel } = await import('../dist/src/models/fetch.js');
      const { modelsDir } = await import('../dist/src/config.js');
      await ensureModel(DEFAULT_MODEL, modelsDir(), log);
    }
    testSetup();
  }
} catch (err) {
  process.stderr.write(`[arbitra setup] failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
