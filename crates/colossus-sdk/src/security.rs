//! Security notes: what the SDK checks, on which connection, and what it never does with
//! a bearer. (A page of documentation only; nothing here is code.)
//!
//! # Before any connection (daemon)
//!
//! [`Client::connect`](crate::Client::connect) reads the worker's discovery folder and
//! compares it with the identity you provisioned at enrolment (the instance ID and the
//! certificate SHA-256, from your own configuration; the SDK never derives them from the
//! folder):
//!
//! - the folder is a real directory owned by you with mode 0700 or stricter; `endpoint.json`
//!   and `certificate.pem` are regular files owned by you, mode 0600, opened without
//!   following a symbolic link, and bounded in size (4 KiB and 16 KiB);
//! - `endpoint.json` is one JSON object with exactly its five members, no duplicate member
//!   anywhere, an endpoint that is literally `https://127.0.0.1:PORT` or `https://[::1]:PORT`,
//!   and a lower-case hex pin;
//! - `certificate.pem` is exactly one PEM certificate: a v3 end-entity (BasicConstraints
//!   CA=false) with a P-256 key on the curve, an IP SAN for the endpoint's address, and the
//!   DER shape rules every SDK of the family shares;
//! - the descriptor's pin, the certificate's SHA-256 and the descriptor's instance ID must
//!   equal what you provisioned (pins compared in constant time).
//!
//! A sidecar gets the same facts from its bootstrap reply instead, and every member of that
//! reply is checked the same way before anything in it is used.
//!
//! # On every connection, reconnects included
//!
//! tonic opens each connection through the SDK's connector, which dials only the checked
//! loopback address and runs a rustls handshake that:
//!
//! - offers and accepts TLS 1.3 only (a TLS 1.2 signature is refused even if a server asks);
//! - refuses a server that presents any certificate besides its leaf (`TLS_CHAIN`);
//! - hashes the presented leaf and compares it with the pin in constant time
//!   (`PIN_MISMATCH`);
//! - checks the TLS 1.3 handshake signature with the ring provider's algorithms;
//! - never resumes a session (a resumed handshake would skip the certificate check) and
//!   requires ALPN `h2`.
//!
//! A refused handshake reaches the caller as a typed error (`Kind::TlsPolicy` or
//! `Kind::PinMismatch` with the reason above, no status code), never as a plain transport
//! failure, and nothing is sent on that connection.
//!
//! # The bearer
//!
//! - The credential provider is asked only after the discovery checks and a successful
//!   pinned handshake; on any trust refusal it is not asked at all.
//! - The first call on a connection is GetServerInfo, which must name the provisioned
//!   instance, the `colossus.api.v1alpha1` package, API major 1 and the expected placement
//!   (`SHARED_DAEMON` or `SIDECAR`) before the client is returned.
//! - The bearer is held in a [`Bearer`](crate::Bearer) whose memory is zeroed on drop and
//!   whose `Debug` prints `Bearer(<redacted>)`; it is sent only as the `authorization`
//!   header, marked sensitive so HTTP/2 header compression never indexes it. It never
//!   appears in argv, the environment, files, URLs, logs or error messages.
//! - A sidecar's one-use bearer arrives over an inherited pipe and lives only in memory.
//! - A credential provider's failure is reported as the SDK's own credential error (the
//!   catalogue's reason and a fixed message); the provider's text and metadata, which may
//!   hold the secret it failed to deliver, are never repeated. Its error is kept as the
//!   `source()` behind [`ProviderError`](crate::credentials::ProviderError), which prints
//!   nothing of it and ends the chain, so an error report cannot print it either.
//! - The `tracing` records (connect, each check, trust refusals, creates, reconnects) carry
//!   endpoints, instance IDs, reasons, run IDs and idempotency keys, never the bearer; a
//!   unit test captures every target and level and looks for it.
//!
//! # No residual TLS risk
//!
//! Because every connection, including each reconnect tonic makes after a worker restart,
//! passes through the same pinned verifier, the Rust SDK has no residual TLS risk: a process
//! that takes over the worker's port cannot receive a request or the bearer, whatever it
//! presents. The test `placement::daemon::tests::a_restart_into_a_hostile_listener_fails_typed_and_gets_no_bearer`
//! (in `src/placement/daemon/tests.rs`)
//! proves it: a client connected to a genuine worker sees that worker replaced, on the same
//! port, by a TLS-1.2-only listener, a listener with a foreign leaf, and one presenting a
//! chain; each next call fails with the typed refusal, the hostile listener records no
//! request, and the credential provider was asked only once, for the genuine worker. The
//! transport-level twins are in `transport::tests`.
//!
//! # Sidecar processes
//!
//! The worker is spawned directly (no shell) in its own process group with exactly two
//! inherited pipe ends; it is restarted at most three times with backoff, a call in flight
//! when it exits is never replayed, and its whole process group is ended on `close()` and
//! when the client is dropped.
