//! A real slave that forges the master's count of frames lost
//! (`forge-lost run-dir=R domain=D link=L`): it attaches, reads nothing
//! while the master fills the ring towards it, reports `up`, and at the
//! first line on stdin rewrites every descriptor of that ring (queue 0) to
//! a length of one byte, reports `forged descriptors=N`, and exits. The
//! master counts the frames it sent and the slave never read when the
//! generation ends, from descriptors in shared memory: rewritten, a frame
//! of 24 slots reads as 24 frames of one.

use crate::{report, until_stdin_closes, Args};
use std::io::BufRead;
use std::sync::atomic::Ordering;
use std::time::Duration;
use vecring_core::internal::abi::{self, Dir, SlotDesc};
use vecring_core::{Link, Role};

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
    let Some(region) = link.region() else {
        report("error link went down");
        return false;
    };
    report("up");
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        until_stdin_closes();
        return true;
    }
    let g = region.geometry();
    let ring = abi::ring_index(0, Dir::MasterToSlave);
    let descs = abi::ring_offset(ring, g.slot_count(), g.slot_size()) + abi::DESC_OFFSET;
    for i in 0..g.slot_count() as usize {
        // SAFETY: the descriptor array of the ring lies inside the mapped
        // region (its layout is the ABI's), and descriptors are only ever
        // accessed atomically.
        let d = unsafe {
            &*region
                .as_ptr()
                .add(descs as usize)
                .cast::<SlotDesc>()
                .add(i)
        };
        let word = d.0.load(Ordering::Relaxed);
        d.0.store((word & !0xffff) | 1, Ordering::Relaxed);
    }
    report(&format!("forged descriptors={}", g.slot_count()));
    // Leaving ends the generation: the master counts what is unread.
    drop(link);
    true
}
