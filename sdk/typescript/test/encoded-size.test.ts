// The request cap's size (transport/encoded-size.ts) must equal the length of the binary
// encoding for every message of the contract, or the cap lets an oversized request through
// (or refuses one that fits). Compared with `toBinary` on random messages of every type.
import assert from "node:assert/strict";
import { promises as fs } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { create, ScalarType, toBinary, type DescField, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import { encodedSize } from "../src/transport/encoded-size.js";

async function contractMessages(): Promise<DescMessage[]> {
  const root = fileURLToPath(new URL("../src/gen/", import.meta.url));
  const files = (await fs.readdir(root, { recursive: true })).filter((name) => name.endsWith("_pb.js"));
  const messages = new Map<string, DescMessage>();
  for (const file of files) {
    const module = (await import(path.join(root, file))) as Record<string, unknown>;
    for (const value of Object.values(module)) {
      const candidate = value as Partial<DescMessage> | null;
      if (typeof candidate === "object" && candidate?.kind === "message" && candidate.typeName !== undefined) messages.set(candidate.typeName, candidate as DescMessage);
    }
  }
  return [...messages.values()];
}

/** A small seeded generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const TEXTS = ["", "a", "é", "€", "😀", "\ud800", "x".repeat(127), "y".repeat(128), "z".repeat(16384), "mixed é€😀 \udc00 text"];
const LENGTHS = [0, 1, 127, 128, 16383, 16384, 70000];
const INT32 = [0, 1, -1, 127, 128, 2 ** 31 - 1, -(2 ** 31), 16384, 2 ** 28];
const UINT32 = [0, 1, 127, 128, 2 ** 21, 2 ** 28, 2 ** 32 - 1];
const INT64 = [0n, 1n, -1n, 127n, 128n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 35n];
const UINT64 = [0n, 1n, 128n, 2n ** 64n - 1n, 2n ** 49n];
const DOUBLES = [0, -0, 1.5, Number.NaN, -1e300];

function scalar(type: ScalarType, pick: <T>(values: readonly T[]) => T): unknown {
  switch (type) {
    case ScalarType.STRING:
      return pick(TEXTS);
    case ScalarType.BYTES:
      return new Uint8Array(pick(LENGTHS));
    case ScalarType.BOOL:
      return pick([true, false]);
    case ScalarType.DOUBLE:
      return pick(DOUBLES);
    case ScalarType.FLOAT:
      return pick(DOUBLES.slice(0, 4));
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return pick(INT32);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return pick(UINT32);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return pick(INT64);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return pick(UINT64);
  }
}

function fill(schema: DescMessage, next: () => number, depth: number): MessageShape<DescMessage> {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)] as T;
  const message = create(schema) as Record<string, unknown>;
  const value = (field: DescField & { fieldKind: "scalar" | "enum" | "message" }): unknown =>
    field.fieldKind === "message"
      ? fill(field.message, next, depth + 1)
      : field.fieldKind === "enum"
        ? pick([...field.enum.values.map((v) => v.number), 99, -3])
        : scalar(field.scalar, pick);
  for (const field of schema.fields) {
    if (next() < 0.3) continue;
    switch (field.fieldKind) {
      case "scalar":
      case "enum":
      case "message":
        if (field.fieldKind === "message" && depth > 2) continue;
        if (field.oneof !== undefined) message[field.oneof.localName] = { case: field.localName, value: value(field) };
        else message[field.localName] = value(field);
        break;
      case "list": {
        if (field.listKind === "message" && depth > 2) continue;
        const count = pick([0, 1, 3]);
        message[field.localName] = Array.from({ length: count }, () =>
          field.listKind === "message" ? fill(field.message, next, depth + 1) : field.listKind === "enum" ? pick([0, 1, 99]) : scalar(field.scalar, pick),
        );
        break;
      }
      case "map":
        break;
    }
  }
  if (next() < 0.2) message["$unknown"] = [{ no: pick([20, 1000, 2 ** 28]), wireType: WireType.Varint, data: new Uint8Array([1]) }];
  return message as MessageShape<DescMessage>;
}

describe("encodedSize", () => {
  it("equals the length of the binary encoding for random messages of every contract type", async () => {
    const messages = await contractMessages();
    assert.ok(messages.length >= 20, `only ${messages.length} message types found`);
    let compared = 0;
    for (const schema of messages) {
      const next = random(schema.typeName.length * 7919);
      assert.equal(encodedSize(schema, create(schema)), toBinary(schema, create(schema)).length, `${schema.typeName} (empty)`);
      for (let round = 0; round < 60; round += 1) {
        const message = fill(schema, next, 0);
        assert.equal(encodedSize(schema, message), toBinary(schema, message).length, `${schema.typeName}, round ${round}`);
        compared += 1;
      }
    }
    assert.ok(compared > 1000);
  });
});
