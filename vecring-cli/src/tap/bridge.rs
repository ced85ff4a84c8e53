//! One queue of the bridge: a thread that moves frames between TAP queue
//! `q` and link queue `q`, both ways, and sleeps when neither has any (on
//! the TAP descriptor and the link endpoints' wait sets, in one epoll
//! set).
//!
//! From the TAP to the link, frames are read into a buffer and pushed
//! into a write chunk, committed once per batch. When the ring is full
//! the frame read waits in the buffer and the thread stops reading the
//! TAP until the peer makes room: the kernel's queue in front of the TAP
//! fills and drops, as in front of a slow NIC. With no peer, frames read
//! are dropped (the carrier is off then, so the kernel sends few).
//!
//! From the link to the TAP, frames are written from the ring in place
//! (`writev` of their one or two segments), after a check of their length
//! (and, with `--offload`, of their virtio-net header): the peer is not
//! trusted, and a frame longer than the interface's MTU allows or a
//! header no kernel would send is dropped and counted, as a NIC drops a
//! frame too long for it. The length is the descriptor's, read once by the
//! ring; the virtio-net header is copied out of the ring once, checked,
//! and written from that copy (the peer may rewrite the ring's bytes
//! between a check and the write); the rest of the frame is data the
//! kernel copies once and parses itself.
//!
//! The poll window (`--poll-us`) opens only on work done: a frame moved
//! either way. Frames dropped (from the link, or read from the TAP while
//! the link is down) are taken without a sleep in between but do not keep
//! the thread looking, so a peer sending only what is dropped costs the
//! host a wakeup per doorbell it rings, like any trickle, not a polling
//! core.

