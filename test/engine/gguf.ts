// A minimal GGUF metadata reader, independent of llama.cpp, so the facts test compares the engine's
// answers with what the file itself says. Arrays are skipped except for their length.
import fs from 'node:fs';

export type GgufValue = string | number | bigint | boolean | { arrayType: number; length: number };

const SCALAR_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;

class Cursor {
  private buf = Buffer.alloc(0);
  private bufStart = 0;
  pos = 0;
  constructor(private readonly fd: number) {}

  private ensure(n: number): void {
    if (this.pos >= this.bufStart && this.pos + n <= this.bufStart + this.buf.length) return;
    const size = Math.max(n, 1 << 20);
    this.buf = Buffer.alloc(size);
    const got = fs.readSync(this.fd, this.buf, 0, size, this.pos);
    if (got < n) throw new Error(`GGUF ended early at byte ${this.pos}`);
    this.buf = this.buf.subarray(0, got);
    this.bufStart = this.pos;
  }

  bytes(n: number): Buffer {
    this.ensure(n);
    const at = this.pos - this.bufStart;
    this.pos += n;
    return this.buf.subarray(at, at + n);
  }

  u32(): number {
    return this.bytes(4).readUInt32LE(0);
  }

  u64(): number {
    return Number(this.bytes(8).readBigUInt64LE(0));
  }

  string(): string {
    return this.bytes(this.u64()).toString('utf8');
  }

  scalar(type: number): GgufValue {
    const size = SCALAR_SIZES[type];
    if (size === undefined) throw new Error(`unknown GGUF value type ${type}`);
    const b = this.bytes(size);
    switch (type) {
      case 0:
        return b.readUInt8(0);
      case 1:
        return b.readInt8(0);
      case 2:
        return b.readUInt16LE(0);
      case 3:
        return b.readInt16LE(0);
      case 4:
        return b.readUInt32LE(0);
      case 5:
        return b.readInt32LE(0);
      case 6:
        return b.readFloatLE(0);
      case 7:
        return b.readUInt8(0) !== 0;
      case 10:
        return b.readBigUInt64LE(0);
      case 11:
        return b.readBigInt64LE(0);
      default:
        return b.readDoubleLE(0);
    }
  }

  value(type: number): GgufValue {
    if (type === STRING) return this.string();
    if (type !== ARRAY) return this.scalar(type);
    const arrayType = this.u32();
    const length = this.u64();
    for (let i = 0; i < length; i++) this.value(arrayType);
    return { arrayType, length };
  }
}

export interface GgufHeader {
  version: number;
  tensorCount: number;
  metadata: Map<string, GgufValue>;
}

export function readGgufHeader(file: string): GgufHeader {
  const fd = fs.openSync(file, 'r');
  try {
    const c = new Cursor(fd);
    const magic = c.bytes(4).toString('latin1');
    if (magic !== 'GGUF') throw new Error(`${file} is not a GGUF file (magic ${JSON.stringify(magic)})`);
    const version = c.u32();
    const tensorCount = c.u64();
    const kvCount = c.u64();
    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < kvCount; i++) {
      const key = c.string();
      metadata.set(key, c.value(c.u32()));
    }
    return { version, tensorCount, metadata };
  } finally {
    fs.closeSync(fd);
  }
}
