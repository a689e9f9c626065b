/**
 * A throw-away P-256 leaf certificate for the fake worker's loopback TLS listener, made on
 * the spot: self-signed, `CA=false`, an IP SAN for 127.0.0.1, valid for a month. Node can
 * sign but not build certificates, so the few DER structures are written here by hand.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";

/** A generated leaf: its PEM, its private key (PKCS#8 PEM) and its pin. */
export interface TestLeaf {
  readonly certPem: string;
  readonly keyPem: string;
  /** The pin: lower-case hex SHA-256 of the DER certificate. */
  readonly sha256: string;
}

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const seq = (...content: Buffer[]): Buffer => tlv(0x30, ...content);

function oid(dotted: string): Buffer {
  const parts = dotted.split(".").map(Number);
  const bytes: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const part of parts.slice(2)) {
    const base128: number[] = [];
    for (let v = part; ; v = Math.floor(v / 128)) {
      base128.unshift((v % 128) | (base128.length > 0 ? 0x80 : 0));
      if (v < 128) break;
    }
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

function utcTime(date: Date): Buffer {
  const two = (n: number): string => String(n).padStart(2, "0");
  const text = `${two(date.getUTCFullYear() % 100)}${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}${two(date.getUTCHours())}${two(date.getUTCMinutes())}${two(date.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(text, "ascii"));
}

const ECDSA_WITH_SHA256 = seq(oid("1.2.840.10045.4.3.2"));
const NAME = seq(tlv(0x31, seq(oid("2.5.4.3"), tlv(0x0c, Buffer.from("colossus-fake-worker", "utf8")))));
const DAY_MS = 24 * 60 * 60 * 1000;

/** Generates a fresh leaf; its `sha256` is the pin a client expects. */
export function makeTestLeaf(): TestLeaf {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive and non-zero
  const now = Date.now();
  const extensions = seq(
    // BasicConstraints, critical, CA=false (an empty sequence).
    seq(oid("2.5.29.19"), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq())),
    // SubjectAltName: iPAddress 127.0.0.1.
    seq(oid("2.5.29.17"), tlv(0x04, seq(tlv(0x87, Buffer.from([127, 0, 0, 1]))))),
  );
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // version 3
    tlv(0x02, serial),
    ECDSA_WITH_SHA256,
    NAME,
    seq(utcTime(new Date(now - DAY_MS)), utcTime(new Date(now + 30 * DAY_MS))),
    NAME,
    publicKey.export({ type: "spki", format: "der" }),
    tlv(0xa3, extensions),
  );
  const signature = sign("sha256", tbs, privateKey); // DER-encoded ECDSA signature
  const der = seq(tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.from([0]), signature));
  const body = der.toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n$/, "");
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    sha256: createHash("sha256").update(der).digest("hex"),
  };
}
