/** A duplex over a TCP socket that keeps what the server wrote until the handshake is judged. */
import type net from "node:net";
import { Duplex } from "node:stream";
import { TlsPolicyError } from "../errors.js";

/** Bytes the server wrote, kept until the handshake has been checked. */
export class RecordingDuplex extends Duplex {
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
