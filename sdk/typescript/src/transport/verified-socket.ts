/**
 * Every TLS connection the SDK makes is opened here, pre-flight and gRPC alike, reconnects
 * included (C4): TLS 1.3 only, the pinned leaf as the only trust anchor, the presented
 * leaf's SHA-256 equal to the pin, no issuer linked to it, and (from the recorded
 * handshake) exactly one certificate in the server's Certificate message. The checks run
 * inside the handshake and in the first `secureConnect` listener, before the HTTP/2 layer
 * can write a byte, so a connection that fails them never carries the bearer.
 */
import net from "node:net";
import { Duplex } from "node:stream";
import tls from "node:tls";
import { PinMismatchError, TlsPolicyError, TrustError } from "../errors.js";
import { sha256Hex, type LeafCertificate } from "./certificate.js";
import type { Endpoint } from "./endpoint.js";
import { HandshakeReadError, readPresentedChain } from "./handshake-certificates.js";

/** What a connection must prove. */
export interface PinnedTarget {
  readonly endpoint: Endpoint;
  readonly certificate: LeafCertificate;
  readonly pin: string;
}

/** Bytes the server wrote, kept until the handshake has been checked. */
class RecordingDuplex extends Duplex {
  private recorded: Buffer[] = [];
  private recordedBytes = 0;
  private recording = true;

  constructor(private readonly socket: net.Socket) {
    super();
    socket.on("data", (chunk: Buffer) => {
      if (this.recording) {
        this.recorded.push(chunk);
        this.recordedBytes += chunk.length;
        // A handshake is a few KiB; a server that keeps talking is refused.
        if (this.recordedBytes > 256 * 1024) {
          this.destroy(new TlsPolicyError("the server sent too much data during the handshake", { reason: "TLS_HANDSHAKE" }));
          return;
        }
      }
      if (!this.push(chunk)) socket.pause();
    });
    socket.on("end", () => this.push(null));
    socket.on("error", (error) => this.destroy(error));
    socket.on("close", () => {
      if (!this.destroyed) this.destroy();
    });
  }

  /** What the server has sent so far (while still recording). */
  peekRecording(): Buffer {
    return Buffer.concat(this.recorded);
  }

  takeRecording(): Buffer {
    this.recording = false;
    const all = Buffer.concat(this.recorded);
    this.recorded = [];
    return all;
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.socket.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.socket.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.socket.destroy();
    callback(error);
  }
}

function identityCheck(target: PinnedTarget) {
  return (host: string, cert: tls.PeerCertificate): Error | undefined => {
    const standard = tls.checkServerIdentity(host, cert);
    if (standard !== undefined) {
      return new PinMismatchError("the server certificate does not name the endpoint address", { reason: "PIN_MISMATCH" });
    }
    if (sha256Hex(cert.raw) !== target.pin) {
      return new PinMismatchError("the server presented a certificate other than the pinned one", { reason: "PIN_MISMATCH" });
    }
    const issuer = (cert as tls.DetailedPeerCertificate).issuerCertificate as tls.DetailedPeerCertificate | undefined;
    if (issuer !== undefined && issuer !== cert && !issuer.raw.equals(cert.raw)) {
      return new TlsPolicyError("the server presented an issuer certificate with its leaf", { reason: "TLS_CHAIN" });
    }
    return undefined;
  };
}

/** Checks the recorded handshake; returns the error to fail the connection with, if any. */
export function checkPresentedChain(socket: tls.TLSSocket, recording: Buffer, keylog: readonly Buffer[], pin: string): TrustError | null {
  if (socket.getProtocol() !== "TLSv1.3") {
    return new TlsPolicyError("the server negotiated a TLS version other than 1.3", { reason: "TLS_VERSION" });
  }
  const suite = socket.getCipher().standardName;
  let certificates: readonly Buffer[];
  try {
    certificates = readPresentedChain(recording, suite, keylog).certificates;
  } catch (error) {
    const detail = error instanceof HandshakeReadError ? error.message : "unreadable handshake";
    return new TlsPolicyError(`the server's certificate list could not be verified: ${detail}`, { reason: "TLS_CHAIN" });
  }
  if (certificates.length !== 1) {
    return new TlsPolicyError(`the server presented ${certificates.length} certificates; exactly one (the pinned leaf) is allowed`, {
      reason: "TLS_CHAIN",
      metadata: { presented: String(certificates.length) },
    });
  }
  if (sha256Hex(certificates[0] ?? Buffer.alloc(0)) !== pin) {
    return new PinMismatchError("the server presented a certificate other than the pinned one", { reason: "PIN_MISMATCH" });
  }
  return null;
}

/** Where trust failures of connections opened in the background are reported. */
export type TrustFailureSink = (error: TrustError) => void;

/**
 * Opens one verified connection. The returned socket is usable at once (writes queue until
 * the handshake is done); it is destroyed with a {@link TrustError} if any check fails.
 */
