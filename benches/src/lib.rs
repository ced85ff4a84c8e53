//! Throughput workloads for the vecring benchmarks (`benches/ring.rs`, the
//! criterion suite, and the `ring-compare` A/B runner).
//!
//! Each workload moves frames of one length from the calling thread (the
//! producer, pinned to CPU [`PRODUCER_CPU`]) to a persistent consumer
//! thread (pinned to CPU [`CONSUMER_CPU`]); see [`pipeline`]. The
//! candidates ([`Candidate`]):
//!
//! - vecring in a memfd [`Region`] (2 MiB hugepages when the machine has
//!   them, unless [`hugepage_policy()`] says otherwise; on the heap instead
//!   if the environment variable `VECRING_BENCH_HEAP` is set), of
//!   [`geometry()`] (by default 32768 slots
//!   of 64 bytes), through the copying API and through the zero-copy API,
//!   the latter also with the consumer's hold-back on
//!   ([`HoldBack::STREAMING`](vecring_core::HoldBack::STREAMING));
//! - `rtrb` between the same two threads, with the same capacity in frames
//!   and the same batches, copying out or reading in place ([`rtrb_peer`]):
//!   a ring of fixed `[u8; N]` elements, which carries frames of one length
//!   only and needs no per-frame metadata (rtrb's best case);
//! - `rtrb` carrying the same frames as byte messages of any length, a
//!   2-byte length before each, in a `u8` ring of the same bytes as
//!   vecring's data area ([`rtrb_bytes`]): how rtrb carries a link's
//!   frames of 1 to 9216 bytes;
//! - a single-thread `memcpy` of the same frames into the same kind of
//!   hugepage slots: the bandwidth ceiling.
//!
//! Every producer copies each frame from a source of [`SOURCE_FRAMES`]
//! frames (hot in cache, as an application's buffers would be); every
//! consumer touches every byte of every frame, either by copying it out or
//! by reading it in place with [`touch`].

#![deny(missing_docs)]

#[cfg(feature = "iceoryx2")]
pub mod iceoryx2_peer;
pub mod latency;
pub mod one_way;
pub mod pipeline;
pub mod results;
pub mod rtrb_bytes;
pub mod rtrb_peer;
pub mod vecring;

pub use latency::{
    core_to_core_latency, half_median_of_samples, ring_latency, signal_then_data_latency,
    TRIPS_PER_SAMPLE,
};
use pipeline::{Finished, Link, Pipeline, Rx, SameThread, Tx};
use rtrb_bytes::rtrb_bytes_pair;
use rtrb_peer::{rtrb_pair, RtrbMode};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::test_support::pattern::fnv1a;
use vecring_core::{
    internal::abi, Consumer, Geometry, HugepagePolicy, Producer, Region, RegionOptions, RingStorage,
};

/// Frame lengths measured.
pub const FRAME_SIZES: [usize; 4] = [64, 256, 1514, 9000];
/// Frames per publication measured.
pub const BATCHES: [usize; 2] = [1, 32];
/// CPU of the producer (the benchmark's own thread).
pub const PRODUCER_CPU: usize = 0;
/// CPU of the consumer thread.
pub const CONSUMER_CPU: usize = 1;
/// Distinct source frames the producers copy from, in turn.
pub const SOURCE_FRAMES: usize = 32;

/// The ring geometry measured: the project's default ([`Geometry::DEFAULT`],
/// 32768 slots of 64 bytes), unless the environment variable
/// `VECRING_BENCH_GEOMETRY` says `SLOTSxSLOT_SIZE` (e.g. `8192x256`).
///
/// # Panics
/// If the variable is set to something that is not a valid geometry.
pub fn geometry() -> Geometry {
    let Ok(spec) = std::env::var("VECRING_BENCH_GEOMETRY") else {
        return Geometry::DEFAULT;
    };
    let parsed = spec
        .split_once('x')
        .and_then(|(n, s)| Some((n.parse().ok()?, s.parse().ok()?)));
    let (slots, size) =
        parsed.unwrap_or_else(|| panic!("VECRING_BENCH_GEOMETRY={spec}: want SLOTSxSIZE"));
    Geometry::new(slots, size).unwrap_or_else(|e| panic!("VECRING_BENCH_GEOMETRY={spec}: {e}"))
}

/// Pins the calling thread to `cpu`.
///
/// # Errors
/// The OS error if the CPU does not exist or is not allowed.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET only sets a bit inside `set`, ignoring CPUs beyond
    // the set's size.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid set of the
    // size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// [`SOURCE_FRAMES`] frames of one length, back to back.
