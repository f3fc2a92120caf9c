#!/usr/bin/env node
// Before the suite: TypeSafe's official Python client and jevcompat, the public System One
// conformance suite built on it, in a virtual environment of their own (.venv-sdk/, git-ignored),
// installed from PyPI at the exact versions in test/integration/python/requirements.txt, so
// test/integration/python-sdk.test.ts runs the client users run and
// test/integration/jevcompat.test.ts the suite anyone can run against the server.
import fs from 'node:fs';
import path from 'node:path';
import { ensureVenv, root } from './lib/venv.mjs';

const source = 'test/integration/python/requirements.txt';
ensureVenv({
  name: 'python-sdk',
  dir: '.venv-sdk',
  requirements: fs.readFileSync(path.join(root, source), 'utf8'),
  source,
  // httpx2, the client's HTTP library, needs 3.11.
  minPython: [3, 11],
  needs: 'the Python client (typesafe-sdk)',
});
