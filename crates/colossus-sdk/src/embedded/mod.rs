//! The embedded placement: [`EmbeddedRuntime`], an in-process scripted runtime that
//! implements [`Backend`](crate::backend::Backend), for demos and tests.

mod runtime;
mod script;
mod tools;

pub use runtime::{EmbeddedRuntime, EmbeddedRuntimeBuilder};

#[cfg(test)]
mod tests;
