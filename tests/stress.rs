//! Two threads move at least 10 million frames of random sizes through a
//! memfd-backed region mapped twice (as two processes would), proving that
//! none is lost, duplicated, reordered or altered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use vecring_core::memory::{Expectation, Region, RegionOptions, HUGEPAGE_SIZE};
use vecring_core::ring::EndpointStats;
use vecring_core::{internal::abi, Consumer, Geometry, Producer, RingStorage};
use vecring_tests::{check_frame, fill_frame, frame_len, hugepages_required, Watchdog};

const FRAMES: u64 = 10_000_000;
const BATCH: usize = 32;

/// A memfd region with the default geometry on 2 MiB hugepages (as a link
/// gets it), mapped twice (as the master and the slave process would).
fn region_pair() -> (Arc<Region>, Arc<Region>) {
    let geometry = Geometry::default();
    let pages = abi::align_up(geometry.min_region_size(1), HUGEPAGE_SIZE) / HUGEPAGE_SIZE;
    let opts = RegionOptions {
        hugepages: hugepages_required(pages),
        numa_node: None,
    };
    let master = Arc::new(Region::create(geometry, 1, 1, &opts).unwrap());
    assert!(master.hugepages());
    let fd = master.fd().try_clone_to_owned().unwrap();
    let slave = Arc::new(
        Region::attach(
            fd,
            &Expectation {
                geometry: Some(geometry),
                generation: Some(1),
                ..Expectation::default()
            },
        )
        .unwrap(),
    );
    (master, slave)
}

/// Set while the consuming (test) thread runs; cleared when it returns or
/// panics, so that the producer stops instead of spinning on a full ring
/// until the watchdog.
struct Alive(Arc<AtomicBool>);

impl Alive {
    fn new() -> (Self, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(true));
        (Alive(Arc::clone(&flag)), flag)
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        // Relaxed: a stop flag; no data is published through it.
        self.0.store(false, Ordering::Relaxed);
    }
}

/// The producer thread as the consumer's spin loop watches it.
struct Producing<T> {
    thread: Option<JoinHandle<T>>,
    result: Option<T>,
}

impl<T> Producing<T> {
    fn new(thread: JoinHandle<T>) -> Self {
        Producing {
            thread: Some(thread),
            result: None,
        }
    }

