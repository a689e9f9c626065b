// The shared parser vectors of conformance/vectors/: every SDK must give the same verdicts.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ColossusError, CredentialError, SidecarError, TrustError } from "../src/errors.js";
import { vectorParsers as parsers } from "./helpers/vector-parsers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const vectorsDir = path.resolve(here, "../../../../conformance/vectors");

interface Vector {
  readonly name: string;
  readonly expect: string;
  readonly [key: string]: unknown;
}

function kindOf(error: unknown): string {
  if (error instanceof TrustError) return "trust";
  if (error instanceof CredentialError) return "credential";
  if (error instanceof SidecarError) return "sidecar";
  if (error instanceof ColossusError) return `other:${error.name}`;
  throw error;
}


const files = readdirSync(vectorsDir).filter((f) => f.endsWith(".json")).sort();

describe("shared parser vectors", () => {
  it("finds the vector files", () => {
    assert.ok(files.length >= 5, `expected vector files in ${vectorsDir}`);
  });
  for (const file of files) {
    const data = JSON.parse(readFileSync(path.join(vectorsDir, file), "utf8")) as { kind: string; vectors: Vector[] };
    const parse = parsers[data.kind];
    describe(file, () => {
      it("has a parser for its kind", () => {
        assert.ok(parse, `no parser for kind ${data.kind}`);
      });
      for (const vector of data.vectors) {
        it(vector.name, () => {
          let verdict = "accept";
          let reason: string | null = null;
          let code: string | null = null;
          try {
            parse?.(vector);
          } catch (error) {
            verdict = kindOf(error);
            if (error instanceof ColossusError) ({ reason, code } = error);
          }
          assert.equal(verdict, vector.expect, `${file}: ${vector.name}`);
          // The same local reason in every SDK (docs/requirements.md, S9), and no status code.
          if (verdict !== "accept") {
            assert.equal(reason, vector["reason"], `${file}: ${vector.name}: reason`);
            assert.equal(code, null, `${file}: ${vector.name}: code`);
          }
        });
      }
    });
  }
});
