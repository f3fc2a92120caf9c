#!/usr/bin/env node
// Packs what scripts/gpu-bench.sh needs on a GPU machine that has no Node, no network and room
// for a few tens of MiB: llama.cpp's source (only the folders native/tools builds from) and the
// default model's skeleton (its metadata and tokenizer; the weights are made up there).
//
//   node scripts/device-pack.mjs [--model PATH] [--synth PATH]
//
// --synth names a built arbitra-synth-gguf; without it, that one target is built (CPU, ggml only)
// into build/tools.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg) => process.stdout.write(`[device-pack] ${msg}\n`);
const die = (msg) => {
  process.stderr.write(`device-pack: ${msg}\n`);
  process.exit(1);
};

function option(name) {
  const i = process.argv.indexOf(name);
  if (i < 0) return undefined;
  if (i + 1 >= process.argv.length) die(`${name} needs a value`);
  return path.resolve(process.argv[i + 1]);
}

const llamaDir = path.join(root, 'deps', 'llama.cpp');
// What native/tools/CMakeLists.txt configures and builds: llama.cpp's top level, ggml, llama,
// common with its vendored libraries, and tools/llama-bench; nothing else of tools/ or examples/.
const LLAMA_PATHS = ['CMakeLists.txt', 'LICENSE', 'licenses', 'cmake', 'include', 'src', 'ggml', 'common', 'vendor', 'tools/llama-bench'];
const model = option('--model') ?? path.join(root, 'models', 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');
const outDir = path.join(root, '.device');

function synthTool() {
  const given = option('--synth');
  if (given) return given;
  const build = path.join(root, 'build', 'tools');
  const exe = path.join(build, 'bin', 'arbitra-synth-gguf');
  log(`building arbitra-synth-gguf into ${path.relative(root, build)}`);
  const jobs = process.env.ARBITRA_BUILD_JOBS ?? String(os.availableParallelism());
  const run = (argv) => execFileSync('cmake', argv, { stdio: ['ignore', 'ignore', 'inherit'], cwd: root });
  if (!fs.existsSync(path.join(build, 'CMakeCache.txt'))) {
    run(['-S', path.join(root, 'native', 'tools'), '-B', build, '-DARBITRA_CUDA=OFF', `-DLLAMA_DIR=${llamaDir}`]);
  }
  run(['--build', build, '--target', 'arbitra-synth-gguf', '-j', jobs]);
  return exe;
}

if (!fs.existsSync(path.join(llamaDir, '.git'))) die(`no llama.cpp checkout at ${llamaDir}; run npm install first`);
if (!fs.existsSync(model)) die(`model not found: ${model}`);
const synth = synthTool();
fs.mkdirSync(outDir, { recursive: true });

const tarball = path.join(outDir, 'llama.cpp.tar.gz');
execFileSync('git', ['-C', llamaDir, 'archive', '--format=tar.gz', '-9', '-o', tarball, 'HEAD', '--', ...LLAMA_PATHS], { stdio: 'inherit' });
const commit = execFileSync('git', ['-C', llamaDir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
log(`llama.cpp.tar.gz: ${fs.statSync(tarball).size} bytes (llama.cpp ${commit})`);

const skeleton = path.join(outDir, 'model.skel.gguf');
execFileSync(synth, ['skeleton', model, skeleton], { stdio: 'inherit' });
fs.writeFileSync(path.join(outDir, 'model.name'), `${path.basename(model, '.gguf')}\n`);
log(`model.skel.gguf: ${fs.statSync(skeleton).size} bytes (from ${path.relative(root, model)})`);

const total = fs.readdirSync(outDir).reduce((n, f) => n + fs.statSync(path.join(outDir, f)).size, 0);
log(`${path.relative(root, outDir)}/: ${total} bytes (${(total / 2 ** 20).toFixed(1)} MiB)`);
