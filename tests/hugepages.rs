//! Which pages back a region: 2 MiB hugepages when asked to require them
//! (as CI, running as root, can always reserve), and ordinary 4 KiB pages
//! when hugepages are only preferred and the kernel refuses them. The
//! refusal is made certain, whatever the machine's pool holds, by a seccomp
//! filter on the test's own thread that fails `memfd_create` with
//! `MFD_HUGETLB`.

use std::sync::Arc;
use std::time::Duration;
use vecring_core::memory::{Region, RegionError, RegionOptions, HUGEPAGE_SIZE};
use vecring_core::{internal::abi, Consumer, Geometry, HugepagePolicy, Producer, RecvError};
use vecring_tests::{check_frame, fill_frame, hugepages_required, Watchdog};

/// One frame through ring 0 of `region` (a producer and a consumer on the
/// same mapping), checked byte by byte: the pages work.
fn one_frame_through(region: &Arc<Region>) {
    // SAFETY: the only producer and the only consumer of this fresh ring.
    let mut tx = unsafe { Producer::attach(region.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    // SAFETY: as above.
    let mut rx = unsafe { Consumer::attach(region.ring(abi::RING_MASTER_TO_SLAVE)).unwrap() };
    let mut frame = vec![0u8; 1500];
    fill_frame(&mut frame, 7);
    tx.send(&frame).unwrap();
    let mut buf = vec![0u8; 9216];
    let n = rx.recv(&mut buf).unwrap();
    assert_eq!(check_frame(&buf[..n]).unwrap(), 7);
    assert_eq!(rx.recv(&mut buf), Err(RecvError::Empty));
}

/// The kernel's page size, in KiB, of the mapping at `region`'s address
/// (from /proc/self/smaps): what really backs it, whatever the region says.
fn kernel_page_kib(region: &Region) -> u64 {
    let at = region.as_ptr() as usize;
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&at);
                continue;
            }
        }
        if inside {
            if let Some(kib) = line.strip_prefix("KernelPageSize:") {
                return kib.trim().trim_end_matches("kB").trim().parse().unwrap();
            }
        }
    }
    panic!("no mapping at {at:#x} in /proc/self/smaps");
}

#[test]
fn required_hugepages_back_the_region() {
    let _w = Watchdog::new("required hugepages", Duration::from_secs(60));
    let geometry = Geometry::default();
    let size = abi::align_up(geometry.min_region_size(1), HUGEPAGE_SIZE);
    let opts = RegionOptions {
        hugepages: hugepages_required(size / HUGEPAGE_SIZE),
        numa_node: None,
    };
    let region = Arc::new(Region::create(geometry, 1, 1, &opts).unwrap());
    assert!(region.hugepages(), "required, so on hugepages");
    assert_eq!(region.size() as u64, size, "a whole number of 2 MiB pages");
    assert_eq!(kernel_page_kib(&region), 2048, "mapped with 2 MiB pages");
    one_frame_through(&region);
}

/// Installs, on the calling thread only, a seccomp filter that fails
/// `memfd_create` with `ENOMEM` when its flags ask for `MFD_HUGETLB`, as
/// the kernel does when the hugepage pool is empty.
fn refuse_hugetlb_memfds_on_this_thread() {
    // struct seccomp_data: nr at 0, arch at 4, ip at 8, args[] from 16;
    // the low 32 bits of args[1] (the flags) are at 24 on little-endian.
    const NR: u32 = 0;
    const FLAGS_LOW: u32 = 24;
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let mut filter = [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, NR),
        jump(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            libc::SYS_memfd_create as u32,
            0,
            2,
        ),
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, FLAGS_LOW),
        jump(
            libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
            libc::MFD_HUGETLB,
            1,
            0,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::ENOMEM as u32,
        ),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl with an int argument; affects only this thread.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    assert_eq!(
        rc,
        0,
        "PR_SET_NO_NEW_PRIVS: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `prog` points at `filter`, both alive for the call (the
    // kernel copies the program); without TSYNC only this thread is filtered.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        )
    };
    assert_eq!(rc, 0, "PR_SET_SECCOMP: {}", std::io::Error::last_os_error());
}

#[test]
fn preferred_hugepages_fall_back_to_4k_pages_when_refused() {
    let _w = Watchdog::new("4 KiB fallback", Duration::from_secs(60));
    // The filter stays with the thread, which ends with this check.
    std::thread::spawn(|| {
        refuse_hugetlb_memfds_on_this_thread();
        let geometry = Geometry::default();
        let require = RegionOptions {
            hugepages: HugepagePolicy::Require,
            numa_node: None,
        };
        match Region::create(geometry, 1, 1, &require) {
            Err(RegionError::NoHugepages { detail }) => {
                assert!(detail.contains("2 MiB pages"), "{detail}")
            }
            Err(e) => panic!("required hugepages refused with another error: {e}"),
            Ok(_) => panic!("the filter did not take: a region was made on hugepages"),
        }
        let prefer = RegionOptions {
            hugepages: HugepagePolicy::Prefer,
            numa_node: None,
        };
        let region = Arc::new(Region::create(geometry, 1, 1, &prefer).unwrap());
        assert!(!region.hugepages(), "preferred, refused: on 4 KiB pages");
        assert_eq!(
            region.size() as u64,
            abi::align_up(geometry.min_region_size(1), 4096),
            "sized in 4 KiB pages, not rounded up to 2 MiB"
        );
        assert_eq!(kernel_page_kib(&region), 4, "mapped with 4 KiB pages");
        one_frame_through(&region);
    })
    .join()
    .unwrap();
}
