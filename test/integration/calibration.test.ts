// Calibration from outcomes, end to end against `arbitra serve` with ARBITRA_CALIBRATION=on:
// decisions retained, their outcomes posted as traces, `arbitra calibrate` fitting and storing a
// version from them, and the running server answering with it: calibrated probabilities, bands and
// meta, while raw probabilities stay raw. Then a JSONL file as the source, a refusal, a preset
// written with --out, and servers in preset mode: the default model's shipped preset applied, and
// a model without one answered uncalibrated.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { ChoiceAnswer } from '../../src/api/schemas/systemone.js';
import { presetCalibration } from '../../src/decision/calibration-presets.js';
import { LAYOUT_VERSION } from '../../src/decision/prompt.js';
import { NO_FIT, NO_PRESET } from '../../src/decision/served-quality.js';
import { DEFAULT_MODEL } from '../../src/models/catalogue.js';
import { DEFAULT_MODEL_FILE } from '../helpers/models.js';
import { modelChecksum } from '../../src/models/checksum.js';
import { CLI, MODEL_FILE, cannotRun, startServer } from './helpers/server.js';

const LABELS = ['billing', 'technical', 'shipping'];
const question = { type: 'choice', instructions: 'Which team should handle this message?', criteria: LABELS };

function calibrateCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'calibrate', '--model', MODEL_FILE, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

