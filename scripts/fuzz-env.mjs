#!/usr/bin/env node
// Before the suite: schemathesis, the schema-driven fuzzer that test/integration/fuzz.test.ts runs
// against `arbitra serve`'s /openapi.json, in a virtual environment of its own (.venv-fuzz/,
// git-ignored). The pins are the whole set `pip install schemathesis==4.32.5` resolves to on
// Python 3.11+; to move to a new release, install it into a scratch venv and copy `pip freeze`.
import { ensureVenv } from './lib/venv.mjs';

const PINS = `
schemathesis==4.32.5
anyio==4.16.0
certifi==2026.10.18
charset-normalizer==3.5.2
click==8.5.1
graphql-core==3.3.2
harfile==0.6.0
hypothesis==6.170.15
hypothesis-graphql==0.13.5
idna==3.20
iniconfig==2.3.1
jsonschema-rs==0.60.3
markdown-it-py==4.3.0
markupsafe==3.0.4
mdurl==0.1.2
packaging==26.3
pluggy==1.7.0
pygments==2.21.0
pyrate-limiter==4.5.1
pytest==9.2.0
pyyaml==6.0.3
requests==2.34.2
rich==15.0.0
sortedcontainers==2.4.0
typing-extensions==4.16.0
urllib3==2.8.0
werkzeug==3.1.9
`.trimStart();

ensureVenv({
  name: 'fuzz-env',
  dir: '.venv-fuzz',
  requirements: PINS,
  source: 'the schemathesis pins in scripts/fuzz-env.mjs',
  // schemathesis 4 declares Requires-Python >= 3.11.
  minPython: [3, 11],
  needs: 'the fuzz test (schemathesis)',
});
