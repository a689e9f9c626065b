/**
 * Tells a TLS policy refusal from a dead listener when a handshake ended without a single
 * byte from the server. Some TLS servers (Python's asyncio among them) drop the alert they
 * owe a client whose versions they do not support, so a TLS 1.2-only listener and a worker
 * that crashed mid-handshake look the same on the failed connection. A second, throwaway
 * connection asks the listener which version it speaks: its ClientHello offers TLS 1.2 as
 * well as 1.3, and the connection is dropped as soon as the server's first record arrives,
 * before any certificate is read, so it never completes a handshake and never carries
 * application data (no bearer).
 */
import net from "node:net";
import tls from "node:tls";
import type { TrustError } from "../errors.js";
import type { LeafCertificate } from "./certificate.js";
import type { Endpoint } from "./endpoint.js";
import { RecordingDuplex } from "./recording-duplex.js";
import { classifyProbeAnswer } from "./server-bytes.js";

const RECORD_HEADER = 5;

/** True once `bytes` holds the whole first record. */
function firstRecordComplete(bytes: Buffer): boolean {
  return bytes.length >= RECORD_HEADER && bytes.length >= RECORD_HEADER + bytes.readUInt16BE(3);
}

/**
 * Opens one probe connection and classifies the server's first record: a policy refusal
 * (a pre-1.3 ServerHello, an alert, something that is not TLS), or `null` when the listener
 * speaks TLS 1.3, closed or reset the probe too, or said nothing within `timeoutMs`: then the
 * earlier failure was a transport failure.
 */
export function probeTlsVersion(endpoint: Endpoint, anchor: LeafCertificate, timeoutMs: number): Promise<TrustError | null> {
  return new Promise((resolve) => {
    const raw = net.connect({ host: endpoint.host, port: endpoint.port, noDelay: true });
    const recorder = new RecordingDuplex(raw);
    const client = tls.connect({ socket: recorder, host: endpoint.host, ca: anchor.pem, minVersion: "TLSv1.2", maxVersion: "TLSv1.3" });
    let settled = false;
    const finish = (verdict: TrustError | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.destroy();
      raw.destroy();
      resolve(verdict);
    };
    const timer = setTimeout(() => {
      finish(null);
    }, timeoutMs);
    timer.unref();
    const judge = (): void => {
      const bytes = recorder.peekRecording();
      if (bytes.length > 0) finish(classifyProbeAnswer(bytes));
      else finish(null);
    };
    raw.on("data", () => {
      if (firstRecordComplete(recorder.peekRecording())) judge();
    });
    raw.on("close", judge);
    raw.on("error", judge);
    // The probe's own handshake never finishes (it is cut at the first record); its error is moot.
    client.on("error", () => undefined);
  });
}
