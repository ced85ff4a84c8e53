//! A hostile peer scribbles random and crafted values over the fields the
//! honest side validates (the consumer: the slot descriptors, mostly with
//! the stamp that publishes them, and the producer's index, which it must
//! ignore; the producer: the consumer's index), and now and then over
//! slot data and the wait lines the honest side reads after each index
//! store, while the honest side keeps calling the API, on each ring of
//! the region, in a small geometry and in the default one, and on rings of
//! other queues in a region of four queue pairs, until every kind of
//! corruption each side checks for has been detected (at most
//! [`RUN_MAX`]). The region is mapped between inaccessible guard areas,
//! and while the attack runs every whole page of it outside the attacked
//! ring is made inaccessible too, so any read or write outside the ring
//! but for the two pages it shares with its neighbours crashes this test;
//! every byte of the region outside the ring (those two pages included)
//! is checked unchanged afterwards.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::internal::abi::{self, RingControl, SlotDesc, SLOT_FLAG_MORE};
use vecring_core::memory::{HugepagePolicy, Region, RegionOptions};
use vecring_core::{
    Consumer, Corruption, Geometry, Producer, PushError, RecvError, RingStorage, SendError,
};
use vecring_tests::Watchdog;

const GUARD: usize = 1 << 20;

/// One ring of a region, mapped at a fresh address with PROT_NONE guard areas
/// of 1 MiB on both sides.
#[derive(Clone)]
struct GuardedRing(Arc<GuardedMap>);

struct GuardedMap {
    reservation: *mut u8,
    total: usize,
    region: *mut u8,
    len: usize,
    geometry: Geometry,
    ring: usize,
    _owner: Region,
}

// SAFETY: the mapping is process-wide and accessed atomically or through
// the ring protocol.
unsafe impl Send for GuardedMap {}
// SAFETY: as above.
unsafe impl Sync for GuardedMap {}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the reservation made in `new`.
        unsafe { libc::munmap(self.reservation.cast(), self.total) };
    }
}

