#!/usr/bin/env node
// Builds Arbitra's image from one commit, the way a user builds it from a clean checkout: the build
// context is `git archive` of the commit (no node_modules, build, deps, models or dist, nothing
// uncommitted), built with that commit's deploy/container/Containerfile, or with this checkout's
// for a commit older than the Containerfile.
//
//   node scripts/container/images.mjs [--commit REV] [--backend cpu|cuda] [--tag NAME]...
//        [--cuda-architectures "90"] [--ca BUNDLE.pem]
//
// Tags localhost/arbitra:<backend>-<short commit> and any --tag; prints the image's size and how
// long the build took. The base images must be pullable or present (scripts/container/bases.mjs).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { failWith, imageExists, imageSize, read, root, run, secondsSince } from './podman.mjs';

const NAME = 'container image';
const fail = failWith(NAME);
const log = (line) => process.stdout.write(`[${NAME}] ${line}\n`);
const { values: options } = parseArgs({
  options: {
    commit: { type: 'string', default: 'HEAD' },
    backend: { type: 'string', default: 'cpu' },
    tag: { type: 'string', multiple: true, default: [] },
    'cuda-architectures': { type: 'string' },
    ca: { type: 'string', default: '/etc/ssl/certs/ca-certificates.crt' },
  },
});
if (!['cpu', 'cuda'].includes(options.backend)) fail(`--backend must be cpu or cuda, got ${JSON.stringify(options.backend)}`);

const CONTAINERFILE = 'deploy/container/Containerfile';
const commit = read('git', ['rev-parse', '--verify', `${options.commit}^{commit}`]) ?? fail(`${options.commit} is not a commit of ${root}`);
const short = commit.slice(0, 7);
if (options.commit === 'HEAD' && read('git', ['status', '--porcelain', '--untracked-files=no'])) {
  log('the working tree has uncommitted changes; the image holds HEAD without them');
}

const context = fs.mkdtempSync(path.join(os.tmpdir(), `arbitra-image-${short}-`));
process.on('exit', () => fs.rmSync(context, { recursive: true, force: true }));
// git archive stamps every file with the commit's time; one fixed time instead lets the layers of
// an unchanged step (npm ci, the addon) be reused by the next commit's build.
run('sh', ['-c', `git archive --format=tar "${commit}" | tar -x -C "${context}" && find "${context}" -exec touch -h -d @0 {} +`], fail);
const own = fs.existsSync(path.join(context, CONTAINERFILE));
const containerfile = own ? path.join(context, CONTAINERFILE) : path.join(root, CONTAINERFILE);
if (!own) {
  fs.cpSync(path.join(root, 'deploy', 'container'), path.join(context, 'deploy', 'container'), { recursive: true });
  log(`${short} has no ${CONTAINERFILE}: building it with this checkout's deploy/container/`);
}

const tags = [`localhost/arbitra:${options.backend}-${short}`, ...options.tag];
const args = ['build', '--format', 'docker', '-f', containerfile, '--build-arg', `BACKEND=${options.backend}`, '--build-arg', `REVISION=${commit}`];
if (options['cuda-architectures']) args.push('--build-arg', `CUDA_ARCHITECTURES=${options['cuda-architectures']}`);
// The build trusts what this machine trusts, a TLS-inspecting proxy's certificate included.
if (fs.existsSync(options.ca)) args.push('--secret', `id=ca,src=${options.ca}`);
for (const tag of tags) args.push('-t', tag);
const started = Date.now();
log(`building ${tags.join(', ')} from ${commit}`);
run('podman', [...args, context], fail);
// podman build stopped by a signal has exited 0 without the image: the image itself is the proof.
if (!imageExists(tags[0])) fail(`podman build ended without ${tags[0]}`);
log(`built ${tags[0]} in ${secondsSince(started)} s: ${(imageSize(tags[0]) / 1e6).toFixed(0)} MB`);
