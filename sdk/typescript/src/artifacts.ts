/**
 * `client.artifacts` (S6): size- and digest-bound uploads, verified downloads. Uploads are
 * never retried; a download that fails with `UNAVAILABLE` restarts from the beginning. Bytes
 * reach the caller only after their length and SHA-256 matched the artifact's metadata.
 */
import { create } from "@bufbuild/protobuf";
import { createHash, timingSafeEqual } from "node:crypto";
import type { RequestOptions } from "./connection.js";
import * as convert from "./convert.js";
import { ArtifactIntegrityError, ProtocolViolationError, invalidArgument } from "./errors.js";
import { UploadArtifactRequestSchema, type DownloadArtifactResponse, type UploadArtifactRequest } from "./gen/colossus/api/v1alpha1/artifacts_pb.js";
import type * as m from "./models.js";
import { CAP_ARTIFACTS, buildDownload, buildManifest, checkId, requireCapability } from "./requests.js";
import type { ConnectionSource } from "./watch.js";

const DEFAULT_CHUNK = 64 * 1024;
/** The most a chunk message adds to its bytes: one tag byte and a length varint of at most five. */
export const CHUNK_FRAMING = 6;

/**
 * The size of each upload chunk: the worker's chunk limit, but small enough that every
 * chunk message also fits the advertised request cap (C7).
 * @internal
 */
export function uploadChunkBytes(limits: Pick<m.Limits, "maxArtifactChunkBytes" | "maxRequestBytes">): number {
  const chunk = limits.maxArtifactChunkBytes || DEFAULT_CHUNK;
  const cap = limits.maxRequestBytes;
  return cap > CHUNK_FRAMING ? Math.min(chunk, cap - CHUNK_FRAMING) : chunk;
}

/** Options of `artifacts.upload`. */
export interface UploadOptions extends RequestOptions {
  /** `type/subtype`, e.g. `text/plain` or `image/png`. */
  readonly mediaType: string;
  /** An optional file-like name (no path separators). */
  readonly displayName?: string;
}

/** Checks a download stream: metadata first, then chunks bounded by the declared size. */
export class DownloadVerifier {
  private artifact: m.Artifact | null = null;
  private readonly hash = createHash("sha256");
  private readonly parts: Uint8Array[] = [];
  private received = 0;

  constructor(
    private readonly artifactId: string,
    private readonly maxBytes: number,
  ) {}

  feed(message: DownloadArtifactResponse): void {
    const part = message.part;
    if (this.artifact === null) {
      if (part.case !== "artifact") throw new ProtocolViolationError("the download did not start with metadata", { reason: "ARTIFACT_STREAM_ORDER" });
      const artifact = convert.artifact(part.value);
      if (artifact.artifactId !== this.artifactId) throw new ProtocolViolationError("the download described another artifact", { reason: "ARTIFACT_STREAM_ORDER" });
      if (this.maxBytes > 0 && artifact.sizeBytes > this.maxBytes) {
        throw new ArtifactIntegrityError("the artifact is larger than the worker's advertised limit", { reason: "ARTIFACT_TOO_LARGE" });
      }
      this.artifact = artifact;
      return;
    }
    if (part.case !== "chunk") throw new ProtocolViolationError("the download sent metadata twice", { reason: "ARTIFACT_STREAM_ORDER" });
    this.received += part.value.length;
    if (this.received > this.artifact.sizeBytes) throw new ArtifactIntegrityError("the download sent more bytes than declared", { reason: "ARTIFACT_SIZE_MISMATCH" });
    this.hash.update(part.value);
    this.parts.push(part.value);
  }

  finish(): m.DownloadedArtifact {
    const artifact = this.artifact;
    if (artifact === null) throw new ProtocolViolationError("the download ended before its metadata", { reason: "ARTIFACT_STREAM_ORDER" });
    if (this.received !== artifact.sizeBytes) throw new ArtifactIntegrityError("the download ended before all declared bytes", { reason: "ARTIFACT_SIZE_MISMATCH" });
    const digest = this.hash.digest();
    const declared = Buffer.from(artifact.sha256, "hex");
    if (declared.length !== digest.length || !timingSafeEqual(digest, declared)) {
      throw new ArtifactIntegrityError("the downloaded bytes do not match the declared SHA-256", { reason: "ARTIFACT_DIGEST_MISMATCH" });
    }
    return Object.freeze({ artifact, data: Buffer.concat(this.parts) });
  }
}

/** `client.artifacts`: upload artifacts and download them verified. */
export class Artifacts {
  /** @internal */
  constructor(private readonly source: ConnectionSource) {}

  /** Uploads `data` once (never retried); returns the stored artifact. Scope `artifacts:write`. */
  async upload(data: Uint8Array, options: UploadOptions): Promise<m.Artifact> {
    if (!(data instanceof Uint8Array)) throw invalidArgument("data must be a Uint8Array or Buffer", "data");
    const connection = await this.source.connection();
    const digest = createHash("sha256").update(data).digest("hex");
    const manifest = buildManifest(connection.serverInfo, data.length, digest, options.mediaType, options.displayName);
    const first = create(UploadArtifactRequestSchema, { part: { case: "manifest", value: manifest } });
    const chunk = uploadChunkBytes(connection.serverInfo.limits);
    // eslint-disable-next-line @typescript-eslint/require-await -- connect takes client streams as AsyncIterables
    async function* messages(): AsyncGenerator<UploadArtifactRequest> {
      yield first;
      for (let offset = 0; offset < data.length; offset += chunk) {
        yield create(UploadArtifactRequestSchema, { part: { case: "chunk", value: data.subarray(offset, offset + chunk) } });
      }
    }
    let response;
    try {
      response = await connection.artifacts.uploadArtifact(messages(), connection.callOptions(options));
    } catch (error) {
      throw connection.mapError(error, { mutation: true, signal: options.signal });
    }
    const artifact = convert.artifact(response.artifact);
    if (artifact.sizeBytes !== data.length || artifact.sha256 !== digest) {
      throw new ProtocolViolationError("the worker stored an artifact that differs from the upload", { reason: "ARTIFACT_MISMATCH" });
    }
    checkId(artifact.artifactId, "artifact_id");
    return artifact;
  }

  /** Downloads and verifies one artifact. Scope `artifacts:read`. */
  async download(artifactId: string, options: RequestOptions = {}): Promise<m.DownloadedArtifact> {
    checkId(artifactId, "artifact_id");
    const connection = await this.source.connection();
    requireCapability(connection.serverInfo, CAP_ARTIFACTS, "an artifact download");
    const request = buildDownload(artifactId);
    return connection.read(async () => {
      const verifier = new DownloadVerifier(artifactId, connection.serverInfo.limits.maxArtifactBytes);
      for await (const message of connection.artifacts.downloadArtifact(request, connection.callOptions(options))) {
        verifier.feed(message);
      }
      return verifier.finish();
    }, options.signal);
  }
}