if (cannotRun) {
  t.plan(0, cannotRun);
} else {
  const dir = t.testdir();
  const server = await startServer(dir, { workers: 2, env: { ARBITRA_CALIBRATION: 'on' } });
  t.teardown(() => server.stop());
  const { secret } = await server.createKey('calibrate@example.com');
  const ask = (n: number, retain: boolean) =>
    server.call('/v1/systemone', {
      key: secret,
      body: {
        state: `Message ${n}: something about my account does not work as it should.`,
        questions: { team: question },
        options: { retain, return_raw_probabilities: true },
      },
    });

  t.test('before any fit: answered uncalibrated, and meta says none is fitted', async (t) => {
    const r = await ask(0, false);
    t.equal(r.status, 200, r.text);
    t.match(r.json.meta, { calibration: 'none', calibration_version: null });
    t.equal(r.json.answers.team.confidence_band, null);
    const health = await server.call('/health');
    t.same(health.json.model.quality, { unavailable: NO_FIT }, '/health says no figures describe what is served, and why');
  });

  t.test('traces of retained decisions → arbitra calibrate → the running server applies it', async (t) => {
    // The small test model is overconfident and about as good as chance on this; outcomes that
    // follow the most probable label only half the time make that overconfidence plain.
    const traces = [];
    for (let n = 1; n <= 60; n++) {
      const r = await ask(n, true);
      t.equal(r.status, 200);
      const answer = r.json.answers.team as ChoiceAnswer;
      const other = LABELS.find((l) => l !== answer.choice)!;
      traces.push({ request_id: r.json.id, question: 'team', outcome: n % 2 === 0 ? answer.choice : other });
    }
    // A trace calibration could never join with a retained decision is refused at the door.
    traces.push({ request_id: 'so_unknown', question: 'team', outcome: 'billing' });
    const posted = await server.call('/v1/traces', { key: secret, body: traces });
    t.match(posted.json, { accepted: 60, rejected: [{ index: 60, reason: /^request_id: not a decision of this API key/ }] });

    const fitted = await calibrateCli([...server.storeArgs], server.storeEnv);
    t.equal(fitted.code, 0, fitted.stderr);
    t.match(fitted.stdout, /60 traced outcomes .* \(0 traces without a matching retained decision skipped\)/);
    t.match(fitted.stdout, /^choice\s+60\s/m, 'the table reports the choice questions');
    const version = /saved calibration (\S+) \(choice\)/.exec(fitted.stdout)?.[1];
    t.ok(version, fitted.stdout);
    const [, before, after] = /^choice\s+60\s+log loss\s+(\S+)\s+(\S+)/m.exec(fitted.stdout)!.map(Number);
    t.ok(after! < before!, `held-out log loss ${before} → ${after}: choice is judged by a proper scoring rule`);

    const r = await ask(100, false);
    t.equal(r.status, 200);
    t.match(r.json.meta, { calibration: 'temperature', calibration_version: version });
    const answer = r.json.answers.team as ChoiceAnswer;
    t.ok(['high', 'leaning', 'low'].includes(answer.confidence_band!), `band ${answer.confidence_band}`);
    t.not(answer.probabilities[answer.choice], answer.raw_probabilities![answer.choice], 'probabilities are calibrated');
    t.ok(Math.max(...Object.values(answer.probabilities)) < Math.max(...Object.values(answer.raw_probabilities!)), 'the fit softens an overconfident model');
    t.equal(answer.choice, Object.entries(answer.raw_probabilities!).sort((a, b) => b[1] - a[1])[0]![0], 'temperature scaling keeps the choice');

    const health = await server.call('/health');
    t.match(
      health.json.model.quality,
      {
        layout: LAYOUT_VERSION,
        version,
        calibration: 'fitted',
        source: /^traces joined with retained requests, fitted \d{4}-\d\d-\d\dT[\d:.]+Z$/, // not where the store lives
        types: { choice: { n: 60, overconfidence: Number, ece: Number, accuracy: Number, calibrated: true } },
      },
      "/health gives the new fit's held-out figures",
    );
  });

  t.test('a JSONL file of answers and truths is a source too, and a new version follows', async (t) => {
    const file = path.join(dir, 'outcomes.jsonl');
    const lines = [];
    for (let i = 0; i < 40; i++) {
      // Says 0.9 for yes; yes is true half the time.
      lines.push(JSON.stringify({ answer: { type: 'noul', noul: 0.9 }, truth: i % 2 === 0 }));
    }
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const r = await calibrateCli([...server.storeArgs, '--file', file], server.storeEnv);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /saved calibration \S+\.2 \(noul\)/, 'the second version of this model and layout');
  });

  t.test('outcomes that no fit improves are refused, nothing is saved', async (t) => {
    const file = path.join(dir, 'perfect.jsonl');
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ type: 'choice', p: i % 2 ? [1, 0] : [0, 1], truth: i % 2 ? 0 : 1 }));
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const r = await calibrateCli([...server.storeArgs, '--file', file], server.storeEnv);
    t.equal(r.code, 1);
    t.match(r.stderr, /not saved: no question type improved on its held-out proper scoring rule/);
    const bad = await calibrateCli([...server.storeArgs, '--file', path.join(dir, 'missing.jsonl')], server.storeEnv);
    t.equal(bad.code, 1);
    t.match(bad.stderr, /no such file/);
  });

  t.test('--out writes a preset bound to the model file and the layout, and the store is not touched', async (t) => {
    const file = path.join(dir, 'outcomes.jsonl');
    const preset = path.join(dir, 'preset.json');
    const empty = path.join(dir, 'no-store');
    const r = await calibrateCli(['--data-dir', empty, '--file', file, '--out', preset]);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /wrote preset (\S+)\.preset \(noul\)/);
    const record = JSON.parse(fs.readFileSync(preset, 'utf8')) as { version: string; model_sha256: string; layout: string; fits: object };
    t.equal(record.model_sha256, await modelChecksum(MODEL_FILE));
    t.equal(record.layout, LAYOUT_VERSION);
    t.equal(record.version, `${LAYOUT_VERSION}.${record.model_sha256.slice(0, 8)}.preset`);
    t.match(record.fits, { noul: { method: String } });
    t.notOk(fs.existsSync(empty), 'no data dir was created');
  });

  t.test(
    '--calibration preset with the default model: its shipped maps are applied and named',
    { skip: !fs.existsSync(DEFAULT_MODEL_FILE) && 'the default model is not downloaded' },
    async (t) => {
      const presetServer = await startServer(t.testdir(), {
        workers: 0,
        args: ['--model', DEFAULT_MODEL_FILE, '--calibration', 'preset'],
      });
      t.teardown(() => presetServer.stop());
      const key = await presetServer.createKey('preset-default@example.com');
      const r = await presetServer.call('/v1/systemone', {
        key: key.secret,
        body: { state: 'My parcel never arrived.', questions: { team: question }, options: { return_raw_probabilities: true } },
      });
      t.equal(r.status, 200, r.text);
      t.match(r.json.meta, { calibration: 'platt+temperature', calibration_version: `${LAYOUT_VERSION}.${DEFAULT_MODEL.sha256.slice(0, 8)}.preset` });
      const answer = r.json.answers.team as ChoiceAnswer;
      t.ok(['high', 'leaning', 'low'].includes(answer.confidence_band!), `band ${answer.confidence_band}`);
      // The preset's choice map is a temperature below 1: the chosen label's probability rises, the choice stays.
      t.ok(
        answer.probabilities[answer.choice]! > answer.raw_probabilities![answer.choice]!,
        `${answer.raw_probabilities![answer.choice]} → ${answer.probabilities[answer.choice]}`,
      );
      t.match(
        presetServer.log(),
        new RegExp(`calibration: preset ${LAYOUT_VERSION}\\.\\w+\\.preset \\(noul platt, choice temperature; other types as read\\)`),
        'the operator is told at start-up',
      );
      const preset = presetCalibration(DEFAULT_MODEL.sha256, LAYOUT_VERSION)!;
      const figures = (kind: string, which: 'before' | 'after') => {
        const m = preset.reports.find((r) => r.kind === kind)![which]!;
        return { n: m.n, overconfidence: m.overconfidence, ece: m.ece, accuracy: m.accuracy, calibrated: which === 'after' };
      };
      const health = await presetServer.call('/health');
      t.same(
        health.json.model.quality,
        {
          layout: LAYOUT_VERSION,
          version: preset.version,
          source: preset.source,
          calibration: 'preset',
          types: { noul: figures('noul', 'after'), choice: figures('choice', 'after'), score: figures('score', 'before') },
        },
        "/health gives the preset's held-out figures of what is served: its maps' for noul and choice, score as read",
      );
    },
  );

  t.test('--calibration preset with a model that has no preset: answered uncalibrated, meta says none', async (t) => {
    const presetServer = await startServer(t.testdir(), { workers: 0, args: ['--calibration', 'preset'] });
    t.teardown(() => presetServer.stop());
    const key = await presetServer.createKey('preset@example.com');
    const r = await presetServer.call('/v1/systemone', { key: key.secret, body: { state: 'My parcel never arrived.', questions: { team: question } } });
    t.equal(r.status, 200, r.text);
    t.match(r.json.meta, { calibration: 'none', calibration_version: null });
    t.equal(r.json.answers.team.confidence_band, null);
    t.match(
      presetServer.log(),
      /calibration: no preset ships for this model file .* under layout L\d+; answers are uncalibrated/,
      'the operator is told at start-up',
    );
    t.same((await presetServer.call('/health')).json.model.quality, { unavailable: NO_PRESET }, '/health says why it has no figures');
  });
}
