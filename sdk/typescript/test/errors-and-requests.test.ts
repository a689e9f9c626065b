// Error mapping (code + ErrorInfo reason), local request checks, credential providers.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { inspect } from "node:util";
import { Code, ConnectError } from "@connectrpc/connect";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { decodeErrorInfo, isRetryable, mapError } from "../src/status.js";
import {
  AbortedError,
  CapabilityMissingError,
  ColossusError,
  CredentialError,
  IdempotencyConflictError,
  InvalidArgumentError,
  NotFoundError,
  OutcomeUnknownError,
  ResourceExhaustedError,
  TransportError,
} from "../src/errors.js";
import { KeyringCredentialProvider, loadBearer } from "../src/credentials.js";
import type { ServerInfo } from "../src/models.js";
import { CHUNK_FRAMING, uploadChunkBytes } from "../src/artifacts.js";
import { UploadArtifactRequestSchema } from "../src/gen/colossus/api/v1alpha1/artifacts_pb.js";
import { buildCreateRun, buildListRuns, buildRespond } from "../src/requests.js";
import { parseStrictObject, JsonFloat, StrictJsonError } from "../src/transport/strict-json.js";

function errorInfo(reason: string, domain: string, metadata: Record<string, string> = {}): Uint8Array {
  const w = new BinaryWriter();
  w.uint32((1 << 3) | 2).string(reason);
  w.uint32((2 << 3) | 2).string(domain);
  for (const [k, v] of Object.entries(metadata)) {
    const entry = new BinaryWriter().uint32((1 << 3) | 2).string(k).uint32((2 << 3) | 2).string(v).finish();
    w.uint32((3 << 3) | 2).bytes(entry);
  }
  return w.finish();
}

function withReason(code: Code, reason: string, metadata: Record<string, string> = {}, domain = "colossus.api.v1alpha1"): ConnectError {
  // An incoming detail, as connect decodes it from grpc-status-details-bin.
  const details = [{ type: "google.rpc.ErrorInfo", value: errorInfo(reason, domain, metadata) }];
  return new ConnectError("server text", code, undefined, details as unknown as ConstructorParameters<typeof ConnectError>[3]);
}

const info: ServerInfo = {
  instanceId: "wkr_1", apiPackage: "colossus.api.v1alpha1", apiVersion: "v1alpha1", apiMajor: 1, deploymentMode: "SHARED_DAEMON",
  capabilities: new Set(["artifacts"]), serverVersion: "x",
  limits: {
    maxActiveRuns: 1, maxActiveRunsPerApplication: 1, createRate: { refillPerSecond: 1, burst: 1 }, createRatePerApplication: { refillPerSecond: 1, burst: 1 },
    maxWatches: 1, maxWatchesPerApplication: 1, maxConcurrentListRuns: 1, maxConcurrentListRunsPerApplication: 1, maxConnections: 1,
    maxConcurrentStreamsPerConnection: 1, maxRequestBytes: 4096, maxResponseBytes: 4096, maxHeaderBytes: 1, maxEventsPerRun: 1, reservedLifecycleEvents: 3,
    maxInputParts: 2, maxInputBytes: 100, maxTurns: 100, defaultMaxTurns: 20, maxListPageSize: 3, maxListStatusFilters: 2, maxArtifactBytes: 10,
    maxArtifactChunkBytes: 4, handshakeTimeoutSeconds: 5, maxConnectionAgeSeconds: 900,
  },
};

