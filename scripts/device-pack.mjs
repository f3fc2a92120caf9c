#!/usr/bin/env node
// Packs into .device/ what scripts/gpu-bench.sh needs on a GPU machine that has no Node, no network
// and room for a few tens of MiB, to build and measure the whole service there:
//
//   llama.cpp.tar.xz   llama.cpp's source (the patched tree npm install committed in deps/llama.cpp):
//                      the folders the addon, native/tools and llama-server build from
//   node.tar.xz        a Node runtime of this checkout's major, from a pinned registry wheel
//                      (scripts/lib/node-runtime.mjs), cached in .device-cache/
//   service.tar.xz     the built dist/ and node_modules pruned to linux-x64 and Node's ABI
//                      (scripts/lib/runtime-modules.mjs)
//   model.skel.gguf    the default model's metadata and tokenizer; the weights are made up there
//   model.name, pack.json (what was packed, each file's size, and what the device call carries)
//
//   node scripts/device-pack.mjs [--model PATH] [--synth PATH]
//
// --synth names a built arbitra-synth-gguf; without it, that one target is built (CPU, ggml only)
// into build/tools. dist/ is compiled first, so the pack holds what the sources say. Exits 1 when
// what the device call would carry (the checkout's files and .device/) is over TRAVEL_LIMIT_MIB.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_ABI, NODE_WHEEL, nodeRuntimeTarball } from './lib/node-runtime.mjs';
import { runtimeModuleFiles } from './lib/runtime-modules.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg) => process.stdout.write(`[device-pack] ${msg}\n`);
const die = (msg) => {
  process.stderr.write(`device-pack: ${msg}\n`);
  process.exit(1);
};

/** The device tool takes 64 MiB of working tree; issue 40 keeps the call under 60. */
export const TRAVEL_LIMIT_MIB = 60;
/** Node's major here, which the packed runtime and native modules must share. */
export const NODE_MAJOR = Number(NODE_WHEEL.version.split('.')[0]);
// What the addon's and native/tools' CMakeLists.txt configure and build: llama.cpp's top level,
// ggml, llama, common with its vendored libraries, tools/llama-bench, and llama-server with what it
// links (tools/mtmd, the UI library's templates and script: no UI assets, which need npm or the
// network); nothing else of tools/ or examples/, and no tests.
export const LLAMA_PATHS = [
  'CMakeLists.txt',
  'LICENSE',
  'licenses',
  'cmake',
  'include',
  'src',
  'ggml',
  'common',
  'vendor',
  'tools/llama-bench',
  'tools/server',
  'tools/mtmd',
  'tools/ui/CMakeLists.txt',
  'tools/ui/ui.h.in',
  'tools/ui/ui.cpp.in',
  'scripts/ui-assets.cmake',
  ':(exclude)tools/server/tests',
  ':(exclude)tools/server/bench',
  ':(exclude)tools/mtmd/tests',
  ':(exclude)tools/mtmd/test-*',
];
/** The files scripts/gpu-bench.sh reads from .device/. */
export const PACK_FILES = { llama: 'llama.cpp.tar.xz', node: 'node.tar.xz', service: 'service.tar.xz', skeleton: 'model.skel.gguf' };
/** The service as dist/ holds it after `npm run build`: the server, the benches, the console. */
const DIST_PATHS = ['dist/src', 'dist/bench', 'dist/web'];
/** The one device call (docs/operations.md): the tool runs it in the checkout's copy, with .device carried. */
export const DEVICE_COMMAND = 'bash scripts/gpu-bench.sh';
/** Its timeout_s: gpu-bench.sh's own deadline (480 s; QUICK=1: 290 s) with a margin for its last steps. */
export const DEVICE_TIMEOUT_S = 540;
export const DEVICE_TIMEOUT_S_QUICK = 330;

function option(name) {
  const i = process.argv.indexOf(name);
  if (i < 0) return undefined;
  if (i + 1 >= process.argv.length) die(`${name} needs a value`);
  return path.resolve(process.argv[i + 1]);
}

const MiB = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const size = (file) => fs.statSync(file).size;
const sum = (files) => files.reduce((n, f) => n + (fs.lstatSync(f, { throwIfNoEntry: false })?.size ?? 0), 0);

/** Bytes the device tool carries besides .device/: the tracked files and the untracked ones git does not ignore. */
function checkoutBytes() {
  const list = (args) => execFileSync('git', ['-C', root, 'ls-files', '-z', ...args], { encoding: 'utf8', maxBuffer: 64 << 20 }).split('\0').filter(Boolean);
  return {
    tracked: sum(list([]).map((f) => path.join(root, f))),
    untracked: sum(list(['--others', '--exclude-standard']).map((f) => path.join(root, f))),
  };
}

