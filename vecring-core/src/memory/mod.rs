//! Shared-memory regions: a sealed memfd (2 MiB hugepages when available),
//! mapped with `memmap2`, holding the header and the two rings of each
//! queue pair.
//!
//! The master [`create`](Region::create)s a region; the slave
//! [`attach`](Region::attach)es to the fd it received, checking the fd's
//! seals and size and every header field before trusting the layout
//! (`header.rs`). Each ring of a region is a [`RegionRing`]
//! (`region_ring.rs`).

use crate::abi::{self, RegionHeader};
use crate::geometry::Geometry;
use crate::numa;
pub use crate::numa::NumaError;
use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

mod header;
mod region_ring;
pub(crate) use header::validate_header;
pub use header::Expectation;
pub use region_ring::RegionRing;

/// 2 MiB, the hugepage size used.
pub const HUGEPAGE_SIZE: u64 = 2 << 20;
const SMALL_PAGE: u64 = 4096;
use abi::MAX_REGION_SIZE;

/// Whether a region uses hugepages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HugepagePolicy {
    /// Use 2 MiB hugepages; fall back to ordinary pages with one warning.
    #[default]
    Prefer,
    /// Use 2 MiB hugepages or fail.
    Require,
    /// Use ordinary pages.
    Never,
}

/// Parses `prefer`, `require` or `never`, in any case: the one spelling the
/// driver's `hugepages=` devarg, the tool's `--hugepages` and the C API
/// accept.
impl std::str::FromStr for HugepagePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "prefer" => Ok(Self::Prefer),
            "require" => Ok(Self::Require),
            "never" => Ok(Self::Never),
            _ => Err(format!("'{s}' is not one of prefer, require, never")),
        }
    }
}

