/**
 * A strict JSON reader for the small documents the SDK trusts least (the descriptor and
 * the sidecar's bootstrap reply). `JSON.parse` keeps the last of two duplicate members and
 * cannot tell `1` from `1.0`; this reader refuses duplicates and reports non-integer
 * numbers as {@link JsonFloat}, so an integer field never accepts `1.5` or `1e3`.
 */

/** A number written with a fraction or an exponent. */
export class JsonFloat {
  constructor(readonly value: number) {}
}

export type JsonValue = null | boolean | number | JsonFloat | string | JsonValue[] | { [key: string]: JsonValue };

/** Why a document was refused; the caller wraps it in its own typed error. */
export class StrictJsonError extends Error {}

const MAX_DEPTH = 32;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

class Reader {
  pos = 0;
  constructor(private readonly text: string) {}

  fail(what: string): never {
    throw new StrictJsonError(`${what} at offset ${this.pos}`);
  }

  skipSpace(): void {
    while (this.pos < this.text.length) {
      const c = this.text.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      this.pos += 1;
    }
  }

  value(depth: number): JsonValue {
    if (depth > MAX_DEPTH) this.fail("nesting too deep");
    this.skipSpace();
    const c = this.text[this.pos];
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === '"') return this.string();
    if (this.text.startsWith("true", this.pos)) return this.literal(4, true);
    if (this.text.startsWith("false", this.pos)) return this.literal(5, false);
    if (this.text.startsWith("null", this.pos)) return this.literal(4, null);
    return this.number();
  }

  literal<T>(length: number, value: T): T {
    this.pos += length;
    return value;
  }

  number(): number | JsonFloat {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (match === null) this.fail("unexpected character");
    this.pos += match[0].length;
    const value = Number(match[0]);
    if (!Number.isFinite(value)) this.fail("number out of range");
    if (match[1] !== undefined || match[2] !== undefined) return new JsonFloat(value);
    if (!Number.isSafeInteger(value)) return new JsonFloat(value);
    return value;
  }

  string(): string {
    this.pos += 1;
    let out = "";
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) this.fail("unterminated string");
      this.pos += 1;
      if (c === '"') return out;
      if (c === "\\") {
        const e = this.text[this.pos];
        this.pos += 1;
        const simple: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
        if (e !== undefined && e in simple) out += simple[e] ?? "";
        else if (e === "u") {
          const hex = this.text.slice(this.pos, this.pos + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail("bad unicode escape");
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 4;
        } else this.fail("bad escape");
      } else if (c.charCodeAt(0) < 0x20) {
        this.fail("control character in string");
      } else out += c;
    }
  }

  array(depth: number): JsonValue[] {
    this.pos += 1;
    const out: JsonValue[] = [];
    this.skipSpace();
    if (this.text[this.pos] === "]") {
      this.pos += 1;
      return out;
    }
    for (;;) {
      out.push(this.value(depth + 1));
      this.skipSpace();
      const c = this.text[this.pos];
      this.pos += 1;
      if (c === "]") return out;
      if (c !== ",") this.fail("expected , or ]");
    }
  }

  object(depth: number): { [key: string]: JsonValue } {
    this.pos += 1;
    const out: { [key: string]: JsonValue } = Object.create(null) as { [key: string]: JsonValue };
    this.skipSpace();
    if (this.text[this.pos] === "}") {
      this.pos += 1;
      return out;
    }
    for (;;) {
      this.skipSpace();
      if (this.text[this.pos] !== '"') this.fail("expected a member name");
      const key = this.string();
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        throw new StrictJsonError(`duplicate member "${key.slice(0, 64)}"`);
      }
      this.skipSpace();
      if (this.text[this.pos] !== ":") this.fail("expected :");
      this.pos += 1;
      out[key] = this.value(depth + 1);
      this.skipSpace();
      const c = this.text[this.pos];
      this.pos += 1;
      if (c === "}") return out;
      if (c !== ",") this.fail("expected , or }");
    }
  }
}

const DECODER = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Decodes UTF-8 bytes holding exactly one JSON object, with nothing after it. */
export function parseStrictObject(bytes: Uint8Array): { [key: string]: JsonValue } {
  let text: string;
  try {
    text = DECODER.decode(bytes);
  } catch {
    throw new StrictJsonError("not valid UTF-8");
  }
  const reader = new Reader(text);
  const value = reader.value(0);
  reader.skipSpace();
  if (reader.pos !== text.length) reader.fail("trailing data");
  if (value === null || typeof value !== "object" || Array.isArray(value) || value instanceof JsonFloat) {
    throw new StrictJsonError("the document must be a JSON object");
  }
  return value;
}
