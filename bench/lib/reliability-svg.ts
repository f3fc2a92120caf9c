// A reliability diagram as a standalone SVG: per panel (one question type), each series' top-answer
// probability (x, the bin's mean) against how often that answer was right (y). Points on the
// diagonal mean what they say; below it the probabilities claim too much. A point's area follows
// the forecasts in its bin, and the bars along the bottom show where the forecasts fall.
import type { ReliabilityBin } from '../../src/decision/scoring-rules.js';

export interface Series {
  name: string;
  colour: string;
  bins: ReliabilityBin[];
}

export interface Panel {
  title: string;
  series: Series[];
}

const SIZE = 240;
const MARGIN = { left: 44, right: 16, top: 30, bottom: 40 };
const PANEL_W = MARGIN.left + SIZE + MARGIN.right;
const PANEL_H = MARGIN.top + SIZE + MARGIN.bottom;
const LEGEND_H = 28;
/** The share of forecasts that fills the count bars' full height. */
const BAR_FULL = 0.5;

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

const num = (x: number): string => (Math.round(x * 10) / 10).toString();

function panelSvg(panel: Panel, x0: number): string {
  const x = (v: number) => x0 + MARGIN.left + v * SIZE;
  const y = (v: number) => MARGIN.top + (1 - v) * SIZE;
  const out: string[] = [`<text x="${num(x(0.5))}" y="18" text-anchor="middle" font-weight="bold">${escapeXml(panel.title)}</text>`];
  for (let g = 0; g <= 5; g++) {
    const v = g / 5;
    out.push(
      `<line x1="${num(x(0))}" y1="${num(y(v))}" x2="${num(x(1))}" y2="${num(y(v))}" stroke="#e5e5e5"/>`,
      `<line x1="${num(x(v))}" y1="${num(y(0))}" x2="${num(x(v))}" y2="${num(y(1))}" stroke="#e5e5e5"/>`,
      `<text x="${num(x(0) - 6)}" y="${num(y(v) + 4)}" text-anchor="end" font-size="10">${v.toFixed(1)}</text>`,
      `<text x="${num(x(v))}" y="${num(y(0) + 14)}" text-anchor="middle" font-size="10">${v.toFixed(1)}</text>`,
    );
  }
  out.push(
    `<rect x="${num(x(0))}" y="${num(y(1))}" width="${SIZE}" height="${SIZE}" fill="none" stroke="#999"/>`,
    `<line x1="${num(x(0))}" y1="${num(y(0))}" x2="${num(x(1))}" y2="${num(y(1))}" stroke="#999" stroke-dasharray="4 3"/>`,
    `<text x="${num(x(0.5))}" y="${num(y(0) + 30)}" text-anchor="middle" font-size="11">probability of the top answer</text>`,
    `<text transform="translate(${num(x0 + 12)} ${num(y(0.5))}) rotate(-90)" text-anchor="middle" font-size="11">share right</text>`,
  );
  const barW = SIZE / 10 / Math.max(1, panel.series.length);
  panel.series.forEach((s, si) => {
    const total = s.bins.reduce((a, b) => a + b.n, 0) || 1;
    s.bins.forEach((b, bi) => {
      if (b.n === 0) return;
      const h = (Math.min(b.n / total, BAR_FULL) / BAR_FULL) * (SIZE * 0.2);
      out.push(
        `<rect x="${num(x(bi / 10) + si * barW)}" y="${num(y(0) - h)}" width="${num(barW)}" height="${num(h)}" fill="${s.colour}" fill-opacity="0.18"/>`,
      );
    });
    const filled = s.bins.filter((b) => b.n > 0);
    if (filled.length > 1) {
      out.push(
        `<polyline fill="none" stroke="${s.colour}" stroke-width="1.5" points="${filled.map((b) => `${num(x(b.confidence))},${num(y(b.accuracy))}`).join(' ')}"/>`,
      );
    }
    for (const b of filled) {
      const r = 2 + 6 * Math.sqrt(b.n / total);
      out.push(
        `<circle cx="${num(x(b.confidence))}" cy="${num(y(b.accuracy))}" r="${num(r)}" fill="${s.colour}" fill-opacity="0.75"><title>${escapeXml(
          `${s.name}: ${b.n} forecasts at ${b.confidence.toFixed(2)}, right ${(b.accuracy * 100).toFixed(0)}%`,
        )}</title></circle>`,
      );
    }
  });
  return out.join('\n');
}

/** The diagram: panels side by side, one legend for the series of the first panel. */
export function reliabilitySvg(panels: Panel[], caption: string): string {
  const width = Math.max(1, panels.length) * PANEL_W;
  const height = PANEL_H + LEGEND_H + 18;
  const legend = (panels[0]?.series ?? []).map((s, i) => {
    const lx = 20 + i * 220;
    return `<rect x="${lx}" y="${PANEL_H + 6}" width="12" height="12" fill="${s.colour}"/><text x="${lx + 18}" y="${PANEL_H + 16}" font-size="12">${escapeXml(s.name)}</text>`;
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    ...panels.map((p, i) => panelSvg(p, i * PANEL_W)),
    ...legend,
    `<text x="20" y="${height - 6}" font-size="11" fill="#555">${escapeXml(caption)}</text>`,
    '</svg>',
    '',
  ].join('\n');
}
