// The reliability diagram bench:quality writes: a standalone SVG whose points sit where the bins say.
import t from 'tap';
import { reliabilitySvg } from '../../bench/lib/reliability-svg.js';
import { reliability } from '../../src/decision/scoring-rules.js';

const bins = reliability([
  { p: [0.95, 0.05], truth: 0 },
  { p: [0.95, 0.05], truth: 1 },
  { p: [0.65, 0.35], truth: 0 },
]);

t.test('one panel per type, one point per non-empty bin of each series, placed by confidence and share right', async (t) => {
  const svg = reliabilitySvg(
    [
      { title: 'noul (3)', series: [{ name: 'as served', colour: '#c00', bins }] },
      { title: 'choice <&> (0)', series: [{ name: 'as served', colour: '#c00', bins: reliability([]) }] },
    ],
    'model "x"',
  );
  t.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  t.match(svg, /<\/svg>\n$/);
  t.equal(svg.match(/<circle /g)?.length, 2, 'two non-empty bins, no points for the empty panel');
  // Bin 0.9: confidence 0.95, half right: x = 44 + 0.95·240, y = 30 + 0.5·240.
  t.match(svg, /<circle cx="272" cy="150"/);
  // Bin 0.6: confidence 0.65, all right: y at the top of the plot.
  t.match(svg, /<circle cx="200" cy="30"/);
  t.match(svg, /choice &lt;&amp;&gt; \(0\)/, 'titles are escaped');
  t.match(svg, /model &quot;x&quot;/, 'the caption is escaped');
  t.notMatch(svg, /NaN/, 'empty bins draw nothing');
});
