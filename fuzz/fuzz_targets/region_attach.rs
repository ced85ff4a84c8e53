//! `Region::attach` on a region whose header a hostile master wrote: it
//! returns an error or a region, never panics, and a region it returns
//! lies inside the descriptor it was given (every ring's control block,
//! descriptors and last data byte are read; one outside the mapping is a
//! SIGSEGV or SIGBUS the fuzzer reports).
//!
//! Input: the header's bytes (`size_of::<RegionHeader>()`, zeros past the
//! input's end), written at offset 0 of a memfd; then one mode byte:
//! - bits 0-1: the memfd's size: the header's `region_size` (0), that plus
//!   a signed number of 64-byte steps read next (1), a number of 4 KiB
//!   pages read next (2 bytes, 2), or the header's size alone (3); sizes
//!   above 256 MiB become 4 KiB, so that each run stays small;
//! - bit 2: leave the memfd growable (attach requires both seals);
//! - bits 3-6: expectations read next, in this order: a generation (8
//!   bytes), a queue count (2), a geometry (three `u32`s; ignored when not
//!   valid), a queue count announced in the handshake (2).
//!
//! `fuzz/examples/make_corpus.rs` writes valid headers to start from.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vecring_core::internal::abi::{ring_count, RegionHeader, HEADER_AREA};
use vecring_core::memory::Expectation;
use vecring_core::{Geometry, Region, RingStorage};

const HEADER: usize = core::mem::size_of::<RegionHeader>();
const SIZE_CAP: u64 = 256 << 20;

/// The input, read front to back; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        let n = self.0.len().min(N);
        b[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        b
    }
    fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
}

fn memfd() -> OwnedFd {
    // SAFETY: a plain system call on a literal name; the result is checked.
    let fd = unsafe {
        libc::memfd_create(
            c"fuzz-region".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor, ours alone.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let header_bytes: [u8; HEADER] = input.bytes();
    // SAFETY: `RegionHeader` is plain integers, valid for any bytes.
    let header: RegionHeader = unsafe { core::ptr::read_unaligned(header_bytes.as_ptr().cast()) };
    let mode = input.u8();
    let size = match mode & 3 {
        0 => header.region_size,
        1 => header
            .region_size
            .wrapping_add_signed(i64::from(input.u8() as i8) * 64),
        2 => u64::from(input.u16()) * 4096,
        _ => HEADER as u64,
    };
    let size = if size > SIZE_CAP { 4096 } else { size };
    let mut expect = Expectation::default();
    if mode & 8 != 0 {
        expect.generation = Some(input.u64());
    }
    if mode & 16 != 0 {
        expect.queues = Some(input.u16());
    }
    if mode & 32 != 0 {
        let (count, slot, max) = (input.u32(), input.u32(), input.u32());
        expect.geometry = Geometry::with_max_frame_len(count, slot, max).ok();
    }
    if mode & 64 != 0 {
        expect.announced_queues = Some(input.u16());
    }

    let fd = memfd();
    // SAFETY: calls on our own memfd with live buffers; results checked.
    unsafe {
        assert_eq!(libc::ftruncate(fd.as_raw_fd(), size as libc::off_t), 0);
        let written = size.min(HEADER as u64) as usize;
        assert_eq!(
            libc::pwrite(fd.as_raw_fd(), header_bytes.as_ptr().cast(), written, 0),
            written as isize
        );
        let seals = if mode & 4 != 0 {
            libc::F_SEAL_SHRINK
        } else {
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW
        };
        assert_eq!(libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals), 0);
    }

    let Ok(region) = Region::attach(fd, &expect) else {
        return;
    };
    // Accepted: the header was whole, valid and as expected.
    assert!(size >= HEADER_AREA, "a region of {size} bytes accepted");
    assert_eq!(region.size() as u64, size);
    assert_eq!(
        (region.generation(), u32::from(region.queues())),
        (header.generation, header.queue_count)
    );
    assert!(mode & 4 == 0, "a growable memfd accepted");
    let g = region.geometry();
    assert_eq!(
        (g.slot_count(), g.slot_size(), g.max_frame_len()),
        (header.slot_count, header.slot_size, header.max_frame_len)
    );
    if let Some(generation) = expect.generation {
        assert_eq!(region.generation(), generation);
    }
    let region = Arc::new(region);
    let rings = ring_count(region.queues()) as usize;
    assert_eq!(rings as u32, header.ring_count);
    let data_len = g.slot_count() as usize * g.slot_size() as usize;
    for r in 0..rings {
        let ring = region.ring(r);
        let ctl = ring.control();
        let _ = ctl.head.index.load(Ordering::Relaxed);
        let _ = ctl.producer_wait.state.load(Ordering::Relaxed);
        let descs = ring.descs();
        assert_eq!(descs.len(), g.slot_count() as usize);
        let _ = descs[descs.len() - 1].0.load(Ordering::Relaxed);
        // SAFETY: the ring's data area is `data_len` bytes if attach was
        // right; a read outside the mapping faults, which is the finding.
        let _ = unsafe { ring.data().add(data_len - 1).read_volatile() };
    }
});
