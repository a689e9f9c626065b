/**
 * Every TLS connection the SDK makes is opened here, pre-flight and gRPC alike, reconnects
 * included (C4): TLS 1.3 only, the pinned leaf as the only trust anchor, the presented
 * leaf's SHA-256 equal to the pin, no issuer linked to it, and (from the recorded
 * handshake) exactly one certificate in the server's Certificate message. The checks run
 * inside the handshake and in the first `secureConnect` listener, before the HTTP/2 layer
 * can write a byte, so a connection that fails them never carries the bearer.
 */
import net from "node:net";
import tls from "node:tls";
import { PinMismatchError, TlsPolicyError, TransportError, TrustError } from "../errors.js";
import { sha256Hex, type LeafCertificate } from "./certificate.js";
import type { Endpoint } from "./endpoint.js";
import { HandshakeReadError, readPresentedChain } from "./handshake-certificates.js";
import { RecordingDuplex } from "./recording-duplex.js";
import { classifyServerBytes } from "./server-bytes.js";
import { probeTlsVersion } from "./version-probe.js";

export { classifyServerBytes } from "./server-bytes.js";

/** What a connection must prove. */
export interface PinnedTarget {
  readonly endpoint: Endpoint;
  readonly certificate: LeafCertificate;
  readonly pin: string;
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
    socket.destroy(new TlsPolicyError("the TLS handshake did not finish in time", { reason: "TLS_HANDSHAKE" }));
  }, options.handshakeTimeoutMs);
  timer.unref();
  socket.on("keylog", (line: Buffer) => keylog.push(line));
  // The verdict is given before any listener hears of the connection: a socket that fails
  // never announces `secureConnect`, so the HTTP/2 layer never starts on it (destroying it
  // from inside a listener would pull the handle from under a session being set up).
  const emit = socket.emit.bind(socket);
  let verified = false;
  // While a version probe runs, the failed socket's `error` and `close` wait for its verdict,
  // so whoever maps the failure already knows whether it was a policy refusal.
  let held: [string | symbol, unknown[]][] | null = null;
  socket.emit = (event: string | symbol, ...args: unknown[]): boolean => {
    if (held !== null && (event === "error" || event === "close")) {
      held.push([event, args]);
      return true;
    }
    if (event === "secureConnect" && !verified) {
      verified = true;
      clearTimeout(timer);
      const failure = checkPresentedChain(socket, recorder.takeRecording(), keylog, target.pin) ?? checkAlpn(socket, options.alpn);
      keylog.length = 0;
      if (failure !== null) {
        options.onTrustFailure?.(failure);
        process.nextTick(() => {
          socket.destroy(failure);
        });
        return false;
      }
    }
    if (event === "error" && !verified) {
      clearTimeout(timer);
      const error = args[0] as Error & { code?: unknown };
      // The server accepted the connection and then refused our TLS 1.3-only ClientHello
      // with an alert or a pre-1.3 ServerHello: a refusal of the TLS policy, never retried.
      const trust = classifyHandshakeError(error) ?? (tcpConnected ? classifyServerBytes(recorder.peekRecording()) : null);
      if (trust !== null) {
        options.onTrustFailure?.(trust);
      } else if (tcpConnected) {
        // Closed or reset without a TLS byte: a listener that drops its alert, or a worker
        // that died mid-handshake. Only a probe can tell; until then the failure waits.
        held = [[event, args]];
        void probeTlsVersion(target.endpoint, target.certificate, options.handshakeTimeoutMs).then((refusal) => {
          if (refusal !== null) options.onTrustFailure?.(refusal);
          const pending = held ?? [];
          held = null;
          for (const [name, values] of pending) {
            // No refusal: the drop is a retryable transport failure (C4, S1), which the HTTP/2
            // layer would otherwise report as ABORTED and end a watch with.
            const dropped = name === "error" && refusal === null;
            emit(name, ...(dropped ? [new TransportError("the connection was closed before any TLS byte", { code: "UNAVAILABLE", cause: values[0] })] : values));
          }
        });
        return true;
      }
    }
    return emit(event, ...args);
  };
  socket.once("close", () => {
    clearTimeout(timer);
  });
  return socket;
}

/**
 * C4: a listener that presents the pinned leaf over TLS 1.3 but does not agree to one of the
 * protocols asked for through ALPN (HTTP/2) is refused before any request, and so before the
 * bearer exists, as in every SDK.
 */
function checkAlpn(socket: tls.TLSSocket, wanted: readonly string[] | undefined): TrustError | null {
  if (wanted === undefined) return null;
  const agreed = socket.alpnProtocol;
  if (typeof agreed === "string" && wanted.includes(agreed)) return null;
  return new TlsPolicyError(`the worker did not agree to ${wanted.join(" or ")} through ALPN`, { reason: "TLS_HANDSHAKE" });
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