#[derive(Clone)]
pub struct Source {
    bytes: Vec<u8>,
    len: usize,
}

impl Source {
    /// Frames of `len` bytes; all hold the same pattern (so that a digest
    /// does not depend on which frame was sent), at distinct addresses.
    pub fn new(len: usize) -> Self {
        let bytes = (0..SOURCE_FRAMES)
            .flat_map(|_| (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(7)))
            .collect();
        Source { bytes, len }
    }

    /// The frame length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: frames carry at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Frame `i` (modulo [`SOURCE_FRAMES`]).
    #[inline]
    pub fn frame(&self, i: usize) -> &[u8] {
        let start = (i % SOURCE_FRAMES) * self.len;
        &self.bytes[start..start + self.len]
    }
}

/// Reads every byte of `bytes` (eight 64-bit lanes per cache line, which
/// the compiler vectorises) and returns their wrapping sum as words: the
/// in-place consumers' stand-in for looking at a frame.
#[inline]
pub fn touch(bytes: &[u8]) -> u64 {
    let mut lanes = [0u64; 8];
    let mut lines = bytes.chunks_exact(64);
    for line in &mut lines {
        for (lane, word) in lanes.iter_mut().zip(line.chunks_exact(8)) {
            *lane = lane.wrapping_add(u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
    }
    let mut sum = lanes.iter().fold(0u64, |a, &l| a.wrapping_add(l));
    let mut words = lines.remainder().chunks_exact(8);
    for word in &mut words {
        sum = sum.wrapping_add(u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    for &b in words.remainder() {
        sum = sum.wrapping_add(u64::from(b));
    }
    sum
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Candidate {
    /// vecring, `send`/`send_batch` and `recv`/`recv_batch`.
    VecringCopy,
    /// vecring, `write_chunk`+`push_with` and `read_chunk`+`next_frame`.
    VecringZeroCopy,
    /// As [`Candidate::VecringZeroCopy`], the consumer with
    /// [`HoldBack::STREAMING`](vecring_core::HoldBack::STREAMING).
    VecringZeroCopyHold,
    /// rtrb, chunk write, each frame copied out by the consumer.
    RtrbCopy,
    /// rtrb, chunk write, each frame read in place by the consumer.
    RtrbZeroCopy,
    /// rtrb carrying length-prefixed byte messages, each copied out.
    RtrbBytesCopy,
    /// rtrb carrying length-prefixed byte messages, each read in place.
    RtrbBytesZeroCopy,
    /// One thread copying the frames into hugepage slots.
    Memcpy,
}

impl Candidate {
    /// Every candidate, in report order.
    pub const ALL: [Candidate; 8] = [
        Candidate::VecringCopy,
        Candidate::VecringZeroCopy,
        Candidate::VecringZeroCopyHold,
        Candidate::RtrbCopy,
        Candidate::RtrbZeroCopy,
        Candidate::RtrbBytesCopy,
        Candidate::RtrbBytesZeroCopy,
        Candidate::Memcpy,
    ];

    /// Short name used in reports and criterion ids.
    pub fn name(self) -> &'static str {
        match self {
            Candidate::VecringCopy => "vecring-copy",
            Candidate::VecringZeroCopy => "vecring-zc",
            Candidate::VecringZeroCopyHold => "vecring-zc-hold",
            Candidate::RtrbCopy => "rtrb-copy",
            Candidate::RtrbZeroCopy => "rtrb-zc",
            Candidate::RtrbBytesCopy => "rtrb-bytes-copy",
            Candidate::RtrbBytesZeroCopy => "rtrb-bytes-zc",
            Candidate::Memcpy => "memcpy",
        }
    }
}

/// Frames of `len` bytes the ring holds at once (the rtrb peer gets the
/// same capacity).
pub fn frames_in_flight(len: usize) -> usize {
    let g = geometry();
    (g.slot_count() / g.slots_for(len)) as usize
}

/// Bytes of one vecring ring's data area in [`geometry()`] (the rtrb
/// byte-message peer's capacity).
pub fn ring_data_bytes() -> usize {
    let g = geometry();
    g.slot_count() as usize * g.slot_size() as usize
}

/// The hugepage policy of the benchmarks' regions: `VECRING_BENCH_HUGEPAGES`
/// (`prefer`, `require` or `never`), `prefer` when unset.
///
/// # Panics
/// If the variable holds anything else.
pub fn hugepage_policy() -> HugepagePolicy {
    match std::env::var("VECRING_BENCH_HUGEPAGES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|e| panic!("VECRING_BENCH_HUGEPAGES: {e}")),
        Err(_) => HugepagePolicy::Prefer,
    }
}

/// A fresh shared-memory region for [`geometry()`], with the
/// [`hugepage_policy()`].
///
/// # Panics
/// If the region cannot be created.
pub fn region() -> Arc<Region> {
    let opts = RegionOptions {
        hugepages: hugepage_policy(),
        numa_node: None,
    };
    Arc::new(Region::create(geometry(), 1, 1, &opts).expect("create the shared-memory region"))
}

/// Where the consumer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On its own thread pinned to [`CONSUMER_CPU`] (the caller pins
    /// itself to [`PRODUCER_CPU`]): what is measured.
    Pinned,
    /// On its own thread, wherever the OS puts it (tests).
    Unpinned,
    /// On the caller's thread, alternating with the producer, a batch at a
    /// time: the CPU cost of the ring code without any cross-core traffic
    /// (a diagnostic, not a result).
    SameThread,
}

fn link<T: Tx + 'static, R: Rx>(tx: T, rx: R, placement: Placement) -> Box<dyn Link> {
    match placement {
        Placement::Pinned => Box::new(Pipeline::new(tx, rx, Some(CONSUMER_CPU))),
        Placement::Unpinned => Box::new(Pipeline::new(tx, rx, None)),
        Placement::SameThread => Box::new(SameThread::new(tx, rx)),
    }
}

/// Builds `candidate` for frames of `len` bytes in batches of `batch`.
///
/// # Panics
/// If `len` is not one of [`FRAME_SIZES`] (the rtrb peer and the copying
/// consumers' buffers need it as a constant), or the region cannot be
/// created.
pub fn build(
    candidate: Candidate,
    len: usize,
    batch: usize,
    placement: Placement,
) -> Box<dyn Link> {
    match len {
        64 => build_sized::<64>(candidate, batch, placement),
        256 => build_sized::<256>(candidate, batch, placement),
        1514 => build_sized::<1514>(candidate, batch, placement),
        9000 => build_sized::<9000>(candidate, batch, placement),
        _ => panic!("workloads are built for {FRAME_SIZES:?} only, not {len}"),
    }
}

fn build_sized<const N: usize>(
    candidate: Candidate,
    batch: usize,
    placement: Placement,
) -> Box<dyn Link> {
    let source = Source::new(N);
    // Every ring candidate's producer sends from the same array of
    // `[u8; N]` frames.
    let frames: Vec<[u8; N]> = (0..SOURCE_FRAMES)
        .map(|i| source.frame(i).try_into().expect("N-byte frame"))
        .collect();
    match candidate {
        Candidate::VecringCopy | Candidate::VecringZeroCopy | Candidate::VecringZeroCopyHold => {
            if std::env::var_os("VECRING_BENCH_HEAP").is_some() {
                let (tx, rx) = vecring_core::heap_channel(geometry());
                return vecring_link::<_, N>(candidate, tx, rx, frames, batch, placement);
            }
            let ring = region().ring(abi::RING_MASTER_TO_SLAVE);
            // SAFETY: a fresh region; these are its ring's only producer and
            // consumer.
            let (tx, rx) = unsafe {
                (
                    Producer::attach(ring.clone()).expect("fresh ring"),
                    Consumer::attach(ring).expect("fresh ring"),
                )
            };
            vecring_link::<_, N>(candidate, tx, rx, frames, batch, placement)
        }
        Candidate::RtrbCopy | Candidate::RtrbZeroCopy => {
            let mode = if candidate == Candidate::RtrbCopy {
                RtrbMode::Copy
            } else {
                RtrbMode::InPlace
            };
            let (tx, rx) = rtrb_pair::<N>(frames_in_flight(N), &frames, batch, mode);
            link(tx, rx, placement)
        }
        Candidate::RtrbBytesCopy | Candidate::RtrbBytesZeroCopy => {
            let mode = if candidate == Candidate::RtrbBytesCopy {
                RtrbMode::Copy
            } else {
                RtrbMode::InPlace
            };
            let (tx, rx) = rtrb_bytes_pair::<N>(ring_data_bytes(), &frames, batch, mode);
            link(tx, rx, placement)
        }
        Candidate::Memcpy => Box::new(Memcpy::new(source)),
    }
}

fn vecring_link<S: RingStorage + 'static, const N: usize>(
    candidate: Candidate,
    tx: Producer<S>,
    mut rx: Consumer<S>,
    frames: Vec<[u8; N]>,
    batch: usize,
    placement: Placement,
) -> Box<dyn Link> {
    if candidate == Candidate::VecringZeroCopyHold {
        rx.set_hold_back(Some(vecring_core::HoldBack::STREAMING));
    }
    if candidate == Candidate::VecringCopy {
        link(
            vecring::CopyTx::new(tx, frames, batch),
            vecring::CopyRx::<_, N>::new(rx, batch),
            placement,
        )
    } else {
        link(
            vecring::ZeroCopyTx::<_, N>::new(tx, frames, batch),
            vecring::ZeroCopyRx::<_, N>::new(rx, batch),
            placement,
        )
    }
}

/// The ceiling: one thread copying each frame into the next frame-sized
/// run of slots of a hugepage region, as the ring's producer does, with no
/// consumer and no ring protocol.
pub struct Memcpy {
    _region: Arc<Region>,
    ring: vecring_core::memory::RegionRing,
    source: Source,
    stride: usize,
    positions: usize,
    next: usize,
    frames: u64,
}

impl Memcpy {
    /// Copies of `source` into a fresh region's first ring.
    pub fn new(source: Source) -> Self {
        let region = region();
        let ring = region.ring(abi::RING_MASTER_TO_SLAVE);
        let g = region.geometry();
        let stride = g.slots_for(source.len()) as usize * g.slot_size() as usize;
        Memcpy {
            _region: region,
            ring,
            positions: frames_in_flight(source.len()),
            source,
            stride,
            next: 0,
            frames: 0,
        }
    }
}

impl Link for Memcpy {
    fn run(&mut self, frames: u64) -> Duration {
        let data = self.ring.data();
        let len = self.source.len();
        self.frames += frames;
        let start = Instant::now();
        for i in 0..frames as usize {
            let frame = self.source.frame(i);
            // SAFETY: `next < positions` and `positions * stride` is at most
            // the ring's data area (`RingStorage` contract); nothing else
            // uses this region, and the source is a separate allocation.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    frame.as_ptr(),
                    data.add(self.next * self.stride),
                    len,
                )
            };
            self.next += 1;
            if self.next == self.positions {
                self.next = 0;
            }
        }
        start.elapsed()
    }

    fn finish(self: Box<Self>) -> Finished {
        let len = self.source.len();
        // SAFETY: slot 0 holds `len` bytes written by `run` (or zeroes);
        // inside the data area as above.
        let slot0 = unsafe { core::slice::from_raw_parts(self.ring.data(), len) };
        Finished {
            digest: fnv1a(slot0),
            frames: self.frames,
            ..Finished::default()
        }
    }
}