impl GuardedRing {
    /// Ring `ring` of a fresh region of `queues` queue pairs of `geometry`.
    fn new(geometry: Geometry, queues: u16, ring: usize) -> Self {
        let opts = RegionOptions {
            hugepages: HugepagePolicy::Never,
            numa_node: None,
        };
        let region = Region::create(geometry, queues, 1, &opts).unwrap();
        assert!(ring < abi::ring_count(queues) as usize);
        let len = region.size();
        let total = len + 2 * GUARD;
        // SAFETY: a fresh anonymous reservation, checked below.
        let reservation = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                total,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(reservation, libc::MAP_FAILED);
        // SAFETY: MAP_FIXED replaces the middle of our own reservation.
        let region_ptr = unsafe {
            libc::mmap(
                reservation.cast::<u8>().add(GUARD).cast(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                region.fd().as_raw_fd(),
                0,
            )
        };
        assert_ne!(region_ptr, libc::MAP_FAILED);
        GuardedRing(Arc::new(GuardedMap {
            reservation: reservation.cast(),
            total,
            region: region_ptr.cast(),
            len,
            geometry,
            ring,
            _owner: region,
        }))
    }

    /// The attacked ring's bytes, as a range of offsets in the region.
    fn span(&self) -> std::ops::Range<usize> {
        let g = self.0.geometry;
        let at = abi::ring_offset(self.0.ring, g.slot_count(), g.slot_size()) as usize;
        at..at + abi::ring_area_size(g.slot_count(), g.slot_size()) as usize
    }

    fn area(&self) -> *mut u8 {
        // SAFETY: the ring's area lies inside the mapped region.
        unsafe { self.0.region.add(self.span().start) }
    }

    /// Makes every whole page of the region outside the attacked ring
    /// inaccessible (`PROT_NONE`), or accessible again (`open`).
    fn fence(&self, open: bool) {
        let page = 4096;
        let span = self.span();
        let prot = if open {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_NONE
        };
        let below = span.start / page * page;
        let above = span.end.next_multiple_of(page);
        for (from, to) in [(0, below), (above, self.0.len)] {
            if to > from {
                // SAFETY: whole pages of our own mapping of the region.
                let rc = unsafe { libc::mprotect(self.0.region.add(from).cast(), to - from, prot) };
                assert_eq!(rc, 0, "mprotect: {}", std::io::Error::last_os_error());
            }
        }
    }

    /// A checksum (FNV-1a) of every byte of the region outside the attacked
    /// ring: the header, the other ring, the padding.
    fn outside_sum(&self) -> u64 {
        // SAFETY: the whole region is mapped for `len` bytes and only the
        // attacked ring's span changes while the test runs.
        let all = unsafe { core::slice::from_raw_parts(self.0.region, self.0.len) };
        let span = self.span();
        let outside: Vec<u8> = all[..span.start]
            .iter()
            .chain(&all[span.end..])
            .copied()
            .collect();
        vecring_core::test_support::pattern::fnv1a(&outside)
    }
}

// SAFETY: pointers derived from the region's own layout functions, inside
// a mapping kept alive by the Arc.
unsafe impl RingStorage for GuardedRing {
    fn control(&self) -> &RingControl {
        // SAFETY: see impl.
        unsafe { &*(self.area() as *const RingControl) }
    }
    fn descs(&self) -> &[SlotDesc] {
        // SAFETY: see impl.
        unsafe {
            core::slice::from_raw_parts(
                self.area().add(abi::DESC_OFFSET as usize) as *const SlotDesc,
                self.0.geometry.slot_count() as usize,
            )
        }
    }
    fn data(&self) -> *mut u8 {
        // SAFETY: see impl.
        unsafe {
            self.area()
                .add(abi::data_offset(self.0.geometry.slot_count()) as usize)
        }
    }
    fn geometry(&self) -> Geometry {
        self.0.geometry
    }
}

/// A field of the ring a hostile peer can write.
#[derive(Clone, Copy, Debug)]
enum Field {
    /// The producer's index (validated by the consumer).
    Head,
    /// The consumer's index (validated by the producer).
    Tail,
    /// A slot descriptor: length and flags (validated by the consumer).
    Desc,
    /// Slot data (opaque to both sides).
    Data,
    /// The peer's wait line (state and ack), read by the honest side after
    /// each of its index stores: the producer's when the honest side is
    /// the consumer, and the consumer's when it is the producer.
    Wait,
}

/// What the scribbler attacks when the honest side is the consumer, and the
/// share of scribbles each gets.
const VS_CONSUMER: &[(Field, u32)] = &[
    (Field::Head, 3),
    (Field::Desc, 6),
    (Field::Data, 1),
    (Field::Wait, 1),
];
/// ... and when the honest side is the producer, which reads nothing of
/// the peer's but its index.
const VS_PRODUCER: &[(Field, u32)] = &[(Field::Tail, 9), (Field::Data, 1), (Field::Wait, 1)];

/// The kind of a detected corruption, as the tests count them.
fn kind(c: &Corruption) -> &'static str {
    match c {
        Corruption::Index { .. } => "index",
        Corruption::Length { .. } => "length",
        Corruption::Flags { .. } => "flags",
        Corruption::FrameTooLong { .. } => "frame too long",
        Corruption::Truncated { .. } => "truncated",
    }
}

