//! `vecring_options_from_env`: the link's names from the process
//! environment, as a CDI device (`vecring cdi write`) sets it in a
//! container, so that a C application's image needs no per-container
//! command line. The same variables the tool's options and the DPDK
//! driver's `env=1` read.

use crate::error::{guard, Error};
use crate::options::{vecring_options_t, OPTIONS_SIZE_V1, OPTIONS_SIZE_V2};
use std::ffi::{c_char, c_int, CStr};

/// The variables, and the field each fills.
const VARIABLES: [(&CStr, Field); 4] = [
    (c"VECRING_DOMAIN", Field::Domain),
    (c"VECRING_LINK", Field::Link),
    (c"VECRING_RUN_DIR", Field::RunDir),
    (c"VECRING_NETNS", Field::Netns),
];

#[derive(Clone, Copy)]
enum Field {
    Domain,
    Link,
    RunDir,
    Netns,
}

/// Sets `domain`, `link`, `run_dir` and `netns` of `*opts` that are NULL
/// to the values of `VECRING_DOMAIN`, `VECRING_LINK`, `VECRING_RUN_DIR`
/// and `VECRING_NETNS` that are set (the environment's own strings, as
/// `getenv` returns them: `vecring_open` copies them); `netns` only in
/// options of a layout that has it. Returns how many fields it set.
///
/// # Safety
/// `opts` must be null or point to options filled by
/// `vecring_options_init` (at least their `size` bytes writable); no other
/// thread may change the environment meanwhile (as for `getenv`).
#[no_mangle]
pub unsafe extern "C" fn vecring_options_from_env(opts: *mut vecring_options_t) -> c_int {
    guard(|| {
        if opts.is_null() {
            return Err(Error::inval("opts is NULL"));
        }
        // SAFETY: non-null (checked) and readable (caller); `size` is the
        // first field, so 4 bytes are in bounds for any version.
        let size = unsafe { opts.cast::<u32>().read_unaligned() };
        let ours = std::mem::size_of::<vecring_options_t>() as u32;
        if !(OPTIONS_SIZE_V1..=ours).contains(&size) {
            return Err(Error::inval(format!(
                "options.size is {size}; call vecring_options_init() first (expected {ours})"
            )));
        }
        let has_netns =
            size as usize >= OPTIONS_SIZE_V2 as usize + std::mem::size_of::<*const c_char>();
        let mut set = 0;
        for (var, field) in VARIABLES {
            if matches!(field, Field::Netns) && !has_netns {
                continue;
            }
            // SAFETY: each field lies inside the caller's `size` bytes (the
            // first three in the first layout, checked above; `netns` when
            // `has_netns`), which the caller guarantees writable; the
            // struct is the caller's, so the fields are aligned.
            let slot: &mut *const c_char = unsafe {
                match field {
                    Field::Domain => &mut (*opts).domain,
                    Field::Link => &mut (*opts).link,
                    Field::RunDir => &mut (*opts).run_dir,
                    Field::Netns => &mut (*opts).netns,
                }
            };
            if slot.is_null() {
                // SAFETY: a NUL-terminated name; the caller guarantees no
                // concurrent change of the environment.
                let value = unsafe { libc::getenv(var.as_ptr()) };
                if !value.is_null() {
                    *slot = value;
                    set += 1;
                }
            }
        }
        Ok(set)
    })
}
