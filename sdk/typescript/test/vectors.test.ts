// The shared parser vectors of conformance/vectors/: every SDK must give the same verdicts.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { ColossusError, CredentialError, SidecarError, TrustError } from "../src/errors.js";
import { parseReply } from "../src/sidecar-bootstrap.js";
import { Bearer } from "../src/transport/bearer.js";
import { parseLeafCertificate } from "../src/transport/certificate.js";
import { parseDescriptor } from "../src/transport/descriptor.js";
import { parseEndpoint } from "../src/transport/endpoint.js";

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

const parsers: Readonly<Record<string, (v: Vector) => void>> = {
  descriptor: (v) => parseDescriptor(Buffer.from(String(v["text"]), "utf8")),
  endpoint: (v) => {
    const result = parseEndpoint(v["endpoint"]);
    if (typeof result === "string") throw new TrustError(result);
  },
  certificate: (v) => parseLeafCertificate(Buffer.from(String(v["pem"]), "utf8"), String(v["host"])),
  bearer: (v) => new Bearer(v["bearer"]),
  bootstrap_reply: (v) => parseReply(Buffer.from(String(v["text"]), "utf8")),
};

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
          try {
            parse?.(vector);
          } catch (error) {
            verdict = kindOf(error);
          }
          assert.equal(verdict, vector.expect, `${file}: ${vector.name}`);
        });
      }
    });
  }
});
