// Bearer frames: a 4-byte big-endian length, then that many bytes.
import { createReadStream } from "node:fs";
import type { Readable } from "node:stream";

export class FrameReader {
  private buffered = Buffer.alloc(0);
  private ended = false;
  private waiter: (() => void) | null = null;

  constructor(private readonly stream: Readable) {
    stream.on("data", (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.wake();
    });
    stream.on("end", () => {
      this.ended = true;
      this.wake();
    });
    stream.on("error", () => {
      this.ended = true;
      this.wake();
    });
  }

  static fromFd(fd: number): FrameReader {
    return new FrameReader(createReadStream("", { fd, autoClose: false }));
  }

  static fromPath(file: string): FrameReader {
    return new FrameReader(createReadStream(file));
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }

  async read(): Promise<string> {
    for (;;) {
      if (this.buffered.length >= 4) {
        const length = this.buffered.readUInt32BE(0);
        if (this.buffered.length >= 4 + length) {
          const frame = this.buffered.subarray(4, 4 + length).toString("utf8");
          this.buffered = this.buffered.subarray(4 + length);
          return frame;
        }
      }
      if (this.ended) throw new Error("the bearer pipe closed");
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }
}