    /// Called when a read found nothing while frame `expected` is still
    /// due: fails with the producer's panic if it died, and fails if it had
    /// already finished before this read (after the join everything it
    /// published is visible, so an empty read means frames are missing).
    fn idle(&mut self, expected: u64) {
        assert!(
            self.result.is_none(),
            "the producer finished, but frame {expected} never arrived"
        );
        if self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            match self.thread.take().unwrap().join() {
                Ok(r) => self.result = Some(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    }

    /// The producer's result, once the consumer has everything.
    fn finish(mut self) -> T {
        match self.result.take() {
            Some(r) => r,
            None => self.thread.take().unwrap().join().unwrap(),
        }
    }
}

/// Frame `expected` arrived as `bytes`: `len` long and intact.
fn expect_frame(bytes: &[u8], len: usize, expected: u64) {
    assert_eq!(bytes.len(), len, "frame {expected}: length");
    let seq = check_frame(bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(seq, expected, "lost, duplicated or reordered");
}

/// The producer sent `frames`, the consumer received exactly those, and
/// nothing else is waiting or went wrong.
fn all_arrived<S: RingStorage>(sent: EndpointStats, rx: &mut Consumer<S>, frames: u64) {
    assert_eq!(sent.frames, frames);
    assert_eq!(rx.stats().frames, frames);
    assert_eq!(rx.ready_slots().unwrap(), 0, "nothing extra arrived");
    assert_eq!(rx.stats().corruptions, 0);
}

#[test]
fn ten_million_frames_arrive_once_in_order_intact() {
    let _watchdog = Watchdog::new("stress", Duration::from_secs(600));
    let (master, slave) = region_pair();

    // SAFETY: the only producer (this mapping) and consumer (the other
    // mapping) of ring 0.
    let mut tx = unsafe { Producer::attach(master.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    // SAFETY: as above.
    let mut rx = unsafe { Consumer::attach(slave.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };

    let (_alive, consumer) = Alive::new();
    let producer = std::thread::spawn(move || {
        let mut seq = 0u64;
        let mut scratch = vec![0u8; 9216];
        while seq < FRAMES {
            let mut chunk = tx.write_chunk(BATCH * 5).unwrap();
            while seq < FRAMES && chunk.frames() < BATCH {
                let len = frame_len(seq);
                if !chunk.fits(len) {
                    break;
                }
                // Alternate the copying and the in-place paths.
                if seq % 2 == 0 {
                    fill_frame(&mut scratch[..len], seq);
                    chunk.push(&scratch[..len]).unwrap();
                } else {
                    chunk
                        .push_with(len, |w| {
                            fill_frame(&mut scratch[..len], seq);
                            let mut at = 0;
                            for seg in w.segments_mut() {
                                seg.copy_from_slice(&scratch[at..at + seg.len()]);
                                at += seg.len();
                            }
                        })
                        .unwrap();
                }
                seq += 1;
            }
            if chunk.commit() == 0 {
                assert!(consumer.load(Ordering::Relaxed), "the consumer died");
                std::hint::spin_loop();
            }
        }
        tx.stats()
    });
    let mut producer = Producing::new(producer);

    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    while expected < FRAMES {
        let mut chunk = rx.read_chunk(BATCH).unwrap();
        let mut got = 0;
        while let Some(frame) = chunk.next_frame().unwrap() {
            let n = frame.copy_to(&mut buf);
            expect_frame(&buf[..n], frame_len(expected), expected);
            expected += 1;
            got += 1;
        }
        if got == 0 {
            producer.idle(expected);
            std::hint::spin_loop();
        }
    }
    all_arrived(producer.finish(), &mut rx, FRAMES);
}

/// The copying batch API (`send_batch`/`recv_batch`) across two mappings:
/// runs of equal small frames (the consumer's grouped path) alternate with
/// runs of mixed sizes up to jumbo, and the consumer's batch sizes vary,
/// so groups meet the wrap, the published head and the end of the buffers
/// in every position.
#[test]
fn batch_api_delivers_runs_of_equal_and_mixed_frames_intact() {
    const BATCH_FRAMES: u64 = 3_000_000;
    let _watchdog = Watchdog::new("stress (batch API)", Duration::from_secs(600));
    let (master, slave) = region_pair();
    // SAFETY: the only producer (this mapping) and consumer (the other
    // mapping) of ring 0.
    let mut tx = unsafe { Producer::attach(master.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    // SAFETY: as above.
    let mut rx = unsafe { Consumer::attach(slave.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    // 64 frames of one small size (it changes every run), then 64 mixed.
    let len_of = |seq: u64| match (seq / 64) % 2 {
        0 => 16 + ((seq / 128) % 15) as usize * 16,
        _ => frame_len(seq),
    };

    let (_alive, consumer) = Alive::new();
    let producer = std::thread::spawn(move || {
        let mut seq = 0u64;
        let mut frames: Vec<Vec<u8>> = Vec::new();
        while seq < BATCH_FRAMES {
            // The frames not taken last time go first, in order.
            while frames.len() < BATCH && seq + (frames.len() as u64) < BATCH_FRAMES {
                let s = seq + frames.len() as u64;
                let mut f = vec![0u8; len_of(s)];
                fill_frame(&mut f, s);
                frames.push(f);
            }
            let n = tx.send_batch(frames.iter().map(|f| &f[..])).unwrap();
            frames.drain(..n);
            seq += n as u64;
            if n == 0 {
                assert!(consumer.load(Ordering::Relaxed), "the consumer died");
                std::hint::spin_loop();
            }
        }
        tx.stats()
    });
    let mut producer = Producing::new(producer);

    let mut expected = 0u64;
    let mut bufs = vec![vec![0u8; 9216]; BATCH];
    let mut lens = [0usize; BATCH];
    let mut round = 0usize;
    while expected < BATCH_FRAMES {
        // 1 to 32 buffers per call.
        let take = 1 + round % BATCH;
        round += 1;
        let n = rx.recv_batch(&mut bufs[..take], &mut lens[..take]).unwrap();
        for (buf, &len) in bufs.iter().zip(&lens).take(n) {
            expect_frame(&buf[..len], len_of(expected), expected);
            expected += 1;
        }
        if n == 0 {
            producer.idle(expected);
            std::hint::spin_loop();
        }
    }
    all_arrived(producer.finish(), &mut rx, BATCH_FRAMES);
}

/// Frames the streaming producer process sends.
const STREAM_FRAMES: u64 = 3_000_000;
/// The environment variable that carries the region's descriptor number
/// to the streaming producer process.
const STREAM_FD: &str = "VECRING_STRESS_STREAM_FD";

/// Length of frame `seq` of the streaming test: four in five are small
/// enough to be streamed (16 to 128 bytes, often equal in runs), the rest
/// of the mixed sizes up to jumbo, which the chunk copies as usual.
fn stream_len(seq: u64) -> usize {
    if seq % 5 == 4 {
        frame_len(seq)
    } else {
        16 + ((seq / 7) % 8) as usize * 16
    }
}

/// The producer process of the streaming test: attaches the region whose
/// descriptor it inherited and sends `STREAM_FRAMES` frames in streamed
/// bursts, then reports how many bursts were streamed. Ignored, so that it
/// counts as no test of its own; does nothing unless started by that test.
#[test]
#[ignore = "the producer process of streamed_bursts_from_another_process_arrive_intact, which runs it"]
fn streaming_producer_process() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let Some(fd) = std::env::var(STREAM_FD).ok().and_then(|v| v.parse().ok()) else {
        return;
    };
    let _w = Watchdog::new("streaming_producer_process", Duration::from_secs(300));
    // SAFETY: the descriptor the test passed us, open and ours alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let region = Arc::new(
        Region::attach(
            fd,
            &Expectation {
                geometry: Some(Geometry::default()),
                generation: Some(1),
                ..Expectation::default()
            },
        )
        .unwrap(),
    );
    // SAFETY: the only producer of ring 0 (the test process consumes it).
    let mut tx = unsafe { Producer::attach(region.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    let (mut seq, mut bursts, mut streamed) = (0u64, 0u64, 0u64);
    let mut scratch = vec![0u8; 9216];
    let started = std::time::Instant::now();
    while seq < STREAM_FRAMES {
        // Room for a jumbo frame (144 slots), at most BATCH frames.
        let mut chunk = tx.write_chunk(BATCH * 5).unwrap();
        chunk.set_streaming(true);
        while seq < STREAM_FRAMES && chunk.frames() < BATCH && chunk.fits(stream_len(seq)) {
            let len = stream_len(seq);
            fill_frame(&mut scratch[..len], seq);
            chunk.push(&scratch[..len]).unwrap();
            seq += 1;
        }
        let was_streamed = chunk.streamed();
        if chunk.commit() == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "the consumer stopped reading"
            );
            std::hint::spin_loop();
        } else {
            bursts += 1;
            streamed += u64::from(was_streamed);
        }
    }
    println!(
        "streaming producer: frames={} bursts={bursts} streamed={streamed}",
        tx.stats().frames
    );
}

/// A producer in another process writes bursts of small frames with
/// non-temporal stores (`WriteChunk::set_streaming`, as the driver's
/// transmit path does), mixed with frames too long to stream; this process
/// checks every byte of every frame, in order, and that streaming ran.
/// The fence before the producer's index store is what makes streamed
/// frames visible before `head`: without it a frame could arrive stale.
#[test]
fn streamed_bursts_from_another_process_arrive_intact() {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::process::{Command, Stdio};
    let _w = Watchdog::new("stress (streamed, two processes)", Duration::from_secs(300));
    let (master, slave) = region_pair();
    drop(master);
    // A descriptor of the region without close-on-exec for the child.
    let fd: OwnedFd = slave.fd().try_clone_to_owned().unwrap();
    // SAFETY: fcntl on a descriptor we own; clears only FD_CLOEXEC.
    assert_eq!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) }, 0);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "streaming_producer_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(STREAM_FD, fd.as_raw_fd().to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    drop(fd);
    // SAFETY: the only consumer of ring 0 (the child produces into it).
    let mut rx = unsafe { Consumer::attach(slave.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    let mut expected = 0u64;
    let mut buf = vec![0u8; 9216];
    let mut idle = 0u64;
    while expected < STREAM_FRAMES {
        let mut chunk = rx.read_chunk(BATCH).unwrap();
        let mut got = 0;
        while let Some(frame) = chunk.next_frame().unwrap() {
            let n = frame.copy_to(&mut buf);
            expect_frame(&buf[..n], stream_len(expected), expected);
            expected += 1;
            got += 1;
        }
        drop(chunk);
        if got == 0 {
            idle += 1;
            if idle % 65_536 == 0 {
                if let Some(status) = child.try_wait().unwrap() {
                    // Everything it published is visible after its exit.
                    if rx.ready_slots().unwrap() == 0 {
                        panic!("the producer exited ({status}) before frame {expected}");
                    }
                }
            }
            std::hint::spin_loop();
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the producer failed: {text}");
    let line = text
        .lines()
        .find_map(|l| l.find("streaming producer:").map(|at| &l[at..]))
        .unwrap_or_else(|| panic!("the producer did not report: {text}"));
    let field = |name: &str| -> u64 {
        vecring_tests::doc_runner::number_after(line, &format!("{name}="))
            .unwrap_or_else(|| panic!("{line}"))
    };
    assert_eq!(field("frames"), STREAM_FRAMES, "{line}");
    let (bursts, streamed) = (field("bursts"), field("streamed"));
    assert!(
        streamed > bursts / 2,
        "most bursts hold small frames, so most are streamed: {line}"
    );
    assert_eq!(rx.stats().frames, STREAM_FRAMES);
    assert_eq!(rx.ready_slots().unwrap(), 0, "nothing extra arrived");
    assert_eq!(rx.stats().corruptions, 0);
}
