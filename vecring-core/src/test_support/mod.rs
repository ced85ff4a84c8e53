//! **Not API.** Helpers for testing a link, behind the `test-support`
//! feature (enabled by the tests, the benchmarks, the fuzz targets, and
//! the `vecring` tool, whose traffic commands send and check these
//! frames). No stability promise.

pub mod pattern;
