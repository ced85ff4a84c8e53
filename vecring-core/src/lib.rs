//! vecring: a shared-memory virtual Ethernet link between two processes.
//!
//! This crate holds everything that is not DPDK. Its API: the
//! [`Link`] ([`link`]): two processes (a master, typically on the host,
//! and a slave, typically in a container) that open the same link by name
//! ([`name`]) and exchange frames, following each other through exits and
//! restarts; the lock-free single-producer/single-consumer frame ring it
//! is made of ([`ring`]), over the hugepage/NUMA-aware shared-memory
//! region ([`memory`]) or the heap; the ring's shape ([`geometry`]); and
//! what a master tells `vecring list` and `vecring stats` ([`status`]). A
//! link carries 1 to [`MAX_QUEUES`] queue pairs, each an independent
//! ring per direction ([`LinkBuilder::queues`], [`Link::sender_on`],
//! [`Link::receiver_on`]).
//! A receiver need not poll: [`Receiver::wait`] and
//! [`Receiver::recv_timeout`] sleep until frames arrive, and a
//! [`Receiver`] (or [`Sender`]) is [`AsFd`](std::os::fd::AsFd) for epoll,
//! mio or tokio (`examples/tokio_recv.rs`); the sending side pays nothing
//! for it until the receiver first sleeps.
//!
//! ```
//! use std::time::Duration;
//! use vecring_core::{HugepagePolicy, Link, Role};
//!
//! let dir = std::env::temp_dir().join(format!("vecring-doc-{}", std::process::id()));
//! let open = |role| {
//!     Link::builder("doc", "eth0")
//!         .role(role)
//!         .run_dir(&dir)
//!         .hugepages(HugepagePolicy::Never)
//!         .open()
//! };
//! let (host, container) = (open(Role::Master)?, open(Role::Slave)?);
//! host.wait_up(Duration::from_secs(10))?;
//! let mut rx = host.receiver()?;
//! let sender = std::thread::spawn(move || {
//!     container.wait_up(Duration::from_secs(10)).unwrap();
//!     std::thread::sleep(Duration::from_millis(100));
//!     container.sender().unwrap().send(b"late frame").unwrap();
//!     container // kept open until the frame is read
//! });
//! // Sleeps (no CPU) until the frame comes, 10 s at most.
//! let mut buf = [0u8; 64];
//! let n = rx.recv_timeout(&mut buf, Duration::from_secs(10))?;
//! assert_eq!(&buf[..n], b"late frame");
//! drop(sender.join());
//! # let _ = std::fs::remove_dir_all(&dir);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `docs/ARCHITECTURE.md` in the repository draws how these layers fit,
//! the region's layout, the handshake, and the path of one frame.
//!
//! A ring moves frames of 1 to 9216 bytes; a frame larger than a slot
//! continues in the following slots. Each side caches the other's index and
//! publishes its own once per batch. The peer is untrusted: every value it
//! can write is checked before use, and a corrupt ring reports a
//! [`ring::Corruption`] instead of misbehaving.
//!
//! ```
//! use vecring_core::{heap_channel, Geometry};
//!
//! let (mut tx, mut rx) = heap_channel(Geometry::default());
//!
//! // Copying API.
//! tx.send(b"hello").unwrap();
//! let mut buf = [0u8; 9216];
//! let n = rx.recv(&mut buf).unwrap();
//! assert_eq!(&buf[..n], b"hello");
//!
//! // Zero-copy batch API: reserve, write in place, commit once.
//! let mut chunk = tx.write_chunk(32).unwrap();
//! for i in 0..3u8 {
//!     chunk.push_with(64, |frame| {
//!         for seg in frame.segments_mut() {
//!             seg.fill(i);
//!         }
//!     }).unwrap();
//! }
//! assert_eq!(chunk.commit(), 3);
//!
//! // Read in place, release once (when the chunk drops).
//! let mut chunk = rx.read_chunk(32).unwrap();
//! let mut seen = 0;
//! while let Some(frame) = chunk.next_frame().unwrap() {
//!     assert_eq!(frame.len(), 64);
//!     assert!(frame.first_segment().iter().all(|&b| b == seen));
//!     seen += 1;
//! }
//! assert_eq!(seen, 3);
//! ```
//!
//! For batches of one frame size, [`WriteChunk::push_run`] and
//! [`ReadChunk::next_run`] move a whole run of frames with one length
//! check and one pass over the descriptors; [`FrameRun::into_arrays`]
//! reads such a run as `&[u8; N]`, with no check per frame.
#![deny(missing_docs)]

pub mod geometry;
#[cfg(not(loom))]
pub mod link;
#[cfg(not(loom))]
pub mod memory;
pub mod name;
#[cfg(not(loom))]
pub mod pause;
pub mod ring;
#[cfg(not(loom))]
pub mod status;

#[cfg(not(loom))]
mod counters;
#[cfg(not(loom))]
mod pinned;
mod sync;

#[doc(hidden)]
pub mod internal;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support;

// The internal modules under their short names, for this crate's own use.
use internal::abi;
#[cfg(not(loom))]
use internal::{closer, dirs, doorbell, event_set, handshake, netns, numa};

/// Largest frame a link carries, in bytes (jumbo): the ABI's
/// (`vecring_abi::ring::MAX_FRAME_LEN`).
pub const MAX_FRAME_LEN: usize = abi::MAX_FRAME_LEN;
/// Most queue pairs a link carries: the ABI's
/// (`vecring_abi::region::MAX_QUEUES`).
pub const MAX_QUEUES: u16 = abi::MAX_QUEUES;
/// Largest region a slave accepts, in bytes, and so the most a master may
/// ask for: the ABI's (`vecring_abi::region::MAX_REGION_SIZE`).
pub const MAX_REGION_SIZE: u64 = abi::MAX_REGION_SIZE;
pub use geometry::{Geometry, GeometryError};
#[cfg(not(loom))]
pub use link::{
    Link, LinkBuilder, LinkCounters, LinkError, LinkRecvError, LinkSendError, LinkState,
    QueueCounters, Receiver, RegionBudget, Role, Sender, Totals,
};
#[cfg(not(loom))]
pub use memory::{HugepagePolicy, Region, RegionOptions};
pub use ring::{
    heap_channel, Bell, Consumer, Corruption, Frame, FrameArrays, FrameRun, FrameWriter, HeapRing,
    HoldBack, Producer, PushError, ReadChunk, ReadyWord, RecvError, RingStorage, SendError,
    WaitDecision, WriteChunk,
};

/// The crate's README, whose example `cargo test --doc` compiles.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
