/**
 * Reads a discovery file the way an attacker-controlled folder demands: no symbolic link
 * followed, never blocking on a FIFO or device (opened non-blocking, then refused as not
 * regular), owned by this user, closed to others, and bounded in size.
 */
import { constants, promises as fs } from "node:fs";
import path from "node:path";

type ErrorFactory = (message: string) => Error;

function currentUid(): number | null {
  return typeof process.getuid === "function" ? process.getuid() : null;
}

export async function readOwnerOnlyFile(file: string, limit: number, error: ErrorFactory): Promise<Uint8Array> {
  const name = path.basename(file);
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw error(`${name} does not exist`);
    if (code === "ELOOP") throw error(`${name} is a symbolic link`);
    throw error(`${name} cannot be opened (${code ?? "error"})`);
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw error(`${name} is not a regular file`);
    const uid = currentUid();
    if (uid !== null && info.uid !== uid) throw error(`${name} is not owned by the current user`);
    if ((info.mode & 0o077) !== 0) throw error(`${name} is readable or writable by others (mode must be 0600)`);
    if (info.size > limit) throw error(`${name} is larger than ${limit} bytes`);
    const buffer = Buffer.alloc(limit + 1);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, total, limit + 1 - total, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > limit) throw error(`${name} is larger than ${limit} bytes`);
    }
    return buffer.subarray(0, total);
  } finally {
    await handle.close();
  }
}

/** The discovery folder must be a real directory owned by this user and closed to others. */
export async function checkPrivateDirectory(directory: string, error: ErrorFactory, what: string): Promise<void> {
  let info;
  try {
    info = await fs.lstat(directory);
  } catch {
    throw error(`${what} does not exist`);
  }
  if (!info.isDirectory()) throw error(`${what} is not a directory (or is a symbolic link)`);
  const uid = currentUid();
  if (uid !== null && info.uid !== uid) throw error(`${what} is not owned by the current user`);
  if ((info.mode & 0o077) !== 0) throw error(`${what} is open to others (mode must be 0700)`);
}
