//! Opening the link a port's devargs describe ([`open_link`]), with the
//! ring geometry they ask for ([`requested_geometry`]).

use super::lsc::Lsc;
use crate::datapath::shared::Shared;
use crate::devargs::{Devargs, Netns};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use vecring_core::{Geometry, Link, LinkState};

/// The geometry `slots`/`slot_size` ask for, if either is given.
pub fn requested_geometry(args: &Devargs) -> Result<Option<Geometry>, String> {
    if args.slots.is_none() && args.slot_size.is_none() {
        return Ok(None);
    }
    let d = Geometry::default();
    Geometry::new(
        args.slots.unwrap_or(d.slot_count()),
        args.slot_size.unwrap_or(d.slot_size()),
    )
    .map(Some)
    .map_err(|e| format!("invalid ring geometry (keys 'slots', 'slot_size'): {e}"))
}

/// Opens the link the devargs describe. Every change of its state goes to
/// `shared.link_up` (for the data path) and to the port's link-state
/// events.
pub fn open_link(
    args: &Devargs,
    geometry: Option<Geometry>,
    shared: &Arc<Shared>,
    lsc: &Lsc,
) -> Result<Link, String> {
    let notify = lsc.notifier();
    let shared = Arc::clone(shared);
    let on_state = move |state: LinkState| {
        shared.link_up.store(state.is_up(), Ordering::Relaxed);
        notify(state);
    };
    let mut b = Link::builder(&args.domain, &args.link).master(args.master);
    if let Some(node) = args.socket {
        b = b.numa_node(node);
    }
    if let Some(g) = geometry {
        b = b.geometry(g);
    }
    if let Some(dir) = &args.run_dir {
        b = b.run_dir(dir.clone());
    }
    if let Some((uid, gid)) = args.owner {
        b = b.owner(uid, gid);
    }
    for &uid in &args.allow_uids {
        b = b.allow_uid(uid);
    }
    for &uid in &args.master_uids {
        b = b.master_uid(uid);
    }
    if let Some(mode) = args.socket_mode {
        b = b.socket_mode(mode);
    }
    match &args.netns {
        Some(Netns::Own) => b = b.netns_self(),
        Some(Netns::Path(p)) => b = b.netns(p.clone()),
        None => {}
    }
    if let Some(n) = args.queues {
        // A master's count; a slave's expectation, whose mismatch the
        // slave refuses naming both counts.
        b = b.queues(n);
    }
    b = b.hugepages(args.hugepages);
    b = b.on_state_change(on_state);
    b.open().map_err(|e| {
        format!(
            "cannot open link '{}/{}' as {}: {e}",
            args.domain,
            args.link,
            args.role_name()
        )
    })
}