describe("error mapping", () => {
  it("decodes ErrorInfo and picks the class by reason, then by code", () => {
    const conflict = mapError(withReason(Code.AlreadyExists, "IDEMPOTENCY_CONFLICT", { field: "idempotency_key" }), { idempotencyKey: "k1" });
    assert.ok(conflict instanceof IdempotencyConflictError);
    assert.equal(conflict.code, "ALREADY_EXISTS");
    assert.equal(conflict.metadata["field"], "idempotency_key");
    assert.equal(conflict.idempotencyKey, "k1");
    assert.ok(mapError(withReason(Code.FailedPrecondition, "CAPABILITY_NOT_SUPPORTED")) instanceof CapabilityMissingError);
    const notFound = mapError(withReason(Code.NotFound, "RUN_NOT_FOUND"));
    assert.ok(notFound instanceof NotFoundError && notFound.reason === "RUN_NOT_FOUND");
  });

  it("ignores ErrorInfo of another domain and malformed details", () => {
    assert.equal(mapError(withReason(Code.NotFound, "X", {}, "other.domain")).reason, null);
    assert.equal(decodeErrorInfo(new Uint8Array([0x0a, 0xff])), null);
  });

  it("turns ambiguous failures of mutations into OutcomeUnknownError with the key", () => {
    const e = mapError(new ConnectError("gone", Code.Unavailable), { mutation: true, idempotencyKey: "k2" });
    assert.ok(e instanceof OutcomeUnknownError && e.idempotencyKey === "k2");
    assert.equal(isRetryable(e), false);
    const definite = mapError(new ConnectError("bad", Code.InvalidArgument), { mutation: true });
    assert.ok(definite instanceof InvalidArgumentError);
  });

  it("retries only UNAVAILABLE on reads", () => {
    assert.equal(isRetryable(mapError(new ConnectError("x", Code.Unavailable))), true);
    assert.equal(isRetryable(mapError(new ConnectError("x", Code.Internal))), false);
    assert.equal(isRetryable(mapError(new ConnectError("x", Code.ResourceExhausted))), false);
  });

  it("reports the caller's abort as AbortedError, or OutcomeUnknownError for mutations", () => {
    const controller = new AbortController();
    controller.abort();
    assert.ok(mapError(new ConnectError("x", Code.Canceled), { signal: controller.signal }) instanceof AbortedError);
    assert.ok(mapError(new ConnectError("x", Code.Canceled), { signal: controller.signal, mutation: true }) instanceof OutcomeUnknownError);
  });

  it("keeps instanceof working across copies through each class's brand", () => {
    // What another copy's NotFoundError carries (test/package checks two real copies).
    const brands = ["ColossusError", "ApiError", "NotFoundError"].map((name) => [Symbol.for(`colossus-sdk.error.${name}`), true]);
    const foreign = Object.assign(Object.create(Error.prototype) as object, Object.fromEntries(brands) as object);
    assert.ok(foreign instanceof ColossusError);
    assert.ok(foreign instanceof NotFoundError);
    assert.ok(!(foreign instanceof TransportError));
    assert.ok(!(new TransportError("x") instanceof NotFoundError));
  });
});

describe("local request checks", () => {
  it("names the field of a refused create", () => {
    const bad = (options: Parameters<typeof buildCreateRun>[3], input: Parameters<typeof buildCreateRun>[2] = "hi"): unknown => {
      try {
        buildCreateRun(info, "key-1", input, options, null);
      } catch (error) {
        return error;
      }
      return null;
    };
    assert.equal((bad({ maxTurns: 101 }) as ColossusError).metadata["field"], "max_turns");
    assert.equal((bad({ sessionId: "has space" }) as ColossusError).metadata["field"], "session_id");
    assert.equal((bad({ endUserId: "" }) as ColossusError).metadata["field"], "end_user_id");
    assert.equal((bad({ traceparent: "00-00000000000000000000000000000000-0000000000000000-01" }) as ColossusError).metadata["field"], "traceparent");
    assert.equal((bad({ mode: "BOGUS" as never }) as ColossusError).metadata["field"], "mode");
    assert.equal((bad({}, ["a", "b", "c"]) as ColossusError).reason, "INPUT_TOO_MANY_PARTS");
    assert.equal((bad({}, "x".repeat(101)) as ColossusError).reason, "INPUT_TOO_LARGE");
    assert.ok(bad({ planAction: { sourceRunId: "run_1", revision: 1, kind: "REVISE" } }) instanceof CapabilityMissingError);
    assert.ok(bad({}, [{ artifactId: "art_1", mediaType: "image/png" }]) instanceof CapabilityMissingError);
  });

  it("sizes upload chunks so every chunk message fits the advertised request cap (C7)", () => {
    for (const limits of [
      { maxArtifactChunkBytes: 256 * 1024, maxRequestBytes: 64 * 1024 },
      { maxArtifactChunkBytes: 16 * 1024, maxRequestBytes: 2 * 1024 * 1024 },
      { maxArtifactChunkBytes: 0, maxRequestBytes: 1000 },
      { maxArtifactChunkBytes: 300, maxRequestBytes: 0 },
    ]) {
      const chunk = uploadChunkBytes(limits);
      assert.ok(chunk > 0 && (limits.maxArtifactChunkBytes === 0 || chunk <= limits.maxArtifactChunkBytes), JSON.stringify(limits));
      const message = create(UploadArtifactRequestSchema, { part: { case: "chunk", value: new Uint8Array(chunk) } });
      const size = toBinary(UploadArtifactRequestSchema, message).length;
      assert.ok(limits.maxRequestBytes === 0 || size <= limits.maxRequestBytes, `${JSON.stringify(limits)}: ${size} bytes`);
    }
    assert.equal(uploadChunkBytes({ maxArtifactChunkBytes: 256 * 1024, maxRequestBytes: 64 * 1024 }), 64 * 1024 - CHUNK_FRAMING);
  });

  it("checks list filters and answers", () => {
    assert.throws(() => buildListRuns(info, ["QUEUED", "RUNNING", "FAILED"], 0, ""), (e: unknown) => e instanceof InvalidArgumentError && e.reason === "STATUS_FILTER_TOO_LARGE");
    assert.throws(() => buildListRuns(info, ["NOPE" as never], 0, ""), InvalidArgumentError);
  });

  it("refuses an unknown mode, lane or status naming the values allowed, as every SDK does", () => {
    const refused = (work: () => unknown, field: string, allowed: string): void => {
      assert.throws(work, (e: unknown) => {
        assert.ok(e instanceof InvalidArgumentError, String(e));
        assert.equal(e.metadata["field"], field);
        assert.ok(e.message.includes(`must be one of ${allowed}, not "NOPE"`), e.message);
        return true;
      });
    };
    refused(() => buildCreateRun(info, "key-1", "hi", { mode: "NOPE" as never }, null), "mode", "EXECUTE, PLAN, RESEARCH");
    refused(() => buildListRuns(info, ["NOPE" as never], 0, ""), "statuses", "QUEUED, RUNNING, WAITING_FOR_INPUT, CANCELLING, SUCCEEDED, FAILED, CANCELLED, INTERRUPTED, OUTCOME_UNKNOWN");
    assert.throws(() => buildRespond("run_1", "int_1", { kind: "approval", binding: "b", decision: "MAYBE" as never }), InvalidArgumentError);
    assert.throws(() => buildRespond("run_1", "int_1", null as never), InvalidArgumentError);
  });
});