/// Why a region could not be created.
#[derive(Debug, thiserror::Error)]
pub enum RegionError {
    /// Hugepages were required and none could be had.
    #[error("hugepages required but unavailable ({detail}); reserve some with `echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`")]
    NoHugepages {
        /// What failed.
        detail: String,
    },
    /// A system call failed.
    #[error("{what} failed: {source}")]
    Os {
        /// The call.
        what: &'static str,
        /// The system error.
        source: io::Error,
    },
    /// NUMA placement failed.
    #[error(transparent)]
    Numa(#[from] NumaError),
    /// The queue count is out of range, or the region too large.
    #[error(transparent)]
    Geometry(#[from] crate::geometry::GeometryError),
}

/// Why a received region was refused. Each mismatch names our expectation
/// and the peer's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    /// The fd lacks a seal it must have: against resizing when received,
    /// and also against new writable mappings once the link is up.
    #[error("region fd is not sealed as required (seals {seals:#x})")]
    NotSealed {
        /// The seals found.
        seals: u32,
    },
    /// A header field differs from what we require.
    #[error("region {field} mismatch: ours {ours}, theirs {theirs}")]
    Mismatch {
        /// Which field.
        field: &'static str,
        /// What we expect.
        ours: u64,
        /// What the region says.
        theirs: u64,
    },
    /// The header's geometry or queue count is not valid.
    #[error("region geometry invalid: {0}")]
    Geometry(#[from] crate::geometry::GeometryError),
    /// The fd's size is outside what the header allows.
    #[error("region size {size} is not acceptable (need {min}..={max})")]
    Size {
        /// The fd's real size.
        size: u64,
        /// Smallest acceptable.
        min: u64,
        /// Largest acceptable.
        max: u64,
    },
    /// A system call failed.
    #[error("{what} failed: {errno}")]
    Os {
        /// The call.
        what: &'static str,
        /// errno.
        errno: i32,
    },
}

/// Options for [`Region::create`].
#[derive(Debug, Clone, Default)]
pub struct RegionOptions {
    /// Hugepage use.
    pub hugepages: HugepagePolicy,
    /// NUMA node to bind the memory to.
    pub numa_node: Option<u32>,
}

/// A mapped region holding the header and the rings of its queue pairs.
pub struct Region {
    map: memmap2::MmapRaw,
    fd: OwnedFd,
    header: RegionHeader,
    geometry: Geometry,
    /// Queue pairs, `1..=MAX_QUEUES`, checked at creation or attach.
    queues: u16,
    hugepages: bool,
}

static FALLBACK_WARNED: AtomicBool = AtomicBool::new(false);

fn os_err(what: &'static str) -> RegionError {
    RegionError::Os {
        what,
        source: io::Error::last_os_error(),
    }
}

fn memfd(name: &CStr, huge: bool) -> io::Result<OwnedFd> {
    let mut flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    if huge {
        flags |= libc::MFD_HUGETLB | libc::MFD_HUGE_2MB;
    }
    // SAFETY: `name` is a valid C string; the returned fd is checked.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned to us and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sizes `fd` and maps it; for hugepages the kernel reserves the pages at
/// `mmap`, so a shortage fails here instead of as SIGBUS on first touch.
fn size_and_map(fd: &OwnedFd, size: u64) -> io::Result<memmap2::MmapRaw> {
    // SAFETY: ftruncate on an fd we own.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    memmap2::MmapOptions::new()
        .len(size as usize)
        .map_raw(fd.as_raw_fd())
}

impl Region {
    /// Creates, sizes, places, seals and initialises a region for
    /// `queues` queue pairs of rings of `geometry`, stamped with
    /// `generation`.
    ///
    /// # Errors
    /// [`RegionError::Geometry`] if the queue count is out of range or the
    /// region would exceed [`MAX_REGION_SIZE`]; otherwise
    /// [`RegionError`] names the failing step.
    pub fn create(
        geometry: Geometry,
        queues: u16,
        generation: u64,
        opts: &RegionOptions,
    ) -> Result<Region, RegionError> {
        let min = geometry.region_size_for(queues)?;
        if let Some(node) = opts.numa_node {
            numa::check_node(node)?;
        }
        let mut attempt = None;
        if opts.hugepages != HugepagePolicy::Never {
            let size = abi::align_up(min, HUGEPAGE_SIZE);
            let node_short = opts.numa_node.and_then(|n| {
                numa::free_hugepages_on(n)
                    .filter(|&free| free < size / HUGEPAGE_SIZE)
                    .map(|free| (n, free))
            });
            let tried = match node_short {
                Some((n, free)) => Err(format!(
                    "NUMA node {n} has {free} free 2 MiB pages, {} needed",
                    size / HUGEPAGE_SIZE
                )),
                None => memfd(c"vecring", true)
                    .and_then(|fd| size_and_map(&fd, size).map(|m| (fd, m, size)))
                    .map_err(|e| format!("{} MiB of 2 MiB pages: {e}", size >> 20)),
            };
            match tried {
                Ok(found) => attempt = Some((found, true)),
                Err(detail) if opts.hugepages == HugepagePolicy::Require => {
                    return Err(RegionError::NoHugepages { detail })
                }
                Err(detail) => {
                    if !FALLBACK_WARNED.swap(true, Ordering::Relaxed) {
                        log::warn!("vecring: no hugepages ({detail}); using ordinary 4 KiB pages (slower; set hugepages=require to make this an error)");
                    }
                }
            }
        }
        let ((fd, map, size), hugepages) = match attempt {
            Some(found) => found,
            None => {
                let size = abi::align_up(min, SMALL_PAGE);
                let fd = memfd(c"vecring", false).map_err(|source| RegionError::Os {
                    what: "memfd_create",
                    source,
                })?;
                let map = size_and_map(&fd, size).map_err(|source| RegionError::Os {
                    what: "ftruncate/mmap",
                    source,
                })?;
                ((fd, map, size), false)
            }
        };
        if let Some(node) = opts.numa_node {
            numa::bind(map.as_mut_ptr(), size as usize, node)?;
        }
        // First touch, after the binding, so pages land on the chosen node.
        let page = if hugepages { HUGEPAGE_SIZE } else { SMALL_PAGE } as usize;
        for off in (0..size as usize).step_by(page) {
            // SAFETY: `off < size`, inside our fresh private mapping.
            unsafe { map.as_mut_ptr().add(off).write_volatile(0) };
        }
        // Sealed against resizing now; against new writable mappings and
        // hole punching once both sides have mapped it (`seal_shared`), so
        // F_SEAL_SEAL must wait until then.
        let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        // SAFETY: fcntl on an fd we own.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(os_err("sealing the memfd"));
        }
        let header = RegionHeader {
            magic: abi::MAGIC,
            version_major: abi::VERSION_MAJOR,
            version_minor: abi::VERSION_MINOR,
            header_size: size_of::<RegionHeader>() as u32,
            features: 0,
            slot_count: geometry.slot_count(),
            slot_size: geometry.slot_size(),
            max_frame_len: geometry.max_frame_len(),
            ring_count: abi::ring_count(queues),
            region_size: size,
            generation,
            queue_count: queues.into(),
            reserved32: 0,
            reserved: [0; 24],
        };
        // SAFETY: the mapping is at least HEADER_AREA bytes, page aligned,
        // and not yet shared with anyone.
        unsafe { (map.as_mut_ptr() as *mut RegionHeader).write_volatile(header) };
        Ok(Region {
            map,
            fd,
            header,
            geometry,
            queues,
            hugepages,
        })
    }

    /// Maps a region received from the master and checks it: the fd must be
    /// sealed against shrinking and growing, its size must match the header, and every
    /// header field must be valid and match `expect` where given.
    ///
    /// # Errors
    /// [`AttachError`] names the first field that differs.
    pub fn attach(fd: OwnedFd, expect: &Expectation) -> Result<Region, AttachError> {
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on an fd we own.
        let seals = unsafe { libc::fcntl(raw, libc::F_GET_SEALS) };
        if seals < 0 {
            return Err(AttachError::Os {
                what: "F_GET_SEALS",
                errno: io::Error::last_os_error().raw_os_error().unwrap_or(0),
            });
        }
        if seals & (libc::F_SEAL_SHRINK | libc::F_SEAL_GROW)
            != libc::F_SEAL_SHRINK | libc::F_SEAL_GROW
        {
            return Err(AttachError::NotSealed {
                seals: seals as u32,
            });
        }
        // SAFETY: zeroed stat is a valid out-parameter for fstat.
        let mut st: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: fstat writes into `st`, which outlives the call.
        if unsafe { libc::fstat(raw, &mut st) } != 0 {
            return Err(AttachError::Os {
                what: "fstat",
                errno: io::Error::last_os_error().raw_os_error().unwrap_or(0),
            });
        }
        let size = st.st_size as u64;
        if !(abi::HEADER_AREA..=MAX_REGION_SIZE).contains(&size) {
            return Err(AttachError::Size {
                size,
                min: abi::HEADER_AREA,
                max: MAX_REGION_SIZE,
            });
        }
        let map = memmap2::MmapOptions::new()
            .len(size as usize)
            .map_raw(raw)
            .map_err(|e| AttachError::Os {
                what: "mmap",
                errno: e.raw_os_error().unwrap_or(0),
            })?;
        // Read the header once, into a local; only the copy is used.
        // SAFETY: the mapping holds at least HEADER_AREA bytes, page aligned.
        let header = unsafe { (map.as_ptr() as *const RegionHeader).read_volatile() };
        let (geometry, queues) = validate_header(&header, size, expect)?;
        // SAFETY: `statfs` is plain data, for which all-zero bytes are valid.
        let mut fs: libc::statfs = unsafe { core::mem::zeroed() };
        // SAFETY: fstatfs writes into `fs`, which outlives the call.
        let hugepages =
            unsafe { libc::fstatfs(raw, &mut fs) } == 0 && fs.f_type == libc::HUGETLBFS_MAGIC;
        Ok(Region {
            map,
            fd,
            header,
            geometry,
            queues,
            hugepages,
        })
    }

    /// Seals the region now that both sides have mapped it: no new
    /// writable mapping, no hole punching (`fallocate(PUNCH_HOLE)`,
    /// `MADV_REMOVE`), no further seals. The mappings already made stay
    /// writable. Then makes sure every page of our own mapping is present,
    /// so that holes punched before the seal fail here, with an error,
    /// instead of as a SIGBUS on a later access when the hugepage pool is
    /// empty.
    ///
    /// # Errors
    /// The failing step (the peer may have added seals of its own, or
    /// punched holes that cannot be filled).
    pub fn seal_shared(&self) -> Result<(), RegionError> {
        let seals = libc::F_SEAL_FUTURE_WRITE | libc::F_SEAL_SEAL;
        // SAFETY: fcntl on an fd we own.
        if unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(os_err("sealing the memfd against new writable mappings"));
        }
        self.populate()
    }

    /// Checks that the peer sealed the region as
    /// [`seal_shared`](Self::seal_shared) does, then makes sure every page
    /// of our mapping is present.
    ///
    /// # Errors
    /// [`AttachError::NotSealed`] when the seals are missing, or the
    /// failing step.
    pub fn check_shared_seal(&self) -> Result<(), AttachError> {
        let raw = self.fd.as_raw_fd();
        // SAFETY: fcntl on an fd we own.
        let seals = unsafe { libc::fcntl(raw, libc::F_GET_SEALS) };
        if seals < 0 {
            return Err(AttachError::Os {
                what: "F_GET_SEALS",
                errno: io::Error::last_os_error().raw_os_error().unwrap_or(0),
            });
        }
        let need = libc::F_SEAL_FUTURE_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        if seals & need != need {
            return Err(AttachError::NotSealed {
                seals: seals as u32,
            });
        }
        self.populate().map_err(|e| AttachError::Os {
            what: "populating the region",
            errno: match e {
                RegionError::Os { source, .. } => source.raw_os_error().unwrap_or(0),
                _ => 0,
            },
        })
    }

    /// Faults in every page of our mapping for writing, reporting a page
    /// that cannot be had as an error rather than a signal.
    fn populate(&self) -> Result<(), RegionError> {
        // SAFETY: madvise over exactly our mapping; MADV_POPULATE_WRITE
        // changes no contents, it only makes pages present.
        let rc = unsafe {
            libc::madvise(
                self.map.as_mut_ptr().cast(),
                self.map.len(),
                libc::MADV_POPULATE_WRITE,
            )
        };
        if rc != 0 {
            return Err(os_err("populating the region (MADV_POPULATE_WRITE)"));
        }
        Ok(())
    }

    /// The memfd, to hand to the peer.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The header as written (master) or validated (slave).
    #[cfg(test)]
    pub(crate) fn header(&self) -> &RegionHeader {
        &self.header
    }

    /// The rings' geometry.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Queue pairs in the region (two rings each).
    pub fn queues(&self) -> u16 {
        self.queues
    }

    /// The generation stamped in the header.
    pub fn generation(&self) -> u64 {
        self.header.generation
    }

    /// Whether the region is backed by hugepages.
    pub fn hugepages(&self) -> bool {
        self.hugepages
    }

    /// The region's size in bytes.
    pub fn size(&self) -> usize {
        self.map.len()
    }

    /// The region's first byte (for diagnostics such as NUMA queries).
    pub fn as_ptr(&self) -> *const u8 {
        self.map.as_ptr()
    }

    /// The NUMA node of each page of the region (`move_pages(2)` asked
    /// about one address per page).
    ///
    /// # Errors
    /// The system error if the query fails.
    pub fn page_nodes(&self) -> io::Result<Vec<i32>> {
        let page = if self.hugepages {
            HUGEPAGE_SIZE
        } else {
            SMALL_PAGE
        } as usize;
        numa::nodes_of_pages(self.map.as_ptr(), self.map.len(), page)
    }
}

impl core::fmt::Debug for Region {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Region")
            .field("size", &self.map.len())
            .field("geometry", &self.geometry)
            .field("queues", &self.queues)
            .field("generation", &self.header.generation)
            .field("hugepages", &self.hugepages)
            .finish()
    }
}

#[cfg(test)]
mod tests;