/// Whether a region created now gets hugepages (for the reports).
pub fn hugepages_available() -> bool {
    region().hugepages()
}

/// Frames moved per second and bytes per second (10^9 for GB/s) of a run
/// of `frames` frames of `len` bytes that took `elapsed`.
pub fn rates(frames: u64, len: usize, elapsed: Duration) -> (f64, f64) {
    let secs = elapsed.as_secs_f64();
    let fps = frames as f64 / secs;
    (fps, fps * len as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every workload delivers exactly the frames sent, with their bytes
    /// intact (not a speed test: the threads are not pinned).
    #[test]
    fn every_workload_delivers_the_frames() {
        // A workload whose consumer stops making progress would spin
        // forever: fail instead.
        let _watchdog = vecring_tests::Watchdog::new(
            "every_workload_delivers_the_frames",
            Duration::from_secs(120),
        );
        for len in FRAME_SIZES {
            let pattern = Source::new(len);
            let frame = pattern.frame(0);
            for batch in BATCHES {
                for (candidate, placement) in Candidate::ALL
                    .into_iter()
                    .flat_map(|c| [(c, Placement::Unpinned), (c, Placement::SameThread)])
                {
                    let frames = 3000;
                    let mut link = build(candidate, len, batch, placement);
                    link.run(frames);
                    link.run(frames);
                    let done = link.finish();
                    assert_eq!(done.frames, 2 * frames);
                    let digest = done.digest;
                    let expected = match candidate {
                        Candidate::VecringZeroCopy
                        | Candidate::VecringZeroCopyHold
                        | Candidate::RtrbZeroCopy
                        | Candidate::RtrbBytesZeroCopy => touch(frame).wrapping_mul(2 * frames),
                        _ => fnv1a(frame),
                    };
                    assert_eq!(
                        digest,
                        expected,
                        "{} len {len} batch {batch}",
                        candidate.name()
                    );
                }
            }
        }
    }
}