describe("strict JSON", () => {
  it("refuses duplicates, trailing data and a BOM; reports fractions", () => {
    assert.throws(() => parseStrictObject(Buffer.from('{"a":1,"a":2}')), StrictJsonError);
    assert.throws(() => parseStrictObject(Buffer.from('{"a":1} x')), StrictJsonError);
    assert.throws(() => parseStrictObject(Buffer.from('\ufeff{"a":1}')), StrictJsonError);
    assert.throws(() => parseStrictObject(Buffer.from("[1]")), StrictJsonError);
    assert.ok(parseStrictObject(Buffer.from('{"a":1.0}'))["a"] instanceof JsonFloat);
    assert.deepEqual({ ...parseStrictObject(Buffer.from('{"a":"\\u0041","b":[true,null]}')) }, { a: "A", b: [true, null] });
  });
});

describe("credential providers", () => {
  it("the keyring provider explains what to install when the package is missing", async () => {
    const provider = new KeyringCredentialProvider("svc", "acct", () => Promise.reject(new Error("Cannot find module")));
    await assert.rejects(provider.getBearer(), (e: unknown) => e instanceof CredentialError && /@napi-rs\/keyring/.test(e.message) && /--bearer-fd/.test(e.message));
  });

  it("a provider's own failure text is not repeated (it might hold the secret)", async () => {
    const secret = "s3cr3t-value-that-must-not-leak-anywhere-0000";
    await assert.rejects(loadBearer({ getBearer: () => { throw new Error(secret); } }), (e: unknown) => e instanceof CredentialError && !inspect(e).includes(secret));
  });

  it("one rule in every SDK (C8): PROVIDER_FAILED, the provider's error kept only as the cause", async () => {
    const secret = "vault said cb1_SECRETSECRETSECRETSECRETSECRETSECRETSECRET1";
    for (const thrown of [
      new Error(secret),
      new CredentialError(secret, { reason: "KEYRING_ENTRY_MISSING" }),
      new TransportError(secret, { code: "UNAVAILABLE" }),
    ]) {
      const error = await loadBearer({ getBearer: () => { throw thrown; } }).then(
        () => assert.fail("the provider failed"),
        (e: unknown) => e,
      );
      assert.ok(error instanceof CredentialError, String(error));
      assert.equal(error.reason, "PROVIDER_FAILED");
      assert.equal(error.code, null);
      assert.equal(error.cause, thrown);
      for (const shown of [error.message, String(error), JSON.stringify(error), inspect(error)]) {
        assert.ok(!shown.includes("vault said"), shown);
      }
    }
  });
});

describe("ColossusError.retryable", () => {
  it("is Go's Retryable rule: an UNAVAILABLE read, or a create refused under CREATE_RATE_LIMIT", () => {
    assert.equal(mapError(new ConnectError("x", Code.Unavailable)).retryable, true);
    assert.equal(new TransportError("x", { code: "UNAVAILABLE" }).retryable, true);
    assert.equal(new OutcomeUnknownError("x", { code: "UNAVAILABLE" }).retryable, false);
    assert.equal(new TransportError("x", { code: "DEADLINE_EXCEEDED" }).retryable, false);
    assert.equal(new ResourceExhaustedError("x", { code: "RESOURCE_EXHAUSTED", reason: "CREATE_RATE_LIMIT" }).retryable, true);
    assert.equal(new ResourceExhaustedError("x", { code: "RESOURCE_EXHAUSTED", reason: "WATCH_LIMIT" }).retryable, false);
    assert.equal(new InvalidArgumentError("x", { reason: "FIELD_INVALID" }).retryable, false);
  });
});
