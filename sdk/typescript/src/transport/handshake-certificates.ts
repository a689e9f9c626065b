/**
 * Reads the server's TLS 1.3 Certificate message from a recorded handshake.
 *
 * Node shows a client only the certificates it could link to the leaf, so a server that
 * sends the pinned leaf plus an unrelated certificate looks like a one-certificate chain.
 * To see what was really sent, the SDK records the raw bytes the server wrote, takes the
 * server handshake traffic secret from the socket's `keylog` event, derives the record
 * key and IV (RFC 8446 section 7.3), decrypts the encrypted handshake records and parses
 * the Certificate message (section 4.4.2). No I/O happens here.
 */
import { createDecipheriv, createHmac } from "node:crypto";

/** What the server presented: every certificate entry's DER, in order. */
export interface PresentedChain {
  readonly certificates: readonly Buffer[];
}

interface Suite {
  readonly cipher: "aes-128-gcm" | "aes-256-gcm" | "chacha20-poly1305";
  readonly hash: "sha256" | "sha384";
  readonly keyLength: number;
}

const SUITES: Readonly<Record<string, Suite>> = {
  TLS_AES_128_GCM_SHA256: { cipher: "aes-128-gcm", hash: "sha256", keyLength: 16 },
  TLS_AES_256_GCM_SHA384: { cipher: "aes-256-gcm", hash: "sha384", keyLength: 32 },
  TLS_CHACHA20_POLY1305_SHA256: { cipher: "chacha20-poly1305", hash: "sha256", keyLength: 32 },
};

const RECORD_HANDSHAKE = 22;
const RECORD_CHANGE_CIPHER_SPEC = 20;
const RECORD_APPLICATION_DATA = 23;
const HANDSHAKE_CERTIFICATE = 11;
const TAG_LENGTH = 16;

/** Why the recorded handshake could not be read. */
export class HandshakeReadError extends Error {}

/** HKDF-Expand-Label with an empty context (RFC 8446 section 7.1). */
export function hkdfExpandLabel(hash: string, secret: Buffer, label: string, length: number): Buffer {
  const fullLabel = Buffer.from(`tls13 ${label}`, "ascii");
  const info = Buffer.concat([Buffer.from([length >> 8, length & 0xff, fullLabel.length]), fullLabel, Buffer.from([0])]);
  const blocks: Buffer[] = [];
  let previous = Buffer.alloc(0);
  for (let i = 1; Buffer.concat(blocks).length < length; i += 1) {
    previous = createHmac(hash, secret).update(Buffer.concat([previous, info, Buffer.from([i])])).digest();
    blocks.push(previous);
  }
  return Buffer.concat(blocks).subarray(0, length);
}

/** Finds `SERVER_HANDSHAKE_TRAFFIC_SECRET` among NSS key log lines. */
export function serverHandshakeSecret(keylogLines: readonly Buffer[]): Buffer | null {
  for (const line of keylogLines) {
    const parts = line.toString("latin1").trim().split(" ");
    if (parts.length === 3 && parts[0] === "SERVER_HANDSHAKE_TRAFFIC_SECRET" && /^[0-9a-f]+$/i.test(parts[2] ?? "")) {
      return Buffer.from(parts[2] ?? "", "hex");
    }
  }
  return null;
}

function decryptRecord(suite: Suite, key: Buffer, iv: Buffer, sequence: number, header: Buffer, body: Buffer): Buffer {
  if (body.length < TAG_LENGTH + 1) throw new HandshakeReadError("an encrypted record is too short");
  const nonce = Buffer.from(iv);
  for (let i = 0, s = sequence; i < 8; i += 1, s = Math.floor(s / 256)) {
    nonce[nonce.length - 1 - i] = (nonce[nonce.length - 1 - i] ?? 0) ^ (s & 0xff);
  }
  const decipher =
    suite.cipher === "chacha20-poly1305"
      ? createDecipheriv(suite.cipher, key, nonce, { authTagLength: TAG_LENGTH })
      : createDecipheriv(suite.cipher, key, nonce);
  decipher.setAAD(header, { plaintextLength: body.length - TAG_LENGTH });
  decipher.setAuthTag(body.subarray(body.length - TAG_LENGTH));
  try {
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_LENGTH)), decipher.final()]);
  } catch {
    throw new HandshakeReadError("an encrypted handshake record failed authentication");
  }
}