/// One scribble: a random or crafted value into one of `fields`, picked by
/// weight.
fn scribble(ring: &GuardedRing, rng: &mut SmallRng, fields: &[(Field, u32)]) {
    let g = ring.geometry();
    let crafted = [
        0u64,
        1,
        u64::MAX,
        u64::MAX / 2,
        g.slot_count() as u64,
        g.slot_count() as u64 + 1,
        1 << 63,
    ];
    let value = |rng: &mut SmallRng| {
        if rng.gen_bool(0.5) {
            crafted[rng.gen_range(0..crafted.len())]
        } else {
            rng.gen()
        }
    };
    let total: u32 = fields.iter().map(|&(_, w)| w).sum();
    let mut pick = rng.gen_range(0..total);
    let field = fields
        .iter()
        .find(|&&(_, w)| {
            let here = pick < w;
            pick = pick.saturating_sub(w);
            here
        })
        .unwrap()
        .0;
    match field {
        Field::Head => {
            let cur = ring.control().head.index.load(Ordering::Relaxed);
            let tail = ring.control().tail.index.load(Ordering::Relaxed);
            let v = match rng.gen_range(0..3) {
                // Plausible: a few slots published, whose descriptors the
                // consumer then checks.
                0 => tail.wrapping_add(rng.gen_range(1..=64)),
                1 => cur.wrapping_add(rng.gen_range(0..3 * g.slot_count() as u64)),
                _ => value(rng),
            };
            ring.control().head.index.store(v, Ordering::Release)
        }
        Field::Tail => {
            let cur = ring.control().tail.index.load(Ordering::Relaxed);
            let v = if rng.gen_bool(0.7) {
                cur.wrapping_add(rng.gen_range(0..g.slot_count() as u64 / 2))
            } else {
                value(rng)
            };
            ring.control().tail.index.store(v, Ordering::Release)
        }
        Field::Desc => {
            // Mostly the slots the consumer reads next (in a large ring a
            // random slot is rarely one it reaches).
            let slot = if rng.gen_bool(0.7) {
                let tail = ring.control().tail.index.load(Ordering::Relaxed);
                (tail.wrapping_add(rng.gen_range(0..64)) % u64::from(g.slot_count())) as usize
            } else {
                rng.gen_range(0..g.slot_count() as usize)
            };
            let len: u16 = match rng.gen_range(0..4) {
                0 => g.slot_size() as u16,
                1 => rng.gen_range(0..=g.slot_size() as u16 + 1),
                _ => rng.gen(),
            };
            let flags: u16 = match rng.gen_range(0..3) {
                0 => SLOT_FLAG_MORE,
                1 => 0,
                _ => rng.gen(),
            };
            // Mostly the stamp that publishes it from the consumer's lap;
            // else the lap before's or after's, or any.
            let tail = ring.control().tail.index.load(Ordering::Relaxed);
            let count = u64::from(g.slot_count());
            let index = tail.wrapping_add((slot as u64).wrapping_sub(tail) & (count - 1));
            let stamp = SlotDesc::stamp(index, g.slot_count().trailing_zeros());
            let stamp = match rng.gen_range(0..10) {
                0 => stamp.wrapping_sub(abi::DESC_STAMP_ONE),
                1 => stamp.wrapping_add(abi::DESC_STAMP_ONE),
                2 => value(rng) & abi::DESC_STAMP_MASK,
                _ => stamp,
            };
            ring.descs()[slot]
                .0
                .store(SlotDesc::pack(len, flags) | stamp, Ordering::Release);
        }
        Field::Wait => {
            // Both lines: the scribbler cannot tell which side is honest
            // from here, and writing its own line is harmless.
            for line in [&ring.control().consumer_wait, &ring.control().producer_wait] {
                line.state.store(value(rng), Ordering::Relaxed);
                line.ack.store(rng.gen(), Ordering::Relaxed);
            }
        }
        Field::Data => {
            let at = rng.gen_range(0..(g.slot_count() * g.slot_size()) as usize);
            // SAFETY: inside the data area.
            unsafe { ring.data().add(at).write_volatile(rng.gen()) };
        }
    }
}

fn run_scribbler(
    ring: GuardedRing,
    stop: Arc<AtomicBool>,
    fields: &'static [(Field, u32)],
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let mut n = 0;
        while !stop.load(Ordering::Relaxed) {
            scribble(&ring, &mut rng, fields);
            n += 1;
            if n % 4 == 0 {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
        n
    })
}

fn reset(ring: &GuardedRing) {
    ring.control().head.index.store(0, Ordering::Relaxed);
    ring.control().tail.index.store(0, Ordering::Relaxed);
}

/// The shortest attack, even once every corruption kind has been seen.
const RUN_MIN: Duration = Duration::from_secs(1);
/// The longest: an attack that has not produced every kind by then fails.
const RUN_MAX: Duration = Duration::from_secs(30);

/// The corruption kinds the consumer reports while reading a hostile
/// producer's ring. (It reads no producer index. "truncated", a frame
/// found published and then taken back, needs a search ahead before the
/// read and the peer's write between them; the ring's unit tests make it.)
const CONSUMER_KINDS: [&str; 3] = ["length", "flags", "frame too long"];

