use super::*;

fn small() -> Geometry {
    Geometry::new(64, 2048).unwrap()
}

#[test]
fn create_then_attach_round_trips() {
    let opts = RegionOptions {
        hugepages: HugepagePolicy::Never,
        numa_node: None,
    };
    let region = Region::create(small(), 7, &opts).unwrap();
    let fd = region.fd().try_clone_to_owned().unwrap();
    let peer = Region::attach(
        fd,
        &Expectation {
            geometry: Some(small()),
            generation: Some(7),
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
    let region = Region::create(small(), 3, &opts).unwrap();
    let other = Geometry::new(128, 2048).unwrap();
    let fd = region.fd().try_clone_to_owned().unwrap();
    let err = Region::attach(
        fd,
        &Expectation {
            geometry: Some(other),
            generation: None,
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
            geometry: None,
            generation: Some(4),
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
    let region = Region::create(small(), 1, &opts).unwrap();
    let good = *region.header();
    let size = region.size() as u64;
    let none = Expectation::default();
    assert!(validate_header(&good, size, &none).is_ok());
    type Case = (fn(&mut RegionHeader), &'static str);
    let cases: [Case; 8] = [
        (|h| h.magic = 0, "magic"),
        (|h| h.version_major = 9, "major version"),
        (|h| h.header_size = 8, "header size"),
        (|h| h.features = 1 << 63, "features"),
        (|h| h.ring_count = 3, "ring count"),
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
    let region = Region::create(small(), 1, &opts).unwrap();
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
    let err = Region::create(small(), 1, &opts).unwrap_err();
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
    let region = Region::create(small(), 1, &opts).unwrap();
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
        let region = Region::create(geometry, 1, &opts).unwrap();
        Arc::new(region).ring(abi::RING_SLAVE_TO_MASTER)
    }

    crate::ring::tests::ring_suite!(region_ring);
}
