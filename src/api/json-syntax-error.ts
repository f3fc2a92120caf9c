// Where and why a JSON text fails to parse, in the words of Python's json module (which FastAPI
// reports), since V8's messages do not always carry a position. Only a body JSON.parse refused
// pays for this second, slower reading.
import { MAX_JSON_DEPTH, TOO_DEEP } from './json-guard.js';

export interface JsonSyntaxError {
  /** The character offset Python would name. */
  pos: number;
  reason: string;
}

/** Finds where and why JSON.parse failed on `text`. */
export function locateJsonError(text: string): JsonSyntaxError {
  const scanner = new JsonScanner(text);
  try {
    scanner.value();
    scanner.skipWhitespace();
    if (scanner.pos < text.length) return { pos: scanner.pos, reason: 'Extra data' };
    // JSON.parse refused something the scanner accepted: blame the start.
    return { pos: 0, reason: 'Expecting value' };
  } catch (err) {
    if (err instanceof Fault) return { pos: err.pos, reason: err.reason };
    throw err;
  }
}

/** The first fault met; thrown out of any depth of the scan and caught at its entry. */
class Fault {
  constructor(
    readonly pos: number,
    readonly reason: string,
  ) {}
}

/** A recursive-descent reader of JSON's grammar that stops at the first fault, one method a production. */
class JsonScanner {
  pos = 0;
  // Nesting is bounded before recursing, as for a body that parses, so a deep malformed body
  // cannot exhaust the stack of the very scanner that explains it.
  private depth = 0;

  constructor(private readonly text: string) {}

  skipWhitespace(): void {
    while (this.pos < this.text.length && ' \t\n\r'.includes(this.text[this.pos]!)) this.pos++;
  }

  value(): void {
    this.skipWhitespace();
    const c = this.text[this.pos];
    if ((c === '{' || c === '[') && this.depth === MAX_JSON_DEPTH) throw this.fault(TOO_DEEP);
    this.depth++;
    if (c === '{') this.object();
    else if (c === '[') this.array();
    else if (c === '"') this.string();
    else this.literal();
    this.depth--;
  }

  private object(): void {
    this.pos++;
    this.skipWhitespace();
    if (this.take('}')) return;
    do {
      this.skipWhitespace();
      if (this.text[this.pos] !== '"') throw this.fault('Expecting property name enclosed in double quotes');
      this.string();
      this.skipWhitespace();
      if (!this.take(':')) throw this.fault("Expecting ':' delimiter");
      this.value();
    } while (this.another('}'));
  }

  private array(): void {
    this.pos++;
    this.skipWhitespace();
    if (this.take(']')) return;
    do this.value();
    while (this.another(']'));
  }

  /** After a member or an element: a comma asks for another, `close` ends the container. */
  private another(close: '}' | ']'): boolean {
    this.skipWhitespace();
    if (this.take(close)) return false;
    if (!this.take(',')) throw this.fault("Expecting ',' delimiter");
    return true;
  }

  private string(): void {
    const start = this.pos;
    this.pos++;
    for (;;) {
      if (this.pos >= this.text.length) throw this.fault('Unterminated string starting at', start);
      const c = this.text[this.pos]!;
      if (c === '"') {
        this.pos++;
        return;
      }
      if (c < ' ') throw this.fault('Invalid control character at');
      if (c === '\\') this.escape();
      else this.pos++;
    }
  }

  private escape(): void {
    const e = this.text[this.pos + 1];
    if (e === 'u') {
      if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.pos + 2, this.pos + 6))) throw this.fault('Invalid \\uXXXX escape');
      this.pos += 6;
      return;
    }
    if (e === undefined || !'"\\/bfnrt'.includes(e)) throw this.fault('Invalid \\escape');
    this.pos += 2;
  }

  /** true, false, null or a number. */
  private literal(): void {
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(this.text.slice(this.pos));
    if (!literal) throw this.fault('Expecting value');
    this.pos += literal[0].length;
  }

  /** Consumes `c` when it is next. */
  private take(c: string): boolean {
    if (this.text[this.pos] !== c) return false;
    this.pos++;
    return true;
  }

  private fault(reason: string, pos = this.pos): Fault {
    return new Fault(pos, reason);
  }
}
