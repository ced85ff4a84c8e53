//! **Not API.** What vecring-core is built of below its API, and what
//! vecring's own crates (the `vecring` tool, the C API, the DPDK driver,
//! the tests, benchmarks and fuzz targets) reach inside for: the
//! shared-memory ABI, the run directory's files, the handshake, the
//! descriptor closer, the doorbells and their event set, the NUMA and MAC
//! helpers. Nothing here has a stability promise: names, signatures and
//! behaviour change with any release, and applications must not use it.
//!
//! The API is the crate root's: [`Link`](crate::Link) and the [`link`](crate::link)
//! module, [`ring`](crate::ring), [`memory`](crate::memory) (the shared
//! region), [`geometry`](crate::geometry), [`name`](crate::name) and
//! [`status`](crate::status).

pub mod abi;
#[cfg(not(loom))]
pub mod closer;
#[cfg(not(loom))]
pub mod dirs;
#[cfg(not(loom))]
pub mod doorbell;
#[cfg(not(loom))]
pub mod event_set;
#[cfg(not(loom))]
pub mod handshake;
pub mod mac;
#[cfg(not(loom))]
pub mod netns;
#[cfg(not(loom))]
pub mod numa;