function synthTool(llamaDir) {
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

/** Compiles dist/ as `npm run build` does. */
function buildDist() {
  log('compiling dist/ (tsc, console)');
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build-web.mjs')], { cwd: root, stdio: 'inherit' });
}

/** dist/'s files but the source maps, which nothing on the device reads. */
const distFiles = () => DIST_PATHS.flatMap((d) => fs.readdirSync(path.join(root, d), { recursive: true }).map((f) => `${d}/${f}`)).filter((f) => !f.endsWith('.map') && fs.statSync(path.join(root, f)).isFile());

async function main() {
  if (Number(process.versions.node.split('.')[0]) !== NODE_MAJOR) die(`Node ${process.versions.node} here, but the packed runtime is Node ${NODE_WHEEL.version}: its native modules would not match`);
  if (process.versions.modules !== String(NODE_ABI)) die(`Node's ABI here is ${process.versions.modules}, not ${NODE_ABI}`);
  const llamaDir = path.join(root, 'deps', 'llama.cpp');
  if (!fs.existsSync(path.join(llamaDir, '.git'))) die(`no llama.cpp checkout at ${llamaDir}; run npm install first`);
  const model = option('--model') ?? path.join(root, 'models', 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf');
  if (!fs.existsSync(model)) die(`model not found: ${model}`);
  const outDir = path.join(root, '.device');
  const started = Date.now();
  const synth = synthTool(llamaDir);
  buildDist();
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const xz = { ...process.env, XZ_OPT: '-9' };

  const llamaTar = path.join(outDir, PACK_FILES.llama);
  log('packing llama.cpp (xz -9)');
  const archive = execFileSync('git', ['-C', llamaDir, 'archive', '--format=tar', 'HEAD', '--', ...LLAMA_PATHS], { maxBuffer: 256 << 20 });
  execFileSync('xz', ['-9', '-c'], { input: archive, stdio: ['pipe', fs.openSync(llamaTar, 'w'), 'inherit'] });
  const commit = execFileSync('git', ['-C', llamaDir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();

  fs.copyFileSync(await nodeRuntimeTarball(path.join(root, '.device-cache'), log), path.join(outDir, PACK_FILES.node));

  const modules = runtimeModuleFiles(root, { platform: 'linux', arch: 'x64', libc: 'glibc', abi: NODE_ABI });
  const serviceFiles = [...modules, ...distFiles()];
  const listFile = path.join(outDir, 'service.files');
  fs.writeFileSync(listFile, `${serviceFiles.join('\n')}\n`);
  log(`packing the service: ${modules.length} files of node_modules, dist/ (xz -9)`);
  execFileSync('tar', ['-C', root, '-cJf', path.join(outDir, PACK_FILES.service), '--files-from', listFile], { env: xz });
  fs.rmSync(listFile);

  const skeleton = path.join(outDir, PACK_FILES.skeleton);
  execFileSync(synth, ['skeleton', model, skeleton], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.writeFileSync(path.join(outDir, 'model.name'), `${path.basename(model, '.gguf')}\n`);

  const files = Object.fromEntries(fs.readdirSync(outDir).map((f) => [f, size(path.join(outDir, f))]));
  const packBytes = Object.values(files).reduce((a, b) => a + b, 0);
  const checkout = checkoutBytes();
  // pack.json itself is a few hundred bytes more.
  const travel = { ...checkout, pack: packBytes, total: checkout.tracked + checkout.untracked + packBytes, limitMiB: TRAVEL_LIMIT_MIB };
  const manifest = {
    date: new Date().toISOString(),
    llamaCpp: commit,
    node: { version: NODE_WHEEL.version, wheel: NODE_WHEEL.file, sha256: NODE_WHEEL.sha256, abi: NODE_ABI },
    model: path.basename(model, '.gguf'),
    serviceFiles: serviceFiles.length,
    files,
    travel,
    command: DEVICE_COMMAND,
  };
  fs.writeFileSync(path.join(outDir, 'pack.json'), `${JSON.stringify(manifest, null, 2)}\n`);

  for (const [f, n] of Object.entries(files)) log(`${f}: ${MiB(n)}`);
  log(`.device/: ${MiB(packBytes)} (llama.cpp ${commit}, Node ${NODE_WHEEL.version}); with the checkout (${MiB(checkout.tracked)} tracked, ${MiB(checkout.untracked)} untracked) the device call carries ${MiB(travel.total)} of at most ${TRAVEL_LIMIT_MIB} MiB`);
  log(`took ${((Date.now() - started) / 1000).toFixed(0)} s; the device call: command \`${DEVICE_COMMAND}\`, carry [".device"], timeout_s ${DEVICE_TIMEOUT_S} (QUICK=1: ${DEVICE_TIMEOUT_S_QUICK})`);
  if (travel.total >= TRAVEL_LIMIT_MIB * 2 ** 20) die(`the device call would carry ${MiB(travel.total)}, over ${TRAVEL_LIMIT_MIB} MiB`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
