//! The floors: one way through memory two processes share, with no ring
//! code (a counter line flipped, or a frame then the counter), timed as
//! the link is.

use super::{TRIPS, WARM_TRIPS};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use vecring_benches::one_way::{one_way, OneWay};
use vecring_benches::{pin_current_thread, CONSUMER_CPU};

/// The floors' shared memory: one counter line, then (with `lines` > 0)
/// two rings of `lines` 64-byte lines each, one a way.
struct FloorMemory {
    line: &'static AtomicU64,
    data: *mut u8,
    lines: usize,
}

impl FloorMemory {
    fn len(lines: usize) -> usize {
        4096 + 2 * lines * 64
    }

    /// The memory of the memfd `fd`, shared (never unmapped; the kernel
    /// zeroes it; the counter is only ever used as an atomic).
    fn map(fd: &OwnedFd, lines: usize) -> FloorMemory {
        // SAFETY: a shared mapping of the whole memfd, sized by its maker.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::len(lines),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED, "mmap");
        FloorMemory {
            // SAFETY: the first, 64-byte aligned word of the mapping.
            line: unsafe { &*p.cast::<AtomicU64>() },
            // SAFETY: within the mapping.
            data: unsafe { p.cast::<u8>().add(4096) },
            lines,
        }
    }

    /// Writes a 64-byte frame into line `i` (modulo the ring) of ring
    /// `way` (0: to the flipper, 1: back).
    fn write(&self, way: usize, i: u64, v: u64) {
        if self.lines == 0 {
            return;
        }
        let at = (way * self.lines + (i as usize % self.lines)) * 64;
        for w in 0..8 {
            // SAFETY: within the ring `way`; the other side reads this line
            // only after the counter's Release store that follows.
            unsafe { self.data.add(at + w * 8).cast::<u64>().write_volatile(v) };
        }
    }

    /// Reads line `i` of ring `way` (as a receiver copies a frame out).
    fn read(&self, way: usize, i: u64) -> u64 {
        if self.lines == 0 {
            return 0;
        }
        let at = (way * self.lines + (i as usize % self.lines)) * 64;
        (0..8)
            // SAFETY: within the ring `way`, written before the counter's
            // Release store this side's Acquire load saw.
            .map(|w| unsafe { self.data.add(at + w * 8).cast::<u64>().read_volatile() })
            .fold(0, u64::wrapping_add)
    }
}

/// The floors' other process: for each odd counter `2i + 1` in the shared
/// memory of the memfd `fd`, reads line `i` of the first ring, writes line
/// `i` of the second and stores `2i + 2` (with no rings, only flips the
/// counter), until told to stop by a counter of `u64::MAX`.
pub fn flipper(fd: i32, lines: usize) {
    pin_current_thread(CONSUMER_CPU).expect("pin");
    // SAFETY: the descriptor the parent left open for us.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let m = FloorMemory::map(&fd, lines);
    let mut sink = 0u64;
    loop {
        // Acquire: pairs with the parent's Release store in `floor_round`.
        let v = m.line.load(Ordering::Acquire);
        if v == u64::MAX {
            std::hint::black_box(sink);
            return;
        }
        if v % 2 == 1 {
            let i = v / 2;
            sink = sink.wrapping_add(m.read(0, i));
            m.write(1, i, v);
            // Release: pairs with the parent's Acquire load.
            m.line.store(v + 1, Ordering::Release);
        }
        std::hint::spin_loop();
    }
}

/// One way through shared memory between two processes, with no ring
/// code: one counter line flipped (`lines` 0), or (`lines` > 0) a 64-byte
/// frame written into the next line of a ring of `lines` lines before the
/// counter is stored, and read after it is seen: the floor of any
/// protocol that signals after the data, as the link does.
pub fn floor_round(lines: usize) -> OneWay {
    // SAFETY: plain memfd_create; without MFD_CLOEXEC, so the child
    // inherits it.
    let raw = unsafe { libc::memfd_create(c"user-view-floor".as_ptr(), 0) };
    assert!(raw >= 0, "memfd_create");
    // SAFETY: a descriptor just made, ours alone.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let len = FloorMemory::len(lines) as libc::off_t;
    // SAFETY: sizing our own memfd.
    assert_eq!(unsafe { libc::ftruncate(raw, len) }, 0, "ftruncate");
    let m = FloorMemory::map(&fd, lines);
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg("--flipper")
        .arg(raw.to_string())
        .arg(lines.to_string())
        .spawn()
        .expect("start the flipper");
    let (mut v, mut sink) = (0u64, 0u64);
    let w = one_way(WARM_TRIPS, TRIPS, || {
        let i = v / 2;
        m.write(0, i, v);
        // Release/Acquire: pair with the flipper's Acquire load and Release
        // store.
        m.line.store(v + 1, Ordering::Release);
        while m.line.load(Ordering::Acquire) != v + 2 {
            std::hint::spin_loop();
        }
        sink = sink.wrapping_add(m.read(1, i));
        v += 2;
    });
    std::hint::black_box(sink);
    // Release: pairs with the flipper's Acquire load.
    m.line.store(u64::MAX, Ordering::Release);
    child.wait().expect("flipper");
    w
}
