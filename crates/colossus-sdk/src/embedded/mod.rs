//! The embedded placement: [`EmbeddedRuntime`], an in-process scripted runtime that
//! implements [`Backend`](crate::backend::Backend), for demos and tests, with the
//! one-shot [`Fault`]s of the other SDKs' fake workers.

mod executor;
mod faults;
mod runtime;
mod script;
mod store;
mod tools;

pub use faults::{Fault, Method};
pub use runtime::{EmbeddedRuntime, EmbeddedRuntimeBuilder};
