//! A real slave that, once its link is up and traffic flows, exhausts the
//! hugepage pool and then tries to take the region's pages away from the
//! master: punching a hole, `MADV_REMOVE`, and mapping the region writable
//! anew. If a page goes, the master's next touch of it has no hugepage to
//! fault in and dies of SIGBUS.
//!
//! Reports `armed` once traffic flows and waits for a line on stdin before
//! attacking, then `attack ...` with each call's outcome and `after
//! frames=N` with what arrived in the second after.

use crate::sock::{self, outcome};
use crate::{report, Args};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use vecring_core::memory::HUGEPAGE_SIZE;
use vecring_core::{Link, LinkRecvError, Role};

pub fn run(args: &Args) -> bool {
    let link = match Link::builder(args.get("domain"), args.get("link"))
        .role(Role::Slave)
        .run_dir(args.get("run-dir"))
        .open()
    {
        Ok(l) => l,
        Err(e) => {
            report(&format!("error {e}"));
            return false;
        }
    };
    if let Err(e) = link.wait_up(Duration::from_secs(20)) {
        report(&format!("error {e}"));
        return false;
    }
    let mut rx = link.receiver().expect("receiver");
    let before = receive(&mut rx, Duration::from_millis(300));
    let Some(region) = link.region() else {
        report("error link went down before the attack");
        return false;
    };
    // The test freezes the master now, so that pages the attack frees
    // stay free until the eater has them: the master's unlucky scheduling,
    // made certain.
    report("armed");
    let mut go = String::new();
    let _ = std::io::stdin().read_line(&mut go);
    let fd = region.fd().as_raw_fd();
    let len = region.size();
    let mut eater = match Eater::new() {
        Ok(e) => e,
        Err(e) => {
            report(&format!("error cannot create the eater memfd: {e}"));
            return false;
        }
    };
    eater.eat();

    // The mapping probes first: a new shared mapping reserves pages for
    // the whole file again, which would refill a hole punched before it.
    let mmap_rw = map_outcome(fd, len, libc::PROT_READ | libc::PROT_WRITE, None);
    let mprotect = map_outcome(
        fd,
        len,
        libc::PROT_READ,
        Some(libc::PROT_READ | libc::PROT_WRITE),
    );
    // SAFETY: fallocate on the region's descriptor, which we hold; it
    // touches no memory of this process.
    let punch = outcome(unsafe {
        libc::fallocate(
            fd,
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            0,
            len as libc::off_t,
        )
    });
    let free_after_punch = hugepages_free();
    // SAFETY: `region.as_ptr()` is our own mapping of `len` bytes, alive
    // while `region` is; if the pages go, this process reads them again
    // only after reporting.
    let madvise = outcome(unsafe {
        libc::madvise(region.as_ptr() as *mut libc::c_void, len, libc::MADV_REMOVE)
    });
    // Whatever the attack returned to the pool is eaten too.
    eater.eat();
    report(&format!(
        "attack punch={punch} madvise={madvise} mmap_rw={mmap_rw} mprotect={mprotect} eaten={} exhausted={} free_after_punch={free_after_punch} frames_before={before}",
        eater.pages, eater.exhausted
    ));
    let after = receive(&mut rx, Duration::from_secs(1));
    report(&format!("after frames={after}"));
    // Hold the pool until the master has had time to touch every page.
    let end = Instant::now() + Duration::from_secs(10);
    while link.state().is_up() && Instant::now() < end {
        let _ = receive(&mut rx, Duration::from_millis(50));
    }
    drop(eater);
    report("done");
    true
}

/// `HugePages_Free` from /proc/meminfo.
fn hugepages_free() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Frames received during `dur`.
fn receive(rx: &mut vecring_core::Receiver, dur: Duration) -> u64 {
    let mut buf = vec![0u8; 9216];
    let mut n = 0;
    let end = Instant::now() + dur;
    while Instant::now() < end {
        match rx.recv(&mut buf) {
            Ok(_) => n += 1,
            Err(LinkRecvError::Empty) => std::thread::yield_now(),
            Err(_) => break,
        }
    }
    n
}

/// Maps `fd` shared with `prot`, then (if given) mprotects it to
/// `upgrade`; the outcome of the last step tried.
fn map_outcome(fd: i32, len: usize, prot: i32, upgrade: Option<i32>) -> String {
    // SAFETY: a fresh shared mapping of our own descriptor, checked, and
    // unmapped before returning; nothing reads or writes it.
    unsafe {
        let p = libc::mmap(core::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0);
        if p == libc::MAP_FAILED {
            return outcome(-1);
        }
        let result = match upgrade {
            Some(up) => outcome(libc::mprotect(p, len, up)),
            None => "ok".into(),
        };
        libc::munmap(p, len);
        result
    }
}

/// A hugetlb memfd that allocates every free 2 MiB page, one by one.
struct Eater {
    fd: OwnedFd,
    pages: u64,
    exhausted: bool,
}

impl Eater {
    fn new() -> std::io::Result<Self> {
        let flags = libc::MFD_CLOEXEC | libc::MFD_HUGETLB | libc::MFD_HUGE_2MB;
        // SAFETY: a literal C string; the result is checked.
        let raw = unsafe { libc::memfd_create(c"vecring-attack-eater".as_ptr(), flags) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // Room for far more pages than any pool here holds.
        // SAFETY: ftruncate on our memfd.
        if unsafe { libc::ftruncate(raw, (1u64 << 40) as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Eater {
            fd,
            pages: 0,
            exhausted: false,
        })
    }

    /// Allocates pages until the pool has none left.
    fn eat(&mut self) {
        loop {
            // SAFETY: fallocate of the next page of our own memfd.
            let rc = unsafe {
                libc::fallocate(
                    self.fd.as_raw_fd(),
                    0,
                    (self.pages * HUGEPAGE_SIZE) as libc::off_t,
                    HUGEPAGE_SIZE as libc::off_t,
                )
            };
            if rc != 0 {
                let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
                self.exhausted = e == libc::ENOSPC;
                if !self.exhausted {
                    report(&format!("eater stopped: {}", sock::errno_name(e)));
                }
                return;
            }
            self.pages += 1;
        }
    }
}
