/**
 * `colossus-sdk/testing`: test helpers for applications that use the Colossus SDK.
 *
 * - {@link FakeWorker}: an in-process, scripted worker on loopback TLS, with injectable
 *   {@link Fault}s, for fast unit tests of your own code with `node:test` or any runner.
 * - {@link makeTestLeaf}: the throw-away certificate it serves.
 *
 * Everything here is for tests only: the certificate and bearer are made up on the spot and
 * runs live in memory.
 */
export { FAKE_INSTANCE_ID, FakeWorker, type FakeDaemonOptions, type FakeWorkerOptions, type ScriptOptions, type TerminalStatus } from "./fake-worker.js";
export { Fault, type FakeMethod, type FaultCode, type FaultKind } from "./faults.js";
export { makeTestLeaf, type TestLeaf } from "./leaf.js";
