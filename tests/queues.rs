//! Links of several queue pairs: frames on each queue arrive in order and
//! intact, independently of the other queues, across threads and across
//! processes; the master decides the count and a slave that requires
//! another is refused; one endpoint per queue at a time; counts out of
//! range are refused at open.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use vecring_core::memory::AttachError;
use vecring_core::{
    Geometry, GeometryError, HugepagePolicy, Link, LinkError, LinkRecvError, LinkSendError, Role,
};
use vecring_tests::{run_dir, Watchdog};

const UP: Duration = Duration::from_secs(10);
const QUEUES: u16 = 4;
/// Where the child process of the cross-process test finds its run dir.
const PEER_DIR: &str = "VECRING_QUEUES_PEER_DIR";

fn open(dir: &Path, role: Role, queues: Option<u16>) -> Link {
    let mut b = Link::builder("dom", "q0")
        .role(role)
        .run_dir(dir)
        .hugepages(HugepagePolicy::Never);
    if let Some(n) = queues {
        b = b.queues(n);
    }
    b.open().unwrap()
}

/// Frames sent on queue `queue` by `role`: a different number per queue
/// and direction, so that a frame delivered on the wrong queue, or a queue
/// that moved another's frames, shows in the counts.
fn frames_on(queue: u16, role: Role) -> u32 {
    300 + 200 * u32::from(queue) + if role == Role::Master { 0 } else { 50 }
}

/// Frame `seq` of `queue` from `role`: a header naming all three, then
/// bytes that depend on each, in a length that varies with `seq` (one to
/// several slots, some frames wrapping).
fn frame(queue: u16, role: Role, seq: u32) -> Vec<u8> {
    let len = 8 + (seq as usize * 37 + usize::from(queue) * 11) % 1500;
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&queue.to_le_bytes());
    f.push(role as u8);
    f.push(0xa5);
    f.extend_from_slice(&seq.to_le_bytes());
    f.extend((8..len).map(|i| (i as u32 ^ seq ^ (u32::from(queue) << 5)) as u8));
    f
}

