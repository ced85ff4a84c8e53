use super::*;
use crate::ring::RingStorage;
use std::sync::Arc;

fn small() -> Geometry {
    Geometry::new(64, 2048).unwrap()
}

#[test]
fn create_then_attach_round_trips() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    };
    let region = Region::create(small(), 1, 7, &opts).unwrap();
    let fd = region.fd().try_clone_to_owned().unwrap();
    let peer = Region::attach(
        fd,
        &Expectation {
            geometry: Some(small()),
            generation: Some(7),
            ..Expectation::default()
        },
    )
    .unwrap();
    assert_eq!(peer.geometry(), small());
    assert_eq!(peer.generation(), 7);
    assert_eq!(peer.size(), region.size());
}

#[test]
fn attach_names_each_mismatch() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    };
    let region = Region::create(small(), 1, 3, &opts).unwrap();
    let other = Geometry::new(128, 2048).unwrap();
    let fd = region.fd().try_clone_to_owned().unwrap();
    let err = Region::attach(
        fd,
        &Expectation {
            geometry: Some(other),
            ..Expectation::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        AttachError::Mismatch {
            field: "slot count",
            ours: 128,
            theirs: 64
        }
    );
    assert!(err.to_string().contains("ours 128, theirs 64"));
    let fd = region.fd().try_clone_to_owned().unwrap();
    let err = Region::attach(
        fd,
        &Expectation {
            generation: Some(4),
            ..Expectation::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err,
        AttachError::Mismatch {
            field: "generation",
            ours: 4,
            theirs: 3
        }
    );
}

#[test]
fn header_checks_catch_every_field() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    };
    let region = Region::create(small(), 1, 1, &opts).unwrap();
    let good = *region.header();
    let size = region.size() as u64;
    let none = Expectation::default();
    assert!(validate_header(&good, size, &none).is_ok());
    type Case = (fn(&mut RegionHeader), &'static str);
    let cases: [Case; 13] = [
        (|h| h.magic = 0, "magic"),
        (|h| h.version_major = 9, "major version"),
        // A peer of ABI 4 (index-published rings) is refused, both
        // versions named.
        (
            |h| h.version_major = 4,
            "major version mismatch: ours 5, theirs 4",
        ),
        (|h| h.header_size = 8, "header size"),
        (|h| h.features = 1 << 63, "features"),
        (|h| h.ring_count = 3, "ring count"),
        (
            |h| h.ring_count = 4,
            "ring count (2 per queue) mismatch: ours 2, theirs 4",
        ),
        (
            |h| h.queue_count = 0,
            "queue count 0 is not between 1 and 16",
        ),
        (
            |h| h.queue_count = 17,
            "queue count 17 is not between 1 and 16",
        ),
        (|h| h.queue_count = u32::MAX, "queue count 4294967295"),
        (|h| h.slot_count = 1 << 30, "geometry"),
        (|h| h.slot_size = 3, "geometry"),
        (|h| h.region_size = 1, "region size"),
    ];
    for (corrupt, what) in cases {
        let mut h = good;
        corrupt(&mut h);
        let err = validate_header(&h, size, &none).unwrap_err();
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
    // A header claiming rings larger than the fd.
    let mut h = good;
    h.slot_count = 4096;
    assert!(matches!(
        validate_header(&h, size, &none),
        Err(AttachError::Size { .. })
    ));
    // A header claiming more queues than the fd holds, with the ring
    // count to match.
    let mut h = good;
    h.queue_count = 2;
    h.ring_count = 4;
    assert_eq!(
        validate_header(&h, size, &none),
        Err(AttachError::Size {
            size,
            min: small().min_region_size(2),
            max: abi::MAX_REGION_SIZE
        })
    );
}

fn plain() -> RegionOptions {
    RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    }
}

