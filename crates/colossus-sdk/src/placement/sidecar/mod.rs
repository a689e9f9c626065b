//! The sidecar placement: a private worker the SDK spawns, bootstraps over inherited
//! pipes and supervises (conformance/docs/sidecar.md).

pub(crate) mod bootstrap;
