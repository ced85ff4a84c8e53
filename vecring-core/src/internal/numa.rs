//! NUMA placement of a mapping: bind before first touch, and ask where
//! pages live.

use std::io;
use std::path::Path;

const MPOL_BIND: libc::c_int = 2;
/// Node mask words passed to the kernel: 1024 nodes.
const MASK_WORDS: usize = 16;

/// Why a NUMA request failed.
#[derive(Debug, thiserror::Error)]
pub enum NumaError {
    /// The node is not present on this machine.
    #[error("NUMA node {node} does not exist on this machine (online nodes: {online})")]
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// The kernel's list of online nodes.
        online: String,
    },
    /// The kernel refused the binding.
    #[error("binding memory to NUMA node {node} failed: {source}")]
    Bind {
        /// The node asked for.
        node: u32,
        /// The system error.
        source: io::Error,
    },
}

/// The kernel's list of online nodes, e.g. `0` or `0-1`.
pub fn online_nodes() -> String {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "0".to_string())
}

/// Checks that `node` exists.
///
/// # Errors
/// [`NumaError::NoSuchNode`].
pub fn check_node(node: u32) -> Result<(), NumaError> {
    let sys = Path::new("/sys/devices/system/node");
    let exists = if sys.exists() {
        sys.join(format!("node{node}")).exists()
    } else {
        node == 0
    };
    if exists && (node as usize) < MASK_WORDS * 64 {
        Ok(())
    } else {
        Err(NumaError::NoSuchNode {
            node,
            online: online_nodes(),
        })
    }
}

/// Free 2 MiB hugepages on `node`, if the kernel tells.
pub fn free_hugepages_on(node: u32) -> Option<u64> {
    let p =
        format!("/sys/devices/system/node/node{node}/hugepages/hugepages-2048kB/free_hugepages");
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Binds `len` bytes at `addr` to `node`; call before the pages are first
/// touched.
///
/// # Errors
/// [`NumaError`] if the node does not exist or the kernel refuses.
pub fn bind(addr: *mut u8, len: usize, node: u32) -> Result<(), NumaError> {
    check_node(node)?;
    let mut mask = [0u64; MASK_WORDS];
    mask[node as usize / 64] |= 1 << (node % 64);
    // SAFETY: mbind only changes the policy of our own mapping
    // [addr, addr+len); the mask outlives the call and holds MASK_WORDS*64
    // bits, as passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr as usize,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            (MASK_WORDS * 64) as libc::c_ulong,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        return Err(NumaError::Bind {
            node,
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// The node of each page in `[addr, addr+len)` (stepping by `page`), as
/// `move_pages(2)` reports it: a node number, or a negative errno for a page
/// not present.
///
/// # Errors
/// The system error if the query fails.
pub fn nodes_of_pages(addr: *const u8, len: usize, page: usize) -> io::Result<Vec<i32>> {
    let pages: Vec<*const u8> = (0..len.div_ceil(page))
        .map(|i| addr.wrapping_add(i * page))
        .collect();
    let mut status = vec![0i32; pages.len()];
    // SAFETY: with a null `nodes` argument move_pages only queries; `pages`
    // and `status` hold `pages.len()` entries and outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            pages.len(),
            pages.as_ptr(),
            core::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_zero_exists_and_absurd_node_does_not() {
        check_node(0).unwrap();
        let err = check_node(999).unwrap_err();
        assert!(
            err.to_string().contains("NUMA node 999 does not exist"),
            "{err}"
        );
    }
}
