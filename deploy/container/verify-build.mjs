#!/usr/bin/env node
// Run in the image's build stage (Containerfile): the labels VERSION, LLAMA_CPP and BACKEND are
// build arguments, so this proves them against what was built before they are written into the
// image. Usage: node deploy/container/verify-build.mjs VERSION LLAMA_CPP BACKEND
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

const [version, llamaCpp, backend] = process.argv.slice(2);
const fail = (message) => {
  process.stderr.write(`verify-build: ${message}\n`);
  process.exit(1);
};
const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

const pkg = readJson('package.json').version;
if (pkg !== version) fail(`--build-arg VERSION=${version}, but package.json says ${pkg}`);
const tag = readJson('node_modules/node-llama-cpp/llama/llama.cpp.info.json').tag;
if (tag !== llamaCpp) fail(`--build-arg LLAMA_CPP=${llamaCpp}, but the llama.cpp source is ${tag}`);

// The CUDA addon cannot be loaded without a GPU driver, so its backend is read from what it links.
const dynamic = execFileSync('readelf', ['-d', 'build/Release/arbitra.node'], { encoding: 'utf8' });
const needed = [...dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
const linksCuda = ['libcudart.so', 'libcublas.so', 'libcuda.so'].every((lib) => needed.some((n) => n.startsWith(`${lib}.`)));
if (backend !== 'cpu' && backend !== 'cuda') fail(`--build-arg BACKEND must be cpu or cuda, got ${JSON.stringify(backend)}`);
if (linksCuda !== (backend === 'cuda')) fail(`BACKEND=${backend}, but the addon links ${needed.join(', ')}`);
process.stdout.write(`verify-build: arbitra ${version}, llama.cpp ${tag}, backend ${backend} (addon links ${needed.join(', ')})\n`);