function parseCertificateMessage(body: Buffer): Buffer[] {
  if (body.length < 4) throw new HandshakeReadError("the Certificate message is truncated");
  const contextLength = body[0] ?? 0;
  let pos = 1 + contextLength;
  const listLength = body.readUIntBE(pos, 3);
  pos += 3;
  const end = pos + listLength;
  if (end !== body.length) throw new HandshakeReadError("the Certificate message length is inconsistent");
  const certificates: Buffer[] = [];
  while (pos < end) {
    if (pos + 3 > end) throw new HandshakeReadError("a certificate entry is truncated");
    const length = body.readUIntBE(pos, 3);
    pos += 3;
    if (length === 0 || pos + length + 2 > end) throw new HandshakeReadError("a certificate entry is truncated");
    certificates.push(Buffer.from(body.subarray(pos, pos + length)));
    pos += length;
    const extensions = body.readUInt16BE(pos);
    pos += 2 + extensions;
  }
  if (pos !== end) throw new HandshakeReadError("the certificate list overruns its message");
  return certificates;
}

/**
 * Returns the server's certificate list from the bytes it sent (`serverBytes`), given the
 * negotiated suite (its IANA name) and the key log lines of the same connection.
 */
export function readPresentedChain(serverBytes: Buffer, suiteName: string, keylogLines: readonly Buffer[]): PresentedChain {
  const suite = SUITES[suiteName];
  if (suite === undefined) throw new HandshakeReadError(`unsupported TLS 1.3 cipher suite ${suiteName}`);
  const secret = serverHandshakeSecret(keylogLines);
  if (secret === null) throw new HandshakeReadError("no server handshake traffic secret was logged");
  const key = hkdfExpandLabel(suite.hash, secret, "key", suite.keyLength);
  const iv = hkdfExpandLabel(suite.hash, secret, "iv", 12);
  let handshake = Buffer.alloc(0);
  let sequence = 0;
  let pos = 0;
  while (pos + 5 <= serverBytes.length) {
    const type = serverBytes[pos] ?? 0;
    const length = serverBytes.readUInt16BE(pos + 3);
    if (pos + 5 + length > serverBytes.length) break;
    const header = serverBytes.subarray(pos, pos + 5);
    const body = serverBytes.subarray(pos + 5, pos + 5 + length);
    pos += 5 + length;
    if (type === RECORD_HANDSHAKE || type === RECORD_CHANGE_CIPHER_SPEC) continue;
    if (type !== RECORD_APPLICATION_DATA) throw new HandshakeReadError(`unexpected TLS record type ${type}`);
    const plain = decryptRecord(suite, key, iv, sequence, header, body);
    sequence += 1;
    let last = plain.length - 1;
    while (last >= 0 && plain[last] === 0) last -= 1;
    if (last < 0 || plain[last] !== RECORD_HANDSHAKE) throw new HandshakeReadError("an encrypted record is not a handshake record");
    handshake = Buffer.concat([handshake, plain.subarray(0, last)]);
    let offset = 0;
    while (offset + 4 <= handshake.length) {
      const messageType = handshake[offset] ?? 0;
      const messageLength = handshake.readUIntBE(offset + 1, 3);
      if (offset + 4 + messageLength > handshake.length) break;
      if (messageType === HANDSHAKE_CERTIFICATE) {
        return { certificates: parseCertificateMessage(handshake.subarray(offset + 4, offset + 4 + messageLength)) };
      }
      offset += 4 + messageLength;
    }
  }
  throw new HandshakeReadError("the handshake ended before the server's Certificate message");
}
