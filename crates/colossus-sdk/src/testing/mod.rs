//! What the unit tests share. Each module's own tests are in `<module>/tests.rs`, declared
//! `#[cfg(test)] mod tests;` at the end of the module; black-box tests of the public API
//! are the crate's `tests/`, with their own `tests/support/`.

pub(crate) mod client;
pub(crate) mod credentials;
pub(crate) mod fake_worker;
pub(crate) mod log_capture;
pub(crate) mod rpc_status;
pub(crate) mod tls;
