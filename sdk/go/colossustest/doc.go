// Package colossustest is a test double for applications that use the Colossus Go SDK, as
// Python's colossus_agent_client.testing and TypeScript's colossus-sdk/testing.
//
// [Start] runs an in-process fake worker: a real gRPC server on loopback TLS 1.3 with a
// certificate made up on the spot, so the SDK runs its whole connect sequence against it
// (discovery files, pin checks, the TLS policy, the bearer, GetServerInfo). Each created
// run has already ended with the output you queued with [FakeWorker.Script]; [Fault]s
// injected with [FakeWorker.Inject] make its next matching call misbehave. It is for tests
// only: runs live in memory and it serves no artifacts.
package colossustest
