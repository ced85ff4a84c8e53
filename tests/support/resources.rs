//! What the test process holds: its descriptors, its mappings of vecring
//! regions and its datagram sockets, counted for leak checks and for the
//! attacks that ring a peer's doorbell; and the pages that back a
//! process's regions.

/// Number of open descriptors of this process.
///
/// # Panics
/// If `/proc/self/fd` cannot be read: a leak check that cannot count
/// fails instead of comparing zero with zero.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap_or_else(|e| panic!("cannot count descriptors in /proc/self/fd: {e}"))
        .count()
}

/// What [`assert_no_leak`] compares against: open descriptors and region
/// mappings now. Both are the whole process's: take them in a test armed
/// with [`crate::Watchdog::alone`].
pub fn resources() -> (usize, usize) {
    (open_fds(), region_mappings())
}

/// How long [`assert_no_leak`] lets descriptors given up settle: vecring
/// closes what a peer passed on closer threads (`closer::dispose`), so a
/// region or doorbell let go of just now may still be open for a moment.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Asserts that the process holds at most `fd_slack` more descriptors than
/// in `before` (from [`resources`]) and no more region mappings, once what
/// was given up has had `SETTLE` (2 s) to close: a leak stays.
pub fn assert_no_leak(before: (usize, usize), fd_slack: usize) {
    let (fds, maps) = before;
    let end = std::time::Instant::now() + SETTLE;
    let (fds_now, maps_now) = loop {
        let now = resources();
        if (now.0 <= fds + fd_slack && now.1 <= maps) || std::time::Instant::now() >= end {
            break now;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(fds_now <= fds + fd_slack, "fd leak: {fds} -> {fds_now}");
    assert!(maps_now <= maps, "mapping leak: {maps} -> {maps_now}");
}

/// Number of mappings of vecring regions in this process.
///
/// # Panics
/// If `/proc/self/maps` cannot be read, as [`open_fds`].
pub fn region_mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap_or_else(|e| panic!("cannot count mappings in /proc/self/maps: {e}"))
        .lines()
        .filter(|l| l.contains("memfd:vecring"))
        .count()
}

/// Each mapping of a vecring region in process `pid` (`"self"` for this
/// one), as `(inode, KiB)`: the region's memfd (the same inode in every
/// process that maps it) and the kernel's page size backing the mapping
/// (2048 on 2 MiB hugepages, 4 on ordinary pages), from
/// `/proc/<pid>/smaps`: what really backs the region, whatever the process
/// says about it.
///
/// # Panics
/// If the process's `smaps` cannot be read.
pub fn region_pages(pid: &str) -> Vec<(u64, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .unwrap_or_else(|e| panic!("cannot read /proc/{pid}/smaps: {e}"));
    let mut pages = Vec::new();
    // The inode of the vecring mapping being read, if any.
    let mut inode = None;
    for line in smaps.lines() {
        // A mapping's first line: address range, permissions, offset,
        // device, inode, path; the fields that follow start with a name
        // and a colon.
        let words: Vec<&str> = line.split_whitespace().collect();
        if words
            .first()
            .is_some_and(|w| w.contains('-') && !w.ends_with(':'))
        {
            inode = words
                .get(4)
                .filter(|_| line.contains("memfd:vecring"))
                .and_then(|i| i.parse::<u64>().ok());
        } else if let (Some(i), Some(kib)) = (inode, line.strip_prefix("KernelPageSize:")) {
            let kib = kib.trim().trim_end_matches("kB").trim();
            let kib = kib
                .parse()
                .unwrap_or_else(|_| panic!("KernelPageSize '{kib}'"));
            pages.push((i, kib));
        }
    }
    pages
}

/// Every `AF_UNIX` datagram socket this process holds: the doorbell ends
/// of its links (what a hostile peer rings at will).
pub fn datagram_sockets() -> Vec<std::os::fd::RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        e.ok()?
            .file_name()
            .to_str()?
            .parse::<std::os::fd::RawFd>()
            .ok()
    })
    .filter(|&fd| {
        let mut v: libc::c_int = 0;
        let mut len = core::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `v` and `len` are valid for an int option; a closed
        // or non-socket fd just fails.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TYPE,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        rc == 0 && v == libc::SOCK_DGRAM
    })
    .collect()
}