/// Sends every queue's frames, interleaved over the queues, and receives
/// and checks the peer's on every queue: exact bytes, in order, on the
/// right queue, no more and no fewer. Returns a description of the first
/// fault, if any.
fn exchange(link: &Link, me: Role) -> Result<(), String> {
    let peer = match me {
        Role::Master => Role::Slave,
        Role::Slave => Role::Master,
    };
    let mut txs: Vec<_> = (0..QUEUES).map(|q| link.sender_on(q).unwrap()).collect();
    let mut rxs: Vec<_> = (0..QUEUES).map(|q| link.receiver_on(q).unwrap()).collect();
    let mut sent = vec![0u32; QUEUES.into()];
    let mut got = vec![0u32; QUEUES.into()];
    let mut buf = vec![0u8; 9216];
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut idle = true;
        for q in 0..QUEUES {
            let qi = usize::from(q);
            // A few frames per turn, more on higher queues, so the queues
            // run at different paces.
            for _ in 0..=q {
                if sent[qi] == frames_on(q, me) {
                    break;
                }
                match txs[qi].send(&frame(q, me, sent[qi])) {
                    Ok(()) => {
                        sent[qi] += 1;
                        idle = false;
                    }
                    Err(LinkSendError::Push(_)) => break,
                    Err(e) => return Err(format!("send on queue {q}: {e}")),
                }
            }
            loop {
                match rxs[qi].recv(&mut buf) {
                    Ok(n) => {
                        let want = frame(q, peer, got[qi]);
                        if buf[..n] != want[..] {
                            return Err(format!(
                                "queue {q}: frame {} differs: got {} bytes {:?}…, want {} bytes {:?}…",
                                got[qi],
                                n,
                                &buf[..n.min(8)],
                                want.len(),
                                &want[..8]
                            ));
                        }
                        got[qi] += 1;
                        idle = false;
                        if got[qi] > frames_on(q, peer) {
                            return Err(format!("queue {q}: more frames than sent"));
                        }
                    }
                    Err(LinkRecvError::Empty) => break,
                    Err(e) => return Err(format!("recv on queue {q}: {e}")),
                }
            }
        }
        let done = (0..QUEUES).all(|q| {
            sent[usize::from(q)] == frames_on(q, me) && got[usize::from(q)] == frames_on(q, peer)
        });
        if done {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err(format!("timed out: sent {sent:?}, got {got:?}"));
        }
        if idle {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    // Leave only once the peer has read everything: the generation (and
    // whatever is unread in it) ends when either side goes.
    while txs.iter_mut().any(|tx| tx.unread() > 0) {
        if std::time::Instant::now() > deadline {
            return Err("the peer did not read everything in time".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    for (q, tx) in txs.iter_mut().enumerate() {
        tx.flush_counters();
        assert_eq!(tx.queue(), q as u16);
    }
    for rx in &mut rxs {
        rx.flush_counters();
    }
    // Per-queue counters count each queue's own frames; the link's are
    // their sums.
    let mut total = (0u64, 0u64);
    for q in 0..QUEUES {
        let c = link.queue_counters(q).unwrap();
        let (tx, rx) = (u64::from(frames_on(q, me)), u64::from(frames_on(q, peer)));
        if (c.tx_frames, c.rx_frames) != (tx, rx) {
            return Err(format!(
                "queue {q} counters: {c:?}, want {tx} sent, {rx} received"
            ));
        }
        let bytes: u64 = (0..frames_on(q, peer))
            .map(|s| frame(q, peer, s).len() as u64)
            .sum();
        if c.rx_bytes != bytes {
            return Err(format!(
                "queue {q}: {} bytes received, want {bytes}",
                c.rx_bytes
            ));
        }
        total = (total.0 + tx, total.1 + rx);
    }
    let c = link.counters();
    if (c.tx_frames, c.rx_frames) != total {
        return Err(format!("link counters {c:?}, want {total:?}"));
    }
    Ok(())
}

#[test]
fn four_queues_carry_their_own_frames_both_ways_across_threads() {
    let _w = Watchdog::new("four_queues_threads", Duration::from_secs(120));
    let dir = run_dir("q-threads");
    let m = open(&dir, Role::Master, Some(QUEUES));
    let s = open(&dir, Role::Slave, None);
    assert_eq!(m.queues(), Some(QUEUES));
    assert_eq!(
        s.queues(),
        None,
        "a slave without a count waits for the master's"
    );
    assert_eq!(s.wait_up(UP).unwrap(), m.wait_up(UP).unwrap());
    assert_eq!(
        s.queues(),
        Some(QUEUES),
        "the slave takes the master's count"
    );
    assert_eq!(m.region().unwrap().queues(), QUEUES);
    let slave = std::thread::spawn(move || {
        let r = exchange(&s, Role::Slave);
        (s, r)
    });
    let mine = exchange(&m, Role::Master);
    let (s, theirs) = slave.join().unwrap();
    mine.unwrap();
    theirs.unwrap();
    drop(s);
    assert!(m.wait_down(UP));
}

/// The child process of the cross-process test: a slave requiring the
/// master's count. Ignored, so that it counts as no test of its own; does
/// nothing unless started by that test.
#[test]
#[ignore = "the peer process of four_queues_carry_their_own_frames_both_ways_across_processes, which runs it"]
fn queue_peer_process() {
    let Some(dir) = std::env::var_os(PEER_DIR) else {
        return;
    };
    let _w = Watchdog::new("queue_peer_process", Duration::from_secs(100));
    let s = open(Path::new(&dir), Role::Slave, Some(QUEUES));
    s.wait_up(UP).unwrap();
    exchange(&s, Role::Slave).unwrap();
}

#[test]
fn four_queues_carry_their_own_frames_both_ways_across_processes() {
    let _w = Watchdog::new("four_queues_processes", Duration::from_secs(120));
    let dir = run_dir("q-procs");
    let m = open(&dir, Role::Master, Some(QUEUES));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "queue_peer_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PEER_DIR, &dir)
        .spawn()
        .unwrap();
    m.wait_up(UP).unwrap();
    let mine = exchange(&m, Role::Master);
    let status = child.wait().unwrap();
    mine.unwrap();
    assert!(status.success(), "the slave process failed: {status}");
    assert!(m.wait_down(UP));
}

/// A full queue stops nothing else: queue 1 is filled and never read while
/// queue 0 and queue 2 keep moving.
#[test]
fn a_full_queue_does_not_hold_the_others() {
    let _w = Watchdog::new("full_queue", Duration::from_secs(60));
    let dir = run_dir("q-full");
    let m = open(&dir, Role::Master, Some(3));
    let s = open(&dir, Role::Slave, None);
    m.wait_up(UP).unwrap();
    s.wait_up(UP).unwrap();
    let mut stuck = m.sender_on(1).unwrap();
    let big = vec![1u8; 9000];
    let mut filled = 0;
    while stuck.send(&big).is_ok() {
        filled += 1;
    }
    assert!(filled > 0);
    assert!(matches!(stuck.send(&big), Err(LinkSendError::Push(_))));
    let mut buf = vec![0u8; 9216];
    for q in [0u16, 2] {
        let mut tx = m.sender_on(q).unwrap();
        let mut rx = s.receiver_on(q).unwrap();
        for seq in 0..1000 {
            let f = frame(q, Role::Master, seq);
            tx.send(&f).unwrap();
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &f[..], "queue {q} frame {seq}");
        }
    }
    let mut rx1 = s.receiver_on(1).unwrap();
    for _ in 0..filled {
        assert_eq!(rx1.recv(&mut buf), Ok(9000));
    }
    assert_eq!(rx1.recv(&mut buf), Err(LinkRecvError::Empty));
    assert_eq!(m.queue_counters(1).unwrap().tx_ring_full, 2);
}

#[test]
fn a_slave_requiring_another_count_is_refused_naming_both() {
    let _w = Watchdog::new("count_mismatch", Duration::from_secs(60));
    let dir = run_dir("q-mismatch");
    let m = open(&dir, Role::Master, Some(2));
    let s = open(&dir, Role::Slave, Some(4));
    assert_eq!(s.queues(), Some(4));
    let err = s.wait_up(UP).unwrap_err();
    assert!(
        matches!(
            err,
            LinkError::Attach(AttachError::Mismatch {
                field: "queue count",
                ours: 4,
                theirs: 2
            })
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("queue count mismatch: ours 4, theirs 2"),
        "{text}"
    );
    assert!(!m.state().is_up());
    // A slave that requires the master's count attaches.
    drop(s);
    let s = open(&dir, Role::Slave, Some(2));
    assert_eq!(s.wait_up(UP).unwrap(), m.wait_up(UP).unwrap());
    assert!(m.counters().rejected_peers >= 1);
}

#[test]
fn one_endpoint_per_queue_at_a_time() {
    let _w = Watchdog::new("one_per_queue", Duration::from_secs(60));
    let dir = run_dir("q-taken");
    let m = open(&dir, Role::Master, Some(QUEUES));
    let s = open(&dir, Role::Slave, None);
    let tx1 = m.sender_on(1).unwrap();
    assert!(matches!(
        m.sender_on(1),
        Err(LinkError::AlreadyTaken {
            what: "sender",
            queue: 1
        })
    ));
    assert_eq!(
        m.sender_on(1).err().unwrap().to_string(),
        "the link's sender on queue 1 is already taken"
    );
    // The receiver of the queue, and the other queues, are separate.
    let _rx1 = m.receiver_on(1).unwrap();
    assert!(matches!(
        m.receiver_on(1),
        Err(LinkError::AlreadyTaken {
            what: "receiver",
            queue: 1
        })
    ));
    let _tx0 = m.sender().unwrap();
    assert!(matches!(
        m.sender_on(0),
        Err(LinkError::AlreadyTaken { queue: 0, .. })
    ));
    let _tx3 = m.sender_on(3).unwrap();
    // Past the count: a typed error, for a master and for a slave that
    // does not know the count yet (then past the most a link carries).
    assert!(matches!(
        m.sender_on(4),
        Err(LinkError::NoSuchQueue {
            queue: 4,
            queues: 4
        })
    ));
    assert!(matches!(
        m.receiver_on(u16::MAX),
        Err(LinkError::NoSuchQueue { .. })
    ));
    assert!(matches!(
        s.sender_on(16),
        Err(LinkError::NoSuchQueue {
            queue: 16,
            queues: 16
        })
    ));
    assert!(m.queue_counters(16).is_none());
    // Dropping a sender gives the queue back; the next one continues its
    // counters.
    m.wait_up(UP).unwrap();
    s.wait_up(UP).unwrap();
    let mut tx1 = tx1;
    tx1.send(b"first").unwrap();
    drop(tx1);
    let mut again = m.sender_on(1).unwrap();
    again.send(b"second").unwrap();
    let mut rx = s.receiver_on(1).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(rx.recv(&mut buf), Ok(5));
    assert_eq!(&buf[..5], b"first");
    assert_eq!(rx.recv(&mut buf), Ok(6));
    assert_eq!(&buf[..6], b"second");
    assert_eq!(m.queue_counters(1).unwrap().tx_frames, 2);
    // A chunk user that never flushed its counters: dropping the sender
    // stores them, and the queue's next sender continues from there.
    let mut chunked = m.sender_on(2).unwrap();
    let mut chunk = chunked.write_chunk(64).unwrap();
    chunk.push(b"in place").unwrap();
    chunk.push(b"in place too").unwrap();
    assert_eq!(chunk.commit(), 2);
    drop(chunked);
    assert_eq!(m.queue_counters(2).unwrap().tx_frames, 2);
    m.sender_on(2).unwrap().send(b"third").unwrap();
    let c = m.queue_counters(2).unwrap();
    assert_eq!((c.tx_frames, c.tx_bytes), (3, 8 + 12 + 5));
    assert_eq!(m.counters().tx_frames, 2 + 3);
    // A slave's endpoints on a queue the master does not offer carry
    // nothing; now that the count is known, such queues are refused.
    assert!(matches!(
        s.sender_on(4),
        Err(LinkError::NoSuchQueue {
            queue: 4,
            queues: 4
        })
    ));
}

#[test]
fn a_queue_the_master_does_not_offer_carries_nothing() {
    let _w = Watchdog::new("absent_queue", Duration::from_secs(60));
    let dir = run_dir("q-absent");
    let s = open(&dir, Role::Slave, None);
    let mut tx5 = s.sender_on(5).unwrap();
    let m = open(&dir, Role::Master, Some(2));
    assert_eq!(s.wait_up(UP).unwrap(), m.wait_up(UP).unwrap());
    assert_eq!(tx5.send(b"nowhere"), Err(LinkSendError::NoPeer));
    assert!(!tx5.is_up());
    let mut tx1 = s.sender_on(1).unwrap();
    tx1.send(b"somewhere").unwrap();
    let mut rx1 = m.receiver_on(1).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(rx1.recv(&mut buf), Ok(9));
}

#[test]
fn queue_counts_out_of_range_are_refused_at_open() {
    let dir = run_dir("q-range");
    for role in [Role::Master, Role::Slave] {
        for n in [0u16, 17, u16::MAX] {
            let err = Link::builder("dom", "q0")
                .role(role)
                .run_dir(&dir)
                .queues(n)
                .open()
                .unwrap_err();
            assert!(
                matches!(err, LinkError::Geometry(GeometryError::Queues(q)) if q == u64::from(n)),
                "{role} queues({n}): {err:?}"
            );
            assert!(
                err.to_string()
                    .contains(&format!("queue count {n} is not between 1 and 16")),
                "{err}"
            );
        }
    }
    // Geometry and count together must fit the region a slave accepts.
    let big = Geometry::new(1 << 20, 1024).unwrap();
    let err = Link::builder("dom", "q0")
        .role(Role::Master)
        .run_dir(&dir)
        .geometry(big)
        .queues(2)
        .open()
        .unwrap_err();
    assert!(
        matches!(
            err,
            LinkError::Geometry(GeometryError::RegionTooLarge { queues: 2, .. })
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("2 queue pairs of 1048576 slots of 1024 bytes"),
        "{text}"
    );
    // The same geometry with one queue, and sixteen queues of the default
    // geometry, open.
    let _one = Link::builder("dom", "q1")
        .role(Role::Master)
        .run_dir(&dir)
        .geometry(big)
        .queues(1)
        .open()
        .unwrap();
    let sixteen = Link::builder("dom", "q2")
        .role(Role::Master)
        .run_dir(&dir)
        .queues(16)
        .open()
        .unwrap();
    assert_eq!(sixteen.queues(), Some(16));
}

/// The default is one queue pair, as before queues existed.
#[test]
fn the_default_is_one_queue() {
    let dir: PathBuf = run_dir("q-default");
    let m = open(&dir, Role::Master, None);
    assert_eq!(m.queues(), Some(1));
    assert!(matches!(
        m.sender_on(1),
        Err(LinkError::NoSuchQueue {
            queue: 1,
            queues: 1
        })
    ));
}