/// Reads with the consumer call picked by `i` (every read path in turn):
/// how many frames, each of a valid length, every byte of it read.
fn read_some<S: RingStorage>(
    rx: &mut Consumer<S>,
    buf: &mut [u8],
    bufs: &mut [Vec<u8>],
    i: usize,
) -> Result<u64, RecvError> {
    let valid = |len: usize| assert!((1..=9216).contains(&len), "length {len} accepted");
    let read_all = |f: &vecring_core::Frame<'_>| {
        valid(f.len());
        let bytes: usize = f
            .segments()
            .map(|s| s.iter().map(|&b| b as usize).sum::<usize>())
            .sum();
        std::hint::black_box(bytes);
        assert_eq!(f.segments().map(|s| s.len()).sum::<usize>(), f.len());
    };
    match i % 5 {
        0 => rx.recv(buf).map(|n| {
            valid(n);
            1
        }),
        1 => {
            let mut lens = [0usize; 8];
            let n = rx.recv_batch(bufs, &mut lens)?;
            lens[..n].iter().for_each(|&l| valid(l));
            if n == 0 {
                return Err(RecvError::Empty);
            }
            Ok(n as u64)
        }
        2 => {
            let mut chunk = rx.read_chunk(8)?;
            let mut n = 0;
            while let Some(f) = chunk.next_frame()? {
                read_all(&f);
                n += 1;
            }
            Ok(n)
        }
        3 => {
            // Runs of one-slot frames (the scribbler's favourite length)
            // as arrays, others frame by frame.
            let mut chunk = rx.read_chunk(8)?;
            let mut n = 0;
            while let Some(run) = chunk.next_run()? {
                match run.into_arrays::<256>() {
                    Ok(arrays) => {
                        for bytes in arrays {
                            std::hint::black_box(bytes.iter().map(|&b| b as usize).sum::<usize>());
                            n += 1;
                        }
                    }
                    Err(run) => {
                        for f in run {
                            read_all(&f);
                            n += 1;
                        }
                    }
                }
            }
            Ok(n)
        }
        _ => {
            let mut chunk = rx.read_chunk(8)?;
            let mut n = 0;
            while let Some(run) = chunk.next_run()? {
                let len = run.frame_len();
                for f in run {
                    assert_eq!(f.len(), len);
                    read_all(&f);
                    n += 1;
                }
            }
            Ok(n)
        }
    }
}

/// The geometries, queue counts and rings attacked: a small ring that
/// wraps often, and the default geometry a link gets, each ring of a
/// one-queue region; and in a four-queue region of the small geometry, a
/// ring between other queues' rings and the last ring.
fn targets() -> Vec<(Geometry, u16, usize)> {
    let small = Geometry::new(128, 256).unwrap();
    let mut t = Vec::new();
    for g in [small, Geometry::default()] {
        for ring in [abi::RING_MASTER_TO_SLAVE, abi::RING_SLAVE_TO_MASTER] {
            t.push((g, 1, ring));
        }
    }
    t.push((small, 4, abi::ring_index(2, abi::Dir::SlaveToMaster)));
    t.push((small, 4, abi::ring_index(3, abi::Dir::SlaveToMaster)));
    t
}