export function openVerifiedSocket(
  target: PinnedTarget,
  options: { readonly alpn?: readonly string[]; readonly handshakeTimeoutMs: number; readonly onTrustFailure?: TrustFailureSink },
): tls.TLSSocket {
  const raw = net.connect({ host: target.endpoint.host, port: target.endpoint.port, noDelay: true });
  let tcpConnected = false;
  raw.once("connect", () => {
    tcpConnected = true;
  });
  const recorder = new RecordingDuplex(raw);
  const keylog: Buffer[] = [];
  const socket = tls.connect({
    socket: recorder,
    host: target.endpoint.host,
    ca: target.certificate.pem,
    minVersion: "TLSv1.3",
    maxVersion: "TLSv1.3",
    rejectUnauthorized: true,
    checkServerIdentity: identityCheck(target),
    ...(options.alpn !== undefined ? { ALPNProtocols: [...options.alpn] } : {}),
  });
  const timer = setTimeout(() => {
    socket.destroy(new TlsPolicyError("the TLS handshake did not finish in time", { reason: "TLS_HANDSHAKE_TIMEOUT" }));
  }, options.handshakeTimeoutMs);
  timer.unref();
  socket.on("keylog", (line: Buffer) => keylog.push(line));
  // The verdict is given before any listener hears of the connection: a socket that fails
  // never announces `secureConnect`, so the HTTP/2 layer never starts on it (destroying it
  // from inside a listener would pull the handle from under a session being set up).
  const emit = socket.emit.bind(socket);
  let verified = false;
  socket.emit = (event: string | symbol, ...args: unknown[]): boolean => {
    if (event === "secureConnect" && !verified) {
      verified = true;
      clearTimeout(timer);
      const failure = checkPresentedChain(socket, recorder.takeRecording(), keylog, target.pin);
      keylog.length = 0;
      if (failure !== null) {
        options.onTrustFailure?.(failure);
        process.nextTick(() => {
          socket.destroy(failure);
        });
        return false;
      }
    }
    return emit(event, ...args);
  };
  socket.once("error", (error: Error & { code?: unknown }) => {
    clearTimeout(timer);
    let trust = classifyHandshakeError(error);
    if (trust === null && !verified && tcpConnected) {
      // The server accepted the connection and then answered our TLS 1.3-only ClientHello
      // with an alert, a pre-1.3 ServerHello, or by closing it without a word (asyncio's
      // TLS servers drop the alert): all refusals of the TLS policy, never retried.
      trust =
        classifyServerBytes(recorder.peekRecording()) ??
        new TlsPolicyError("the server closed the connection instead of completing a TLS 1.3 handshake", { reason: "TLS_HANDSHAKE_REFUSED" });
    }
    if (trust !== null) options.onTrustFailure?.(trust);
  });
  socket.once("close", () => {
    clearTimeout(timer);
  });
  return socket;
}

const RECORD_ALERT = 21;
const ALERT_PROTOCOL_VERSION = 70;
const EXTENSION_SUPPORTED_VERSIONS = 0x002b;

/** True when a plaintext ServerHello selects TLS 1.3 through `supported_versions`. */
function serverHelloSelectsTls13(hello: Buffer): boolean {
  // type(1) length(3) legacy_version(2) random(32) session_id<1> cipher(2) compression(1) extensions<2>
  let pos = 4 + 2 + 32;
  if (pos >= hello.length) return false;
  pos += 1 + (hello[pos] ?? 0) + 2 + 1;
  if (pos + 2 > hello.length) return false;
  const end = Math.min(hello.length, pos + 2 + hello.readUInt16BE(pos));
  pos += 2;
  while (pos + 4 <= end) {
    const type = hello.readUInt16BE(pos);
    const length = hello.readUInt16BE(pos + 2);
    if (type === EXTENSION_SUPPORTED_VERSIONS && length === 2 && pos + 6 <= end) return hello.readUInt16BE(pos + 4) === 0x0304;
    pos += 4 + length;
  }
  return false;
}

/**
 * Classifies a handshake that failed before it completed from what the server sent: an
 * alert or a ServerHello that does not select TLS 1.3 is a TLS policy refusal; nothing at
 * all is a transport failure (`null`).
 */
export function classifyServerBytes(bytes: Buffer): TrustError | null {
  if (bytes.length < 6) return null;
  const type = bytes[0];
  if (type === RECORD_ALERT) {
    const description = bytes[6];
    return new TlsPolicyError(
      description === ALERT_PROTOCOL_VERSION ? "the server does not speak TLS 1.3" : `the server refused the TLS handshake (alert ${description ?? "?"})`,
      { reason: description === ALERT_PROTOCOL_VERSION ? "TLS_VERSION" : "TLS_HANDSHAKE" },
    );
  }
  if (type === 22 && bytes[5] === 2) {
    if (!serverHelloSelectsTls13(bytes.subarray(5))) {
      return new TlsPolicyError("the server negotiated a TLS version other than 1.3", { reason: "TLS_VERSION" });
    }
    return new TlsPolicyError("the TLS 1.3 handshake with the server failed", { reason: "TLS_HANDSHAKE" });
  }
  return new TlsPolicyError("the server answered the TLS handshake with something else", { reason: "TLS_HANDSHAKE" });
}

/** Turns OpenSSL's handshake refusals into the SDK's typed trust errors. */
export function classifyHandshakeError(error: Error & { code?: unknown }): TrustError | null {
  if (error instanceof TrustError) return error;
  // Errors passed to destroy() by other layers may carry numeric or no codes.
  const code = typeof error.code === "string" ? error.code : "";
  if (code.includes("PROTOCOL_VERSION") || code.includes("UNSUPPORTED_PROTOCOL") || code.includes("TLSV1_ALERT_PROTOCOL_VERSION")) {
    return new TlsPolicyError("the server does not speak TLS 1.3", { reason: "TLS_VERSION", cause: error });
  }
  if (code.includes("CERT") || code.includes("SELF_SIGNED") || code.includes("UNABLE_TO_VERIFY") || code.includes("UNABLE_TO_GET_ISSUER")) {
    return new PinMismatchError("the server presented a certificate other than the pinned one", { reason: "PIN_MISMATCH", cause: error });
  }
  return null;
}
