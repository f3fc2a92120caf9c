// Which files of node_modules a machine needs to build the addon and serve on one platform, read
// from package-lock.json rather than from `npm prune` (which would rewrite the checkout's own
// node_modules): the production dependencies and what they need, for linux-x64 and this Node ABI
// (scripts/device-pack.mjs packs them for the GPU machine, which has no registry to install from).
import fs from 'node:fs';
import path from 'node:path';

/**
 * Dependencies kept for one file or two: node-llama-cpp is a dependency for its llama.cpp source
 * alone, whose version the addon's CMakeLists.txt reads from this file; its own dependencies and
 * its 670 MB of prebuilt binaries are never loaded.
 */
const ONLY_FILES = { 'node_modules/node-llama-cpp': ['package.json', 'llama/llama.cpp.info.json'] };

/** Files no running or building process reads: type declarations, source maps, documentation. */
const UNREAD = /\.(d\.[cm]?ts|map|md|markdown)$/i;
/** Packages of type declarations alone (a few packages list @types/node as a dependency). */
const TYPES_ONLY = /(^|\/)node_modules\/@types\//;

/** The lock's entry path that `name` resolves to from the package at `from`, as Node's lookup walks up. */
function resolve(packages, from, name) {
  for (let dir = from; ; ) {
    const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!dir) return null;
    const up = dir.lastIndexOf('/node_modules/');
    dir = up < 0 ? '' : dir.slice(0, up);
  }
}

/** Whether a lock entry's os/cpu/libc fields (absent: any) admit the target. */
const fits = (entry, target) =>
  (!entry.os || entry.os.includes(target.platform)) && (!entry.cpu || entry.cpu.includes(target.arch)) && (!entry.libc || entry.libc.includes(target.libc));

/**
 * A prebuilt native module for another platform, Node ABI or C library than the target's, by the
 * names the packages here give them: uWebSockets.js's uws_<platform>_<arch>_<abi>.node, and the
 * node.abi<N>.<libc>.node of lmdb and msgpackr's prebuilds.
 */
export function foreignBinary(file, target) {
  const name = path.basename(file);
  if (!name.endsWith('.node')) return false;
  if (name.startsWith('uws_')) return name !== `uws_${target.platform}_${target.arch}_${target.abi}.node`;
  const abi = /\babi(\d+)\b/.exec(name);
  if (abi && abi[1] !== String(target.abi)) return true;
  return /\bmusl\b/.test(name) !== (target.libc === 'musl');
}

/** The lock entries (node_modules/... paths) of the production dependencies and everything they need on `target` (the root's devDependencies are not followed). */
export function runtimePackages(lock, target) {
  const packages = lock.packages;
  const seen = new Set();
  const visit = (entryPath) => {
    const entry = packages[entryPath];
    if (seen.has(entryPath) || TYPES_ONLY.test(entryPath) || !fits(entry, target)) return;
    seen.add(entryPath);
    if (ONLY_FILES[entryPath]) return;
    const needs = { ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies };
    for (const name of Object.keys(needs)) {
      const found = resolve(packages, entryPath, name);
      const optional = name in (entry.optionalDependencies ?? {}) || entry.peerDependenciesMeta?.[name]?.optional;
      if (found) visit(found);
      else if (!optional) throw new Error(`package-lock.json: ${entryPath || 'the package'} needs ${name}, which the lock does not hold`);
    }
  };
  visit('');
  seen.delete('');
  return [...seen].sort();
}

function filesUnder(root, rel) {
  return fs.readdirSync(path.join(root, rel), { withFileTypes: true }).flatMap((entry) => {
    const child = `${rel}/${entry.name}`;
    // A nested node_modules holds packages of their own, which the lock lists (or leaves out) one by one.
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(root, child);
    return entry.isFile() || entry.isSymbolicLink() ? [child] : [];
  });
}

/**
 * The files (relative to `root`) of node_modules that `target` needs: the runtime packages'
 * files, less what no process reads and the native modules built for other targets.
 */
export function runtimeModuleFiles(root, target) {
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  return runtimePackages(lock, target).flatMap((pkg) => {
    if (!fs.existsSync(path.join(root, pkg))) throw new Error(`${pkg} is in package-lock.json but not installed: run npm install`);
    const files = ONLY_FILES[pkg] ? ONLY_FILES[pkg].map((f) => `${pkg}/${f}`) : filesUnder(root, pkg);
    return files.filter((f) => !UNREAD.test(f) && !foreignBinary(f, target));
  });
}
