/**
 * The length of a message's binary encoding, computed without encoding it. The request cap
 * (C7) measures every request message; encoding each one only to count its bytes doubled
 * the serialization work of an upload (each chunk copied into a throw-away buffer).
 *
 * It follows `toBinary` of @bufbuild/protobuf field by field (the same presence rules, the
 * same wire sizes); a shape it does not cover (wrapper or JSON types, groups) is measured
 * by encoding it. The test `encoded-size.test.ts` compares both on every contract message.
 */
import { ScalarType, toBinary, type DescField, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/** proto3's implicit presence (google.protobuf.FeatureSet.FieldPresence.IMPLICIT). */
const IMPLICIT = 2;
/** Message types sized as ordinary messages; other well-known types have a local form. */
const PLAIN_WELL_KNOWN = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration"]);

class Unsupported extends Error {}

export function encodedSize<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): number {
  try {
    return messageSize(schema, message);
  } catch (error) {
    if (error instanceof Unsupported) return toBinary(schema, message).length;
    throw error;
  }
}

function varint32(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

function varint64(value: bigint): number {
  let size = 1;
  for (let rest = BigInt.asUintN(64, value); rest >= 0x80n; rest >>= 7n) size += 1;
  return size;
}

const tag = (field: number): number => varint32((field << 3) >>> 0);
const delimited = (length: number): number => varint32(length) + length;

function int64(value: unknown): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "string" || typeof value === "number") return BigInt(value);
  throw new Unsupported();
}

/** The bytes of one scalar value after its tag. */
function scalarSize(type: ScalarType, value: unknown): number {
  switch (type) {
    case ScalarType.STRING:
      if (typeof value !== "string") throw new Unsupported();
      return delimited(Buffer.byteLength(value, "utf8"));
    case ScalarType.BYTES:
      if (!(value instanceof Uint8Array)) throw new Unsupported();
      return delimited(value.byteLength);
    case ScalarType.BOOL:
      return 1;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return 8;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return 4;
    case ScalarType.INT32:
      if (typeof value !== "number") throw new Unsupported();
      // A negative int32 is sign-extended to ten bytes.
      return value < 0 ? 10 : varint32(value);
    case ScalarType.UINT32:
      if (typeof value !== "number") throw new Unsupported();
      return varint32(value >>> 0);
    case ScalarType.SINT32:
      if (typeof value !== "number") throw new Unsupported();
      return varint32(((value << 1) ^ (value >> 31)) >>> 0);
    case ScalarType.INT64:
    case ScalarType.UINT64:
      return varint64(int64(value));
    case ScalarType.SINT64: {
      const v = BigInt.asIntN(64, int64(value));
      return varint64((v << 1n) ^ (v >> 63n));
    }
  }
}

/** The zero value of a field without explicit presence is not written. */
function isZero(field: DescField & { fieldKind: "scalar" | "enum" }, value: unknown): boolean {
  if (field.fieldKind === "enum") return value === field.enum.values[0]?.number;
  switch (field.scalar) {
    case ScalarType.BOOL:
      return value === false;
    case ScalarType.STRING:
      return value === "";
    case ScalarType.BYTES:
      return value instanceof Uint8Array && value.byteLength === 0;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return Object.is(value, 0);
    default:
      // Loose on purpose, as the encoder: 0, 0n and "0" are all zero.
      return (value as number) == 0;
  }
}

/** A message value: its tag and its length-prefixed fields. */
function childSize(field: { readonly number: number; readonly delimitedEncoding: boolean }, message: DescMessage, value: unknown): number {
  if (field.delimitedEncoding || (message.typeName.startsWith("google.protobuf.") && !PLAIN_WELL_KNOWN.has(message.typeName))) throw new Unsupported();
  if (typeof value !== "object" || value === null) throw new Unsupported();
  return tag(field.number) + delimited(messageSize(message, value as Record<string, unknown>));
}

function valueSize(field: DescField & { fieldKind: "scalar" | "enum" | "message" }, value: unknown): number {
  if (field.fieldKind === "message") return childSize(field, field.message, value);
  return tag(field.number) + scalarSize(field.fieldKind === "enum" ? ScalarType.INT32 : field.scalar, value);
}

function fieldSize(field: DescField, message: Record<string, unknown>): number {
  switch (field.fieldKind) {
    case "scalar":
    case "enum":
    case "message": {
      if (field.oneof !== undefined) {
        const oneof = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
        return oneof?.case === field.localName ? valueSize(field, oneof.value) : 0;
      }
      const value = message[field.localName];
      if ((field.presence as number) !== IMPLICIT) {
        return value !== undefined && Object.prototype.hasOwnProperty.call(message, field.localName) ? valueSize(field, value) : 0;
      }
      if (field.fieldKind === "message") throw new Unsupported();
      return isZero(field, value) ? 0 : valueSize(field, value);
    }
    case "list": {
      const items = message[field.localName];
      if (!Array.isArray(items)) throw new Unsupported();
      if (items.length === 0) return 0;
      if (field.listKind === "message") return items.reduce((sum: number, item: unknown) => sum + childSize(field, field.message, item), 0);
      const type = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
      const values = items.reduce((sum: number, item: unknown) => sum + scalarSize(type, item), 0);
      return field.packed ? tag(field.number) + delimited(values) : values + items.length * tag(field.number);
    }
    case "map":
      // The contract has no maps; their keys are converted by the encoder.
      throw new Unsupported();
  }
}

function messageSize(schema: DescMessage, message: Record<string, unknown>): number {
  if (message["$typeName"] !== schema.typeName) throw new Unsupported();
  let size = 0;
  for (const field of schema.fields) size += fieldSize(field, message);
  const unknown = message["$unknown"] as { no: number; data: Uint8Array }[] | undefined;
  if (unknown !== undefined) for (const entry of unknown) size += tag(entry.no) + entry.data.byteLength;
  return size;
}
