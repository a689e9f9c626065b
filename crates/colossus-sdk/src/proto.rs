//! The generated `colossus.api.v1alpha1` bindings (prost messages, tonic client stubs),
//! included from `src/gen/`, which `./sdk/scripts/generate` writes. Crate-private: no
//! generated type appears in a public signature; `convert.rs` maps them to the public model.
#![allow(
    missing_docs,
    dead_code,
    unreachable_pub,
    clippy::all,
    clippy::pedantic,
    rustdoc::all
)]

include!("gen/colossus/api/v1alpha1/colossus.api.v1alpha1.rs");
