// The parser each kind of shared vector (conformance/vectors/) feeds: vectors.test.ts and
// the parsers_diff verdict program call exactly these, so both judge the same code.
import { DescriptorError } from "../../src/errors.js";
import { parseReply } from "../../src/sidecar-bootstrap.js";
import { Bearer } from "../../src/transport/bearer.js";
import { parseLeafCertificate } from "../../src/transport/certificate.js";
import { parseDescriptor } from "../../src/transport/descriptor.js";
import { parseEndpoint } from "../../src/transport/endpoint.js";

/** A vector's members (`text`, `pem`, `host`, `endpoint`, `bearer`, ...). */
export type VectorInput = Readonly<Record<string, unknown>>;

export const vectorParsers: Readonly<Record<string, (v: VectorInput) => void>> = {
  descriptor: (v) => parseDescriptor(Buffer.from(String(v["text"]), "utf8")),
  endpoint: (v) => {
    const result = parseEndpoint(v["endpoint"]);
    // The descriptor reader turns this string into the same error (descriptor.ts).
    if (typeof result === "string") throw new DescriptorError(result, { reason: "DESCRIPTOR_INVALID", metadata: { field: "endpoint" } });
  },
  certificate: (v) => parseLeafCertificate(Buffer.from(String(v["pem"]), "utf8"), String(v["host"])),
  bearer: (v) => new Bearer(v["bearer"]),
  bootstrap_reply: (v) => parseReply(Buffer.from(String(v["text"]), "utf8")),
};