use super::epoll::{Epoll, Event};
use super::tso;
use super::vnet::{self, Bad, VnetHdr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vecring_core::{Geometry, LinkRecvError, LinkSendError, PushError, Receiver, Sender};

/// A frame read from the TAP that waits for room on the link: its length
/// in the buffer, and the bytes whose slots it needs (`Sender::prepare_wait`
/// counts slots by length: a super-frame's pieces need more than its own
/// length's).
#[derive(Clone, Copy)]
struct Pending {
    len: usize,
    room: usize,
}

/// Frames moved per direction before looking at the other.
const BATCH: usize = 32;

/// The read buffer: the largest frame a TAP hands over, a GSO super-frame
/// of 64 KiB with its headers.
const BUF_LEN: usize = 65536 + 256;

/// How long a thread pauses after the peer corrupted a ring, while the
/// link ends that generation.
const CORRUPT_PAUSE: Duration = Duration::from_millis(10);

const TOKEN_TAP: u64 = 0;
const TOKEN_RX: u64 = 1;
const TOKEN_TX: u64 = 2;
const TOKEN_STOP: u64 = 3;

/// One queue's counters, written by its thread, read by the summary.
#[derive(Default)]
pub struct Tally {
    /// Frames (and bytes) read from the TAP and sent on the link.
    pub to_link_frames: AtomicU64,
    pub to_link_bytes: AtomicU64,
    /// Frames (and bytes) received from the link and written to the TAP.
    pub to_tap_frames: AtomicU64,
    pub to_tap_bytes: AtomicU64,
    /// Frames read from the TAP while the link was down: dropped.
    pub drop_link_down: AtomicU64,
    /// Frames read from the TAP that the link's frames cannot carry
    /// (longer than its largest frame): dropped.
    pub drop_too_long_for_link: AtomicU64,
    /// Frames from the link shorter than an Ethernet header or longer than
    /// the MTU allows: dropped.
    pub drop_bad_length: AtomicU64,
    /// Frames from the link with a virtio-net header no kernel sends
    /// (`--offload`): dropped.
    pub drop_bad_header: AtomicU64,
    /// Super-frames from the link without a checksum to complete
    /// (`--offload`): dropped.
    pub drop_gso_no_csum: AtomicU64,
    /// Super-frames from the link that would be cut into more than
    /// [`vnet::MAX_GSO_SEGS`] segments (`--offload`): dropped.
    pub drop_gso_segments: AtomicU64,
    /// Frames from the link the TAP refused (its write failed).
    pub drop_tap_refused: AtomicU64,
}

/// Relaxed adds: running totals of one writer for readers that want a
/// recent value.
fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

/// What every queue's thread shares with the main thread.
pub struct Shared {
    /// Set to stop; [`Shared::stop_event`] wakes the sleepers.
    pub stop: AtomicBool,
    pub stop_event: Event,
    /// The longest plain frame accepted from the link (prefix and
    /// Ethernet header included), following the interface's MTU.
    pub max_from_link: AtomicUsize,
    /// Whether frames carry a virtio-net header.
    pub vnet_hdr: bool,
    /// How long a thread keeps looking for frames after the last it
    /// moved before it sleeps (`--poll-us`).
    pub poll: Duration,
}

/// One queue's thread's state.
pub struct Queue {
    pub q: u16,
    pub tap: OwnedFd,
    pub tx: Sender,
    pub rx: Receiver,
    pub tally: Arc<Tally>,
    pub shared: Arc<Shared>,
}

/// Reads one frame from the TAP; `None` when it has none.
fn read_tap(tap: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: reads into a live buffer of its length.
    let n = unsafe { libc::read(tap, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// Writes one frame of one or two segments to the TAP.
fn write_tap(tap: RawFd, segments: &[&[u8]]) -> io::Result<()> {
    let iov: Vec<libc::iovec> = segments
        .iter()
        .map(|s| libc::iovec {
            iov_base: s.as_ptr() as *mut libc::c_void,
            iov_len: s.len(),
        })
        .collect();
    // SAFETY: the iovecs describe live slices the kernel only reads.
    let n = unsafe { libc::writev(tap, iov.as_ptr(), iov.len() as libc::c_int) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The TAP failing as only a removed interface makes it (a read error,
/// or a write refused with EBADFD): the bridge cannot go on.
fn gone(q: u16, what: &str, e: io::Error) -> String {
    format!("queue {q}: {what} the interface: {e} (was it deleted?)")
}

/// What one pass over a direction did.
#[derive(Clone, Copy, Default)]
struct Step {
    /// Frames moved to the other side.
    moved: bool,
    /// Frames taken and dropped.
    dropped: bool,
}

/// Logs a failure at most once per kind per thread.
#[derive(Default)]
struct Once {
    write: bool,
}

impl Queue {
    /// Moves frames until told to stop or the link closes.
    ///
    /// # Errors
    /// The epoll set failing (nothing a peer can cause).
    pub fn run(mut self) -> Result<(), String> {
        let ep = Epoll::new().map_err(|e| format!("queue {}: epoll: {e}", self.q))?;
        let tap = self.tap.as_raw_fd();
        let setup = || -> io::Result<()> {
            ep.add(tap, TOKEN_TAP, true)?;
            ep.add(self.rx.as_raw_fd(), TOKEN_RX, true)?;
            ep.add(self.tx.as_raw_fd(), TOKEN_TX, false)?;
            ep.add(self.shared.stop_event.raw(), TOKEN_STOP, true)
        };
        setup().map_err(|e| format!("queue {}: epoll: {e}", self.q))?;
        let mut buf = vec![0u8; BUF_LEN];
        // A frame read from the TAP that waits for room on the link.
        let mut pending: Option<Pending> = None;
        // Whether the TAP (not the sender's room) is watched.
        let mut watching_tap = true;
        let mut once = Once::default();
        let mut tokens = Vec::new();
        // Until when to keep looking before a sleep: set when a frame
        // moved, and only then.
        let mut poll_until: Option<Instant> = None;
        while !self.shared.stop.load(Ordering::Relaxed) {
            let from_link = self.link_to_tap(&mut once)?;
            let to_link = self.tap_to_link(&mut buf, &mut pending)?;
            if from_link.moved || to_link.moved {
                if !self.shared.poll.is_zero() {
                    poll_until = Some(Instant::now() + self.shared.poll);
                }
                continue;
            }
            if from_link.dropped || to_link.dropped {
                // Only dropped frames: take the rest at once, without
                // opening the poll window for them.
                continue;
            }
            // Nothing came: look again for a while after the last frame
            // moved (a reply, the next frame of a burst) before paying
            // for a sleep and a wakeup.
            if let Some(until) = poll_until {
                if Instant::now() < until {
                    // Another thread on this CPU (the program the interface
                    // serves, the other end's bridge) goes first if it can.
                    std::thread::yield_now();
                    continue;
                }
                poll_until = None;
            }
            // Sleep until the TAP or the link has work.
            match self.rx.prepare_wait() {
                Ok(true) => {}
                Ok(false) => continue,
                Err(LinkRecvError::Corrupt(_)) => {
                    std::thread::sleep(CORRUPT_PAUSE);
                    continue;
                }
                // The link closed: the process is ending.
                Err(_) => return Ok(()),
            }
            let want_room = match pending {
                Some(p) => match self.tx.prepare_wait(p.room) {
                    Ok(true) => true,
                    Ok(false) => {
                        self.rx.cancel_wait();
                        continue;
                    }
                    Err(LinkSendError::Corrupt(_)) => {
                        self.rx.cancel_wait();
                        std::thread::sleep(CORRUPT_PAUSE);
                        continue;
                    }
                    Err(_) => return Ok(()),
                },
                None => false,
            };
            if watching_tap == want_room {
                watching_tap = !want_room;
                let r = ep
                    .watch(tap, TOKEN_TAP, watching_tap)
                    .and_then(|()| ep.watch(self.tx.as_raw_fd(), TOKEN_TX, want_room));
                r.map_err(|e| format!("queue {}: epoll: {e}", self.q))?;
            }
            let slept = ep.wait(None, &mut tokens);
            self.rx.cancel_wait();
            if want_room {
                self.tx.cancel_wait();
            }
            slept.map_err(|e| format!("queue {}: epoll_wait: {e}", self.q))?;
        }
        Ok(())
    }

    /// Moves up to [`BATCH`] frames from the link to the TAP; says
    /// whether it moved any and whether it dropped any.
    fn link_to_tap(&mut self, once: &mut Once) -> Result<Step, String> {
        let tap = self.tap.as_raw_fd();
        let max_plain = self.shared.max_from_link.load(Ordering::Relaxed);
        let vnet_hdr = self.shared.vnet_hdr;
        let t = &*self.tally;
        let mut chunk = match self.rx.read_chunk(BATCH) {
            Ok(c) => c,
            // Down, or a corrupt generation the link is ending.
            Err(_) => return Ok(Step::default()),
        };
        let mut step = Step::default();
        let (mut frames, mut bytes) = (0u64, 0u64);
        // A corrupt descriptor ends the chunk; the link ends the generation.
        while let Ok(Some(frame)) = chunk.next_frame() {
            let len = frame.len();
            // The header, copied out of the ring once: the bytes checked
            // are the bytes written.
            let copy = if vnet_hdr {
                VnetHdr::copy_from(frame.segments())
            } else {
                None
            };
            let hdr = copy.as_ref().and_then(|c| VnetHdr::read(c));
            let refused = match vnet::check_from_link(hdr, len, max_plain) {
                Ok(()) => None,
                Err(Bad::Header) => Some(&t.drop_bad_header),
                Err(Bad::GsoNoCsum) => Some(&t.drop_gso_no_csum),
                Err(Bad::GsoSegments) => Some(&t.drop_gso_segments),
                Err(Bad::Short | Bad::Long) => Some(&t.drop_bad_length),
            };
            if let Some(counter) = refused {
                add(counter, 1);
                step.dropped = true;
                continue;
            }
            // The frame as up to three pieces: the checked copy of the
            // header, then the ring's bytes after it (one or two
            // segments).
            let mut segs: [&[u8]; 3] = [&[], &[], &[]];
            let mut n = 0;
            let mut skip = 0;
            if let Some(c) = copy.as_ref() {
                segs[0] = c;
                n = 1;
                skip = vnet::VNET_HDR_LEN;
            }
            for s in frame.segments() {
                let cut = skip.min(s.len());
                skip -= cut;
                if cut < s.len() {
                    segs[n] = &s[cut..];
                    n += 1;
                }
            }
            match write_tap(tap, &segs[..n]) {
                Ok(()) => {
                    frames += 1;
                    bytes += (len - if vnet_hdr { vnet::VNET_HDR_LEN } else { 0 }) as u64;
                }
                Err(e) if e.raw_os_error() == Some(libc::EBADFD) => {
                    return Err(gone(self.q, "writing to", e));
                }
                Err(e) => {
                    add(&t.drop_tap_refused, 1);
                    step.dropped = true;
                    if !once.write {
                        once.write = true;
                        log::warn!(
                            target: crate::LOG_TARGET,
                            "tap queue {}: the interface refused a frame of {len} bytes from the link: {e} (counted; said once)",
                            self.q
                        );
                    }
                }
            }
        }
        drop(chunk);
        self.rx.flush_counters();
        add(&t.to_tap_frames, frames);
        add(&t.to_tap_bytes, bytes);
        step.moved = frames > 0;
        Ok(step)
    }

    /// Moves up to [`BATCH`] frames from the TAP to the link; says
    /// whether it moved any and whether it dropped any.
    fn tap_to_link(
        &mut self,
        buf: &mut [u8],
        pending: &mut Option<Pending>,
    ) -> Result<Step, String> {
        let tap = self.tap.as_raw_fd();
        let prefix = if self.shared.vnet_hdr {
            vnet::VNET_HDR_LEN
        } else {
            0
        };
        let t = &*self.tally;
        let g = self.tx.geometry().unwrap_or(Geometry::DEFAULT);
        let max_frame = g.max_frame_len() as usize;
        let mut chunk = match self.tx.write_chunk(usize::MAX) {
            Ok(c) => c,
            Err(_) => {
                // No peer (or a corrupt generation being ended): what the
                // TAP holds has nowhere to go.
                let mut dropped = u64::from(pending.take().is_some());
                while dropped < BATCH as u64
                    && read_tap(tap, buf)
                        .map_err(|e| gone(self.q, "reading", e))?
                        .is_some()
                {
                    dropped += 1;
                }
                add(&t.drop_link_down, dropped);
                return Ok(Step {
                    moved: false,
                    dropped: dropped > 0,
                });
            }
        };
        let mut seen = 0;
        let mut too_long = 0;
        let (mut frames, mut bytes) = (0u64, 0u64);
        while seen < BATCH {
            let len = match pending.take() {
                Some(p) => p.len,
                None => match read_tap(tap, buf).map_err(|e| gone(self.q, "reading", e))? {
                    Some(len) => len,
                    None => break,
                },
            };
            let frame = &buf[..len];
            // What a wait for room asks for: the frame's slots, or its
            // pieces' (each repeats the headers).
            let mut room = len;
            let pushed = if prefix > 0 && len > max_frame {
                // A TCP super-frame longer than a frame on the link: in
                // pieces that fit, all or none.
                let lay = tso::layout(frame, max_frame);
                let need = lay.as_ref().map_or(0, |lay| {
                    lay.piece_lens(len)
                        .map(|l| g.slots_for(l) as usize)
                        .sum::<usize>()
                });
                room = need.saturating_mul(g.slot_size() as usize);
                match lay {
                    // More slots than the whole ring (one the master made
                    // small): it can never fit, and waiting for it would
                    // spin on a ring that is as empty as it gets.
                    Some(_) if need > g.slot_count() as usize => Err(PushError::Empty),
                    Some(_) if need > chunk.free_slots() => Err(PushError::Full),
                    Some(lay) => {
                        let mut ok = true;
                        tso::pieces(frame, &lay, |v, h, p| {
                            ok = chunk
                                .push_with(v.len() + h.len() + p.len(), |w| {
                                    w.append(v);
                                    w.append(h);
                                    w.append(p);
                                })
                                .is_ok();
                            ok
                        });
                        if ok {
                            Ok(())
                        } else {
                            Err(PushError::Empty)
                        }
                    }
                    None => Err(PushError::Empty),
                }
            } else {
                chunk.push(frame)
            };
            match pushed {
                Ok(()) => {
                    seen += 1;
                    frames += 1;
                    bytes += len.saturating_sub(prefix) as u64;
                }
                Err(PushError::Full) => {
                    *pending = Some(Pending { len, room });
                    break;
                }
                Err(PushError::TooLarge { .. } | PushError::Empty) => {
                    seen += 1;
                    too_long += 1;
                }
            }
        }
        chunk.commit();
        self.tx.flush_counters();
        add(&t.to_link_frames, frames);
        add(&t.to_link_bytes, bytes);
        add(&t.drop_too_long_for_link, too_long);
        Ok(Step {
            moved: frames > 0,
            dropped: too_long > 0,
        })
    }
}
