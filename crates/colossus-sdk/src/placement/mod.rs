//! Where the worker runs: an installed shared daemon, or a private sidecar the SDK starts
//! and supervises. Each turns its own inputs into a checked [`Target`](crate::transport::Target).

pub(crate) mod sidecar;
