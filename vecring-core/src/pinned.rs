//! Knowing when a region handed to a peer is really gone.
//!
//! A peer that received a region's memfd can keep it (or a mapping of it,
//! or an `O_PATH` descriptor) after it leaves; the memory stays allocated
//! until the last reference goes, whatever the master does. The master
//! therefore counts such regions and stops creating new ones past a bound
//! (see `control`).
//!
//! The count comes from inotify: the master watches each region's inode
//! (`IN_DELETE_SELF`, through `/proc/self/fd/<memfd>`). The kernel reports
//! the inode's removal, then `IN_IGNORED`, when the last reference to the
//! file (descriptor, mapping or path, in any process) is gone and its pages
//! are freed. The watch itself does not keep the pages. A region is
//! *pinned* from the moment the master drops its own copy until that event.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Watches regions' inodes until the last reference to each is gone.
pub(crate) struct PinWatch {
    inotify: OwnedFd,
    /// Watch descriptor -> whether the master has dropped its copy.
    watched: HashMap<i32, bool>,
}

impl PinWatch {
    /// A new, empty watch.
    ///
    /// # Errors
    /// The system error from `inotify_init1`.
    pub(crate) fn new() -> io::Result<Self> {
        // SAFETY: plain inotify creation; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PinWatch {
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            inotify: unsafe { OwnedFd::from_raw_fd(fd) },
            watched: HashMap::new(),
        })
    }

    /// Starts watching the file behind `memfd`; returns the watch's id.
    ///
    /// # Errors
    /// The system error from `inotify_add_watch`.
    pub(crate) fn watch(&mut self, memfd: BorrowedFd<'_>) -> io::Result<i32> {
        let path = format!("/proc/self/fd/{}\0", memfd.as_raw_fd());
        // SAFETY: `path` is NUL-terminated; the result is checked.
        let wd = unsafe {
            libc::inotify_add_watch(
                self.inotify.as_raw_fd(),
                path.as_ptr().cast(),
                libc::IN_DELETE_SELF,
            )
        };
        if wd < 0 {
            return Err(io::Error::last_os_error());
        }
        self.watched.insert(wd, false);
        Ok(wd)
    }

    /// The master has dropped its own copy of region `wd`: from now on only
    /// others can keep it.
    pub(crate) fn dropped(&mut self, wd: i32) {
        if let Some(d) = self.watched.get_mut(&wd) {
            *d = true;
        }
        self.poll();
    }

    /// Reads the pending events; forgets regions whose last reference went.
    pub(crate) fn poll(&mut self) {
        // Room for many events: each is 16 bytes with no name.
        let mut buf = [0u64; 128];
        loop {
            // SAFETY: reads into a live, u64-aligned buffer of its size.
            let n = unsafe {
                libc::read(
                    self.inotify.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    core::mem::size_of_val(&buf),
                )
            };
            if n <= 0 {
                return;
            }
            let head = core::mem::size_of::<libc::inotify_event>();
            let mut at = 0usize;
            let n = n as usize;
            while at + head <= n {
                // SAFETY: the kernel wrote whole events into `buf[..n]`;
                // `at` is at an event boundary; read unaligned to be safe.
                let ev: libc::inotify_event =
                    unsafe { core::ptr::read_unaligned(buf.as_ptr().cast::<u8>().add(at).cast()) };
                if ev.mask & libc::IN_IGNORED != 0 {
                    self.watched.remove(&ev.wd);
                }
                at += head + ev.len as usize;
            }
        }
    }

    /// Whether region `wd` is still held by anyone (the master included).
    pub(crate) fn holds(&self, wd: i32) -> bool {
        self.watched.contains_key(&wd)
    }

    /// Regions the master has dropped that someone else still holds.
    pub(crate) fn pinned(&self) -> usize {
        self.watched.values().filter(|&&d| d).count()
    }

    /// The descriptor to poll for events.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.inotify.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{HugepagePolicy, Region, RegionOptions};
    use crate::Geometry;
    use std::time::{Duration, Instant};

    fn region() -> Region {
        let opts = RegionOptions {
            hugepages: HugepagePolicy::Never,
            numa_node: None,
        };
        Region::create(Geometry::new(64, 2048).unwrap(), 1, 1, &opts).unwrap()
    }

    fn settle(w: &mut PinWatch, pinned: usize) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            w.poll();
            if w.pinned() == pinned {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn a_region_is_pinned_until_the_last_reference_goes() {
        let mut w = PinWatch::new().unwrap();
        let r = region();
        let wd = w.watch(r.fd()).unwrap();
        // Another holder: an O_PATH descriptor, which no open/close event
        // would reveal.
        let path = format!("/proc/self/fd/{}\0", r.fd().as_raw_fd());
        // SAFETY: NUL-terminated path; the result is checked.
        let held = unsafe { libc::open(path.as_ptr().cast(), libc::O_PATH | libc::O_CLOEXEC) };
        assert!(held >= 0);
        // SAFETY: `held` is ours.
        let held = unsafe { OwnedFd::from_raw_fd(held) };
        assert_eq!(w.pinned(), 0, "the master's own copy is not pinned");
        drop(r);
        w.dropped(wd);
        assert_eq!(w.pinned(), 1);
        std::thread::sleep(Duration::from_millis(20));
        w.poll();
        assert_eq!(w.pinned(), 1, "still held through the O_PATH descriptor");
        drop(held);
        assert!(settle(&mut w, 0), "released once the last holder closed");
    }

    #[test]
    fn a_region_nobody_else_holds_is_released_at_once() {
        let mut w = PinWatch::new().unwrap();
        let r = region();
        let wd = w.watch(r.fd()).unwrap();
        drop(r);
        w.dropped(wd);
        assert!(settle(&mut w, 0));
    }
}
