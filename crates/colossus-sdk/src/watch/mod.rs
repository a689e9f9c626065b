//! The watch: the pure state machine ([`core`]) and the driver that runs it over any
//! [`Backend`](crate::backend::Backend) ([`stream`]).

pub(crate) mod core;
pub(crate) mod stream;
#[cfg(test)]
mod tests;
