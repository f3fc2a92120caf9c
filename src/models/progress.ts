// Download progress: bytes, rate and time left. On a terminal one line is rewritten in place a few
// times a second; otherwise (a log, CI, systemd) a quiet line at every tenth of the file.

export interface ProgressSink {
  /** Rewrites the terminal line; absent when output is not a terminal. */
  redraw?: (line: string) => void;
  /** Writes a whole line. */
  log: (line: string) => void;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1 << 30) return `${(bytes / (1 << 30)).toFixed(2)} GiB`;
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(1)} MiB`;
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return '?';
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`;
  return `${Math.round(s)}s`;
}

export interface Progress {
  /** Bytes of the file now on disk (resumed ones included). */
  update(done: number): void;
  finish(): void;
}

/** Progress of one file of `total` bytes (null: unknown), `resumed` of them already on disk. */
export function createProgress(label: string, total: number | null, resumed: number, sink: ProgressSink, now: () => number = Date.now): Progress {
  const started = now();
  let lastDraw = 0;
  let lastTenth = total ? Math.floor((resumed / total) * 10) : 0;
  let latest = resumed;
  const line = (done: number): string => {
    const seconds = Math.max((now() - started) / 1000, 1e-3);
    const rate = (done - resumed) / seconds;
    const eta = total && rate > 0 ? formatSeconds((total - done) / rate) : '?';
    const of = total ? ` of ${formatBytes(total)} (${Math.floor((done / total) * 100)}%)` : '';
    return `${label}: ${formatBytes(done)}${of}, ${formatBytes(rate)}/s, ETA ${eta}`;
  };
  return {
    update(done) {
      latest = done;
      if (sink.redraw) {
        if (now() - lastDraw < 200) return;
        lastDraw = now();
        sink.redraw(line(done));
      } else if (total) {
        const tenth = Math.floor((done / total) * 10);
        if (tenth > lastTenth && tenth < 10) sink.log(line(done));
        lastTenth = Math.max(lastTenth, tenth);
      }
    },
    finish() {
      if (sink.redraw) sink.redraw(`${line(latest)}\n`);
    },
  };
}

/** The sink of a CLI: stderr, redrawn in place when it is a terminal. */
export function terminalSink(log: (line: string) => void, stream: NodeJS.WriteStream = process.stderr): ProgressSink {
  return stream.isTTY ? { log, redraw: (l) => void stream.write(`\r\x1b[K${l}`) } : { log };
}
