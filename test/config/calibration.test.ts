// `--calibration` / ARBITRA_CALIBRATION: off by default, the newest fitted calibration ("fitted",
// or "on" as it was spelt before the preset) or the shipped preset, and a refusal naming the values.
import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';

t.test('off unless asked; fitted, on and preset as the flag or the variable', async (t) => {
  t.equal(loadConfig([], {}).calibration, 'off');
  t.equal(loadConfig(['--calibration', 'preset'], {}).calibration, 'preset');
  t.equal(loadConfig(['--calibration=fitted'], {}).calibration, 'fitted');
  t.equal(loadConfig([], { ARBITRA_CALIBRATION: 'on' }).calibration, 'fitted', 'on keeps its old meaning');
  t.equal(loadConfig([], { ARBITRA_CALIBRATION: ' Preset ' }).calibration, 'preset');
  t.equal(loadConfig(['--calibration', 'off'], { ARBITRA_CALIBRATION: 'preset' }).calibration, 'off', 'the flag wins over the variable');
});

t.test('anything else is refused, naming the setting and the values', async (t) => {
  for (const [argv, env, source] of [
    [['--calibration', 'default'], {}, '--calibration'],
    [[], { ARBITRA_CALIBRATION: 'constructor' }, 'ARBITRA_CALIBRATION'],
  ] as const) {
    t.throws(
      () => loadConfig([...argv], env),
      new ConfigError(`${source} must be "off", "fitted" (or "on") or "preset", got "${argv[1] ?? env.ARBITRA_CALIBRATION}"`),
    );
  }
});
