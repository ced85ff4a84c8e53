//! Who a container is on the host: the host uids and gids its
//! `lxc.idmap` lines give it, or (Docker, Podman) its init process's
//! `/proc/<pid>/uid_map` and `gid_map`.

use std::os::unix::fs::MetadataExt;

/// One `lxc.idmap` range: `count` ids from `inside` in the container are
/// `host` and on, on the host.
#[derive(Clone, Copy)]
struct Range {
    inside: u32,
    host: u32,
    count: u32,
}

/// Which host uids and gids are the container's, from its `lxc.idmap`
/// lines; a container without any is privileged: its root is the host's.
#[derive(Default)]
pub(super) struct IdMap {
    uids: Vec<Range>,
    gids: Vec<Range>,
}

impl IdMap {
    /// The `lxc.idmap` lines of a configuration (`u`, `g` or `b`, inside
    /// id, host id, count); others, and malformed ones, are skipped.
    pub(super) fn parse(config: &str) -> IdMap {
        let mut map = IdMap::default();
        for l in config.lines() {
            let Some((k, v)) = l.split_once('=') else {
                continue;
            };
            if k.trim() != "lxc.idmap" {
                continue;
            }
            let f: Vec<&str> = v.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|s| s.parse().ok());
            let (Some(inside), Some(host), Some(count)) = (num(1), num(2), num(3)) else {
                continue;
            };
            let range = Range {
                inside,
                host,
                count,
            };
            match f.first() {
                Some(&"u") => map.uids.push(range),
                Some(&"g") => map.gids.push(range),
                Some(&"b") => {
                    map.uids.push(range);
                    map.gids.push(range);
                }
                _ => {}
            }
        }
        map
    }

    /// The maps of a process's user namespace (`/proc/<pid>/uid_map` and
    /// `gid_map`: inside id, host id, count per line).
    pub(super) fn from_proc(uid_map: &str, gid_map: &str) -> IdMap {
        let ranges = |text: &str| {
            text.lines()
                .filter_map(|l| {
                    let f: Vec<u32> = l
                        .split_whitespace()
                        .filter_map(|n| n.parse().ok())
                        .collect();
                    let [inside, host, count] = f[..] else {
                        return None;
                    };
                    Some(Range {
                        inside,
                        host,
                        count,
                    })
                })
                .collect()
        };
        IdMap {
            uids: ranges(uid_map),
            gids: ranges(gid_map),
        }
    }

    fn to_host(ranges: &[Range], inside: u32) -> Option<u32> {
        ranges.iter().find_map(|r| {
            let off = inside.checked_sub(r.inside)?;
            (off < r.count).then(|| r.host.checked_add(off)).flatten()
        })
    }

    fn to_inside(ranges: &[Range], host: u32) -> Option<u32> {
        ranges.iter().find_map(|r| {
            let off = host.checked_sub(r.host)?;
            (off < r.count).then(|| r.inside.checked_add(off)).flatten()
        })
    }

    /// The host uid of the container's uid `inside`, when it is mapped.
    pub(super) fn host_uid(&self, inside: u32) -> Option<u32> {
        Self::to_host(&self.uids, inside)
    }

    /// The host gid of the container's gid `inside`, when it is mapped.
    pub(super) fn host_gid(&self, inside: u32) -> Option<u32> {
        Self::to_host(&self.gids, inside)
    }

    /// The container's uid that is the host's `host`, when it has one.
    pub(super) fn inside_uid(&self, host: u32) -> Option<u32> {
        Self::to_inside(&self.uids, host)
    }

    /// The container's gid that is the host's `host`, when it has one.
    pub(super) fn inside_gid(&self, host: u32) -> Option<u32> {
        Self::to_inside(&self.gids, host)
    }

    /// The host uid the container's root is, when it is mapped.
    pub(super) fn root(&self) -> Option<u32> {
        self.uids.iter().find(|r| r.inside == 0).map(|r| r.host)
    }

    fn privileged(&self) -> bool {
        self.uids.is_empty()
    }

    fn has(ranges: &[Range], id: u32) -> bool {
        ranges
            .iter()
            .any(|r| id >= r.host && u64::from(id) < u64::from(r.host) + u64::from(r.count))
    }

    /// Whether one of the container's users can change the entries of a
    /// directory with this owner and mode (its root can, in any directory
    /// one of its uids owns).
    pub(super) fn may_write(&self, md: &std::fs::Metadata) -> bool {
        self.privileged()
            || Self::has(&self.uids, md.uid())
            || md.mode() & 0o002 != 0
            || (md.mode() & 0o020 != 0 && Self::has(&self.gids, md.gid()))
    }
}

/// The container's user: its ids inside and on the host.
pub(super) struct Identity {
    pub inside: (u32, u32),
    pub host: (u32, u32),
}

/// Whether `uid`/`gid` get `want` (r 4, w 2, x 1) on a file with `md`.
pub(super) fn allows(md: &std::fs::Metadata, (uid, gid): (u32, u32), want: u32) -> bool {
    let mode = md.mode();
    let bits = if md.uid() == uid {
        mode >> 6
    } else if md.gid() == gid {
        mode >> 3
    } else {
        mode
    };
    bits & want == want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_ranges_are_read_from_the_config() {
        let m = IdMap::parse("lxc.idmap = u 0 100000 65536\nlxc.idmap = g 0 200000 10\n");
        assert!(IdMap::has(&m.uids, 100000) && IdMap::has(&m.uids, 165535));
        assert!(!IdMap::has(&m.uids, 165536) && !IdMap::has(&m.uids, 0));
        assert!(IdMap::has(&m.gids, 200009) && !IdMap::has(&m.gids, 200010));
        assert!(!m.privileged());
        assert_eq!(m.root(), Some(100000));
        assert!(IdMap::parse("lxc.uts.name = x\n").privileged());
    }

    #[test]
    fn proc_maps_translate_both_ways() {
        // Rootless podman: its root is 1000, 1.. are 100000 on.
        let m = IdMap::from_proc(
            "         0       1000          1\n         1     100000      65536\n",
            "0 1000 1\n1 100000 65536\n",
        );
        assert_eq!(m.host_uid(0), Some(1000));
        assert_eq!(m.host_uid(1000), Some(100_999));
        assert_eq!(m.host_uid(65537), None);
        assert_eq!(m.inside_uid(100_999), Some(1000));
        assert_eq!(m.inside_gid(1000), Some(0));
        assert_eq!(m.inside_uid(5), None);
        // No user namespace: the whole range, each id itself.
        let all = IdMap::from_proc("0 0 4294967295\n", "0 0 4294967295\n");
        assert_eq!(all.host_uid(4_294_967_294), Some(4_294_967_294));
        assert_eq!(all.host_gid(7), Some(7));
    }
}