/// One honest consumer against a hostile producer on `ring` of a region of
/// `geometry`; returns the kinds of corruption the consumer detected while
/// reading (attach refusals do not count).
fn hostile_producer(geometry: Geometry, queues: u16, ring_index: usize) -> BTreeSet<&'static str> {
    let ring = GuardedRing::new(geometry, queues, ring_index);
    let outside = ring.outside_sum();
    ring.fence(false);
    let stop = Arc::new(AtomicBool::new(false));
    let scribbler = run_scribbler(ring.clone(), Arc::clone(&stop), VS_CONSUMER);
    let mut kinds = BTreeSet::new();
    let (mut corruptions, mut frames, mut reattached, mut refused) = (0u64, 0u64, 0u64, 0u64);
    let mut buf = vec![0u8; 9216];
    let mut bufs = vec![vec![0u8; 9216]; 8];
    let start = Instant::now();
    let all_seen = |k: &BTreeSet<&str>| CONSUMER_KINDS.iter().all(|w| k.contains(w));
    while start.elapsed() < RUN_MAX && !(start.elapsed() >= RUN_MIN && all_seen(&kinds)) {
        // A new generation starts from clean indices, as the link does.
        reset(&ring);
        // SAFETY: the only consumer in this process.
        let Ok(mut rx) = (unsafe { Consumer::attach(ring.clone()) }) else {
            refused += 1;
            continue;
        };
        reattached += 1;
        for i in 0..1000 {
            match read_some(&mut rx, &mut buf, &mut bufs, i) {
                Ok(n) => frames += n,
                Err(RecvError::Empty) => {}
                Err(RecvError::BufferTooSmall { needed }) => {
                    panic!("frame of {needed} > 9216 accepted")
                }
                Err(RecvError::Corrupt(c)) => {
                    // Sticky: the same error again, without touching memory.
                    assert!(matches!(rx.recv(&mut buf), Err(RecvError::Corrupt(_))));
                    assert!(rx.read_chunk(8).is_err());
                    assert!(rx.stats().corruptions > 0, "counted in the stats");
                    corruptions += 1;
                    kinds.insert(kind(&c));
                    break;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let scribbles = scribbler.join().unwrap();
    ring.fence(true);
    eprintln!(
        "{geometry:?} ring {ring_index}: {scribbles} scribbles in {:?}, {reattached} attaches \
         ({refused} refused), {frames} frames, {corruptions} corruptions while reading: {kinds:?}",
        start.elapsed()
    );
    assert_eq!(
        ring.outside_sum(),
        outside,
        "the consumer wrote outside its ring"
    );
    kinds
}

#[test]
fn honest_consumer_survives_a_hostile_producer() {
    let _watchdog = Watchdog::new("hostile producer", Duration::from_secs(240));
    for (geometry, queues, ring) in targets() {
        let kinds = hostile_producer(geometry, queues, ring);
        // Every check of a descriptor the consumer makes is seen failing
        // while reading, and none of the producer's index.
        assert!(
            !kinds.contains("index"),
            "the consumer read the producer's index"
        );
        for want in CONSUMER_KINDS {
            assert!(
                kinds.contains(want),
                "{geometry:?} ring {ring} of {queues} queues: no '{want}' corruption detected while reading ({kinds:?})"
            );
        }
    }
}

/// Writes `frame` with the producer call picked by `i` (every write path
/// in turn); how many frames went.
fn write_some<S: RingStorage>(
    tx: &mut Producer<S>,
    frame: &[u8],
    slot: usize,
    i: usize,
) -> Result<u64, SendError> {
    let len = frame.len();
    match i % 4 {
        0 => tx.send(frame).map(|()| 1),
        1 => tx.send_batch([frame, frame, frame]).map(|n| n as u64),
        2 => {
            let mut chunk = tx.write_chunk(len.div_ceil(slot) * 2)?;
            chunk.push_with(len, |w| {
                assert_eq!(w.append(frame), len);
            })?;
            Ok(chunk.commit() as u64)
        }
        _ => {
            let mut chunk = tx.write_chunk(len.div_ceil(slot) * 3)?;
            chunk.push_run(len, 3, |_, w| {
                assert_eq!(w.append(frame), len);
            })?;
            Ok(chunk.commit() as u64)
        }
    }
}

/// One honest producer against a hostile consumer on `ring` of a region
/// of `geometry`; returns the corruptions detected while sending (attach
/// refusals do not count).
fn hostile_consumer(geometry: Geometry, queues: u16, ring_index: usize) -> u64 {
    let ring = GuardedRing::new(geometry, queues, ring_index);
    let outside = ring.outside_sum();
    ring.fence(false);
    let stop = Arc::new(AtomicBool::new(false));
    let scribbler = run_scribbler(ring.clone(), Arc::clone(&stop), VS_PRODUCER);
    let (mut corruptions, mut sent, mut refused) = (0u64, 0u64, 0u64);
    let frame = vec![0xabu8; 9216];
    let start = Instant::now();
    let mut rng = SmallRng::seed_from_u64(7);
    let slot = geometry.slot_size() as usize;
    while start.elapsed() < RUN_MAX && !(start.elapsed() >= RUN_MIN && corruptions > 0) {
        reset(&ring);
        // SAFETY: the only producer in this process.
        let Ok(mut tx) = (unsafe { Producer::attach(ring.clone()) }) else {
            refused += 1;
            continue;
        };
        for i in 0..1000 {
            let len = rng.gen_range(1..=9216);
            match write_some(&mut tx, &frame[..len], slot, i) {
                Ok(n) => sent += n,
                Err(SendError::Push(PushError::Full)) => {}
                Err(SendError::Push(e)) => panic!("{e}"),
                Err(SendError::Corrupt(c)) => {
                    // The producer validates only the consumer's index.
                    assert_eq!(kind(&c), "index", "{c:?}");
                    assert!(tx.write_chunk(4).is_err());
                    corruptions += 1;
                    break;
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    scribbler.join().unwrap();
    ring.fence(true);
    eprintln!(
        "{geometry:?} ring {ring_index}: {sent} frames sent in {:?}, {refused} attaches refused, \
         {corruptions} corruptions while sending",
        start.elapsed()
    );
    assert_eq!(
        ring.outside_sum(),
        outside,
        "the producer wrote outside its ring"
    );
    corruptions
}

#[test]
fn honest_producer_survives_a_hostile_consumer() {
    let _watchdog = Watchdog::new("hostile consumer", Duration::from_secs(240));
    for (geometry, queues, ring) in targets() {
        assert!(
            hostile_consumer(geometry, queues, ring) > 0,
            "{geometry:?} ring {ring} of {queues} queues: the scribbler never caused a corruption detected while sending"
        );
    }
}
