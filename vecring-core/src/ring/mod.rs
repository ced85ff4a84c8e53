//! The single-producer/single-consumer frame ring.
//!
//! Free-running indices (as in rtrb and DPDK's `rte_ring`), with readiness
//! in the descriptors (as in virtio's packed ring): a frame is published by
//! its first descriptor, which carries the stamp of its slot's lap
//! (`vecring_abi::ring` has the word's layout and the orderings every
//! implementation follows), so that the
//! consumer learns that the next frame is ready from that one line, with
//! no load of the producer's index on its data path:
//!
//! - the producer fills a frame's slots, then stores its descriptor with
//!   the stamp (a `Release` store, `shape::put_desc`); a chunk's
//!   frames get their descriptors at [`WriteChunk::commit`], one store
//!   each (a chunk whose length changes stores the lap before's stamp for
//!   the frames before the change, and commit adds the lap). After each
//!   call or batch it stores `head` once, a hint the consumer's data path
//!   never reads;
//! - the consumer loads the descriptor at its read position (`Acquire`)
//!   and takes the frame when the stamp is the one its own index expects
//!   ([`Consumer::recv`]); its batch readers ([`Consumer::recv_batch`],
//!   [`ReadChunk`]) load each descriptor once as they reach its frame,
//!   compare it with the last validated word and that stamp (a group at a
//!   time, then an `Acquire` fence), read the frames, then give the slots
//!   back with one `Release` store of `tail` per [`ReadChunk::release`].
//!   Only [`Consumer::ready_slots`], the hold-back and
//!   [`Consumer::prepare_wait`] look ahead (`Consumer::find_ready`);
//! - the producer loads `tail` (`Acquire`) only when its cached view of
//!   the free slots runs out: that line is written only by the consumer
//!   and read rarely, so the two sides do not bounce each other's lines.
//!
//! The copying calls sit on the chunks: `send_batch` and `recv_batch` are a
//! chunk's loop flattened, and [`Producer::send`] and [`Consumer::recv`]
//! handle the common single frame in straight-line code (a ping-pong's
//! latency is mostly these two calls), taking a chunk for everything else.
//!
//! The other side may be a hostile process. Every value read from shared
//! memory (the peer's index, every descriptor) is loaded once into a local,
//! checked, and only then used. A bad value *poisons* the endpoint: it
//! returns [`Corruption`] from then on, counts it, and never touches memory
//! outside the ring. The endpoint's own index is private and never re-read.
//!
//! A side with nothing to do may sleep instead of polling
//! ([`Consumer::prepare_wait`], [`Producer::prepare_wait`]): it
//! says so in its wait line and the other side, after its next index store,
//! rings the storage's doorbell ([`RingStorage::ring_doorbell`]).

// The files, each importing only from those on the lines above its own,
// or on its own line (this file re-exports what is public; `abi`,
// `geometry` and `sync` are the crate's, below the ring):
// - `error`, `stats`, `storage`: what an endpoint reports, and the memory
//   a ring lives in with its loom hooks (`model_read`, `model_write`);
// - `bytes`: raw access to ring memory: byte copies, non-temporal stores,
//   prefetches, and descriptors compared a group at a time;
// - `wait`: the wait protocol, the words of waiting, and the ready word;
// - `shape`: the ring's `Shape` (slot math, once per endpoint), reading
//   descriptors, and writing them (the Release stores that publish
//   frames, `put_desc`);
// - `frame`: received frames, read in place; `frame_writer`: a frame
//   being written in place;
// - `copy`: the copy loops (`Shape`'s, over runs of frames);
// - `producer` and `write_chunk`: the writing end and its chunk;
// - `consumer`, `hold_back` and `read_chunk`: the reading end, its
//   optional hold-back and its chunk;
// - `heap`: the heap backend and `heap_channel`.
// Each type's methods are in its own file, or by concept in a few:
// `Shape` over `shape` and `copy`; `Producer` over `producer` and
// `write_chunk` (which opens a chunk); `Consumer` over `consumer`,
// `hold_back` and `read_chunk` (which opens a chunk). Tests: the conformance
// suite over any storage in `tests/`; the wait decision and the signal
// throttle in `wait_decision_tests` and `wait_throttle_tests`.
mod bytes;
mod consumer;
mod copy;
mod error;
mod frame;
mod frame_writer;
mod heap;
mod hold_back;
mod producer;
mod read_chunk;
mod shape;
mod stats;
mod storage;
#[cfg(all(test, not(loom)))]
pub(crate) mod tests;
mod wait;
#[cfg(all(test, not(loom)))]
mod wait_decision_tests;
#[cfg(all(test, not(loom)))]
mod wait_throttle_tests;
mod write_chunk;

pub use consumer::Consumer;
pub use error::{Corruption, IndexKind, PushError, RecvError, SendError};
pub use frame::{Frame, FrameArrays, FrameRun};
pub use frame_writer::FrameWriter;
pub use heap::{heap_channel, HeapRing};
pub use hold_back::HoldBack;
pub use producer::Producer;
pub use read_chunk::ReadChunk;
pub use stats::EndpointStats;
pub use storage::{Bell, RingStorage};
pub use wait::{ReadyWord, WaitDecision};
pub use write_chunk::{WriteChunk, STREAM_MAX_LEN};