#[test]
fn regions_hold_every_queue() {
    for queues in [1, 4, abi::MAX_QUEUES] {
        let region = Region::create(small(), queues, 9, &plain()).unwrap();
        let h = *region.header();
        assert_eq!(h.queue_count, u32::from(queues));
        assert_eq!(h.ring_count, 2 * u32::from(queues));
        assert_eq!(region.queues(), queues);
        assert!(region.size() as u64 >= small().min_region_size(queues));
        let fd = region.fd().try_clone_to_owned().unwrap();
        let peer = Region::attach(
            fd,
            &Expectation {
                queues: Some(queues),
                announced_queues: Some(queues),
                ..Expectation::default()
            },
        )
        .unwrap();
        assert_eq!(peer.queues(), queues);
        // Every ring of the peer's mapping sits where the creator put it.
        let (mine, theirs) = (Arc::new(region), Arc::new(peer));
        for ring in 0..abi::ring_count(queues) as usize {
            let a = mine.ring(ring);
            let b = theirs.ring(ring);
            a.control()
                .head
                .index
                .store(ring as u64 + 1, Ordering::Relaxed);
            assert_eq!(
                b.control().head.index.load(Ordering::Relaxed),
                ring as u64 + 1
            );
        }
    }
}

#[test]
fn queue_count_mismatches_are_named() {
    let region = Region::create(small(), 2, 5, &plain()).unwrap();
    let attach = |expect: Expectation| {
        Region::attach(region.fd().try_clone_to_owned().unwrap(), &expect).unwrap_err()
    };
    let err = attach(Expectation {
        queues: Some(4),
        ..Expectation::default()
    });
    assert_eq!(
        err.to_string(),
        "region queue count mismatch: ours 4, theirs 2"
    );
    // The Hello said one thing, the header another.
    let err = attach(Expectation {
        announced_queues: Some(3),
        ..Expectation::default()
    });
    assert_eq!(
        err,
        AttachError::Mismatch {
            field: "queue count (handshake vs header)",
            ours: 3,
            theirs: 2
        }
    );
}

#[test]
fn create_refuses_bad_queue_counts() {
    for queues in [0, abi::MAX_QUEUES + 1] {
        let err = Region::create(small(), queues, 1, &plain()).unwrap_err();
        assert!(err.to_string().contains("queue count"), "{err}");
    }
    let big = Geometry::new(1 << 20, 1024).unwrap();
    let err = Region::create(big, 2, 1, &plain()).unwrap_err();
    assert!(
        err.to_string().contains("2 queue pairs of 1048576 slots"),
        "{err}"
    );
}

#[test]
#[should_panic(expected = "ring index 2 out of range for 1 queues")]
fn ring_past_the_queues_is_a_programming_error() {
    let region = Arc::new(Region::create(small(), 1, 1, &plain()).unwrap());
    let _ = region.ring(2);
}

#[test]
fn unsealed_fd_is_refused() {
    let fd = memfd(c"plain", false).unwrap();
    // SAFETY: ftruncate on our own fd.
    assert_eq!(unsafe { libc::ftruncate(fd.as_raw_fd(), 1 << 20) }, 0);
    assert!(matches!(
        Region::attach(fd, &Expectation::default()),
        Err(AttachError::NotSealed { .. })
    ));
}

#[test]
fn sealed_against_resize() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    };
    let region = Region::create(small(), 1, 1, &opts).unwrap();
    // SAFETY: ftruncate on a borrowed fd; expected to fail.
    let rc = unsafe { libc::ftruncate(region.fd().as_raw_fd(), 4096) };
    assert_eq!(rc, -1);
}

#[test]
fn absent_numa_node_is_a_clear_error() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: Some(4000),
    };
    let err = Region::create(small(), 1, 1, &opts).unwrap_err();
    assert!(
        err.to_string().contains("NUMA node 4000 does not exist"),
        "{err}"
    );
}

#[test]
fn numa_binding_places_pages() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Prefer,
        numa_node: Some(0),
    };
    let region = Region::create(small(), 1, 1, &opts).unwrap();
    let nodes = region.page_nodes().unwrap();
    assert!(!nodes.is_empty());
    assert!(nodes.iter().all(|&n| n == 0), "{nodes:?}");
}

/// The ring's conformance suite on a ring of a memfd region: the
/// second ring, whose place follows from the first's size, in ordinary
/// pages so that it runs without hugepages.
mod ring_on_region {
    use super::*;

    fn region_ring(geometry: Geometry) -> RegionRing {
        let opts = RegionOptions {
            hugepages: HugepagePolicy::Never,
            numa_node: None,
        };
        let region = Region::create(geometry, 1, 1, &opts).unwrap();
        Arc::new(region).ring(abi::RING_SLAVE_TO_MASTER)
    }

    crate::ring::tests::ring_suite!(region_ring);
}
