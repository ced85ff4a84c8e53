//! Which host id a Docker or Podman container's user is: what `vecring
//! prepare` gives the master as `--owner`.
//!
//! A runtime maps the container's uids (and, the same way, its gids)
//! onto the host's in one of four ways:
//!
//! - rootful, without a user namespace: each id is itself;
//! - dockerd with `userns-remap`: id `n` is the `n`-th subordinate id of
//!   the remap user (`/etc/subuid`, its ranges one after the other);
//! - rootless (Podman, or a rootless dockerd): the container's root is the
//!   invoking user's own id, id `n` ≥ 1 the `(n-1)`-th of its subordinate
//!   ids;
//! - rootless Podman with `--userns=keep-id`: the user's own id is itself
//!   inside too; the ids below it are its first subordinate ids, those
//!   above it the next ones (`n` > own: the `(n-1)`-th).

use std::ffi::{CStr, CString};

/// A user's subordinate ids (`/etc/subuid` or `/etc/subgid`): its ranges
/// in the order of the file, which is the order runtimes use them in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubIds {
    /// (first host id, count) of each range.
    ranges: Vec<(u32, u32)>,
    /// The file they were read from, for messages.
    file: String,
}

impl SubIds {
    /// The ranges of `text` (`name:first:count` lines; a line may name the
    /// user by uid) that belong to the user `name` with id `id`.
    pub fn parse(file: &str, text: &str, name: &str, id: u32) -> SubIds {
        let ranges = text
            .lines()
            .filter_map(|l| {
                let mut f = l.trim().split(':');
                let who = f.next()?;
                let first = f.next()?.parse().ok()?;
                let count = f.next()?.parse().ok()?;
                (who == name || who.parse() == Ok(id)).then_some((first, count))
            })
            .filter(|&(_, count)| count > 0)
            .collect();
        SubIds {
            ranges,
            file: file.to_string(),
        }
    }

    /// The ranges of `name` (id `id`) in `file`; none when it cannot be
    /// read.
    pub fn read(file: &str, name: &str, id: u32) -> SubIds {
        SubIds::parse(
            file,
            &std::fs::read_to_string(file).unwrap_or_default(),
            name,
            id,
        )
    }

    /// How many subordinate ids there are.
    pub fn total(&self) -> u64 {
        self.ranges.iter().map(|&(_, n)| u64::from(n)).sum()
    }

    /// The `n`-th subordinate id (from 0), if there are that many.
    fn nth(&self, mut n: u64) -> Option<u32> {
        for &(first, count) in &self.ranges {
            if n < u64::from(count) {
                return u32::try_from(u64::from(first) + n).ok();
            }
            n -= u64::from(count);
        }
        None
    }
}

/// How a container's ids are the host's (the module's four ways).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Userns {
    /// Rootful without a user namespace.
    Host,
    /// dockerd's `userns-remap`: the remap user's subordinate ids.
    Remap {
        /// The remap user's name, for messages.
        user: String,
        /// Its subordinate ids.
        sub: SubIds,
    },
    /// Rootless: the container's root is `own`, the others `sub`.
    Rootless {
        /// The invoking user's name, for messages.
        user: String,
        /// Its own id.
        own: u32,
        /// Its subordinate ids.
        sub: SubIds,
    },
    /// Rootless Podman with `--userns=keep-id`.
    KeepId {
        /// The invoking user's name, for messages.
        user: String,
        /// Its own id, the same inside.
        own: u32,
        /// Its subordinate ids.
        sub: SubIds,
    },
}

/// The host id that the container's id `inside` is under `map`.
///
/// # Errors
/// An id the runtime does not map (beyond the subordinate ids, or any but
/// the root when the user has none), saying what to do.
pub fn host_id(map: &Userns, inside: u32) -> Result<u32, String> {
    let (user, sub, nth) = match map {
        Userns::Host => return Ok(inside),
        Userns::Remap { user, sub } => (user, sub, u64::from(inside)),
        Userns::Rootless { own, .. } if inside == 0 => return Ok(*own),
        Userns::Rootless { user, sub, .. } => (user, sub, u64::from(inside) - 1),
        Userns::KeepId { own, .. } if inside == *own => return Ok(*own),
        Userns::KeepId { user, sub, own } if inside < *own => (user, sub, u64::from(inside)),
        Userns::KeepId { user, sub, .. } => (user, sub, u64::from(inside) - 1),
    };
    sub.nth(nth).ok_or_else(|| {
        if sub.total() == 0 {
            format!(
                "id {inside} in the container is not mapped: {user} has no subordinate ids in {} (the runtime then maps only {}); add a range (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {user}) or run the slave as {}",
                sub.file,
                if matches!(map, Userns::Remap { .. }) { "nothing" } else { "the container's root, to the user's own id" },
                if matches!(map, Userns::KeepId { .. }) { "the user's own id" } else { "the container's root (--user 0:0)" },
            )
        } else {
            format!(
                "id {inside} in the container is not mapped: {user} has {} subordinate ids in {}; choose a smaller id",
                sub.total(),
                sub.file
            )
        }
    })
}

/// A host user: name, uid and primary gid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// Login name.
    pub name: String,
    /// Its uid.
    pub uid: u32,
    /// Its primary gid.
    pub gid: u32,
}

/// The host user named `name` (or with that numeric uid).
///
/// # Errors
/// No such user.
pub fn user_named(name: &str) -> Result<User, String> {
    if let Ok(uid) = name.parse::<u32>() {
        return user_with_uid(uid);
    }
    let c = CString::new(name).map_err(|_| format!("no user '{}'", name.escape_default()))?;
    lookup(|pwd, buf, out| {
        // SAFETY: c is a valid C string; pwd, buf (with its length) and out
        // are valid for writes for the duration of the call.
        unsafe { libc::getpwnam_r(c.as_ptr(), pwd, buf.as_mut_ptr(), buf.len(), out) }
    })
    .ok_or_else(|| format!("no user '{}' on this host", name.escape_default()))
}

/// The host user with uid `uid`.
///
/// # Errors
/// No such user.
pub fn user_with_uid(uid: u32) -> Result<User, String> {
    lookup(|pwd, buf, out| {
        // SAFETY: pwd, buf (with its length) and out are valid for writes
        // for the duration of the call.
        unsafe { libc::getpwuid_r(uid, pwd, buf.as_mut_ptr(), buf.len(), out) }
    })
    .ok_or_else(|| format!("no user with uid {uid} on this host"))
}

/// Runs a `getpw*_r` call and copies its answer out.
fn lookup(
    call: impl Fn(*mut libc::passwd, &mut [libc::c_char], *mut *mut libc::passwd) -> libc::c_int,
) -> Option<User> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: passwd is plain old data; all-zero is a valid value.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    if call(&mut pwd, &mut buf, &mut out) != 0 || out.is_null() {
        return None;
    }
    // SAFETY: on success pw_name points to a C string in buf, alive here.
    let name = unsafe { CStr::from_ptr(pwd.pw_name) };
    Some(User {
        name: name.to_string_lossy().into_owned(),
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBUID: &str = "root:100000:65536\nalice:200000:1000\n1001:300000:10\nalice:400000:5\n";

    fn sub(name: &str, id: u32) -> SubIds {
        SubIds::parse("/etc/subuid", SUBUID, name, id)
    }

    #[test]
    fn subordinate_ranges_are_the_users_in_order() {
        let a = sub("alice", 1000);
        assert_eq!(a.total(), 1005);
        assert_eq!(a.nth(0), Some(200_000));
        assert_eq!(a.nth(999), Some(200_999));
        assert_eq!(a.nth(1000), Some(400_000));
        assert_eq!(a.nth(1005), None);
        // By uid as well as by name.
        assert_eq!(sub("bob", 1001).nth(9), Some(300_009));
        assert_eq!(sub("nobody", 65534).total(), 0);
    }

    #[test]
    fn rootful_ids_are_the_hosts() {
        assert_eq!(host_id(&Userns::Host, 0), Ok(0));
        assert_eq!(host_id(&Userns::Host, 1000), Ok(1000));
    }

    #[test]
    fn remapped_ids_are_the_remap_users_subordinate_ids() {
        let m = Userns::Remap {
            user: "dockremap".into(),
            sub: sub("root", 0),
        };
        assert_eq!(host_id(&m, 0), Ok(100_000));
        assert_eq!(host_id(&m, 1000), Ok(101_000));
        assert_eq!(host_id(&m, 65535), Ok(165_535));
        let e = host_id(&m, 65536).unwrap_err();
        assert!(e.contains("65536 subordinate ids"), "{e}");
    }

    #[test]
    fn rootless_root_is_the_user_and_the_others_subordinate() {
        let m = Userns::Rootless {
            user: "alice".into(),
            own: 1000,
            sub: sub("alice", 1000),
        };
        assert_eq!(host_id(&m, 0), Ok(1000));
        assert_eq!(host_id(&m, 1), Ok(200_000));
        assert_eq!(host_id(&m, 1000), Ok(200_999));
        assert_eq!(host_id(&m, 1001), Ok(400_000));
        assert!(host_id(&m, 1006).is_err());
    }

    #[test]
    fn keep_id_keeps_the_users_own_id() {
        let m = Userns::KeepId {
            user: "alice".into(),
            own: 1000,
            sub: sub("alice", 1000),
        };
        assert_eq!(host_id(&m, 1000), Ok(1000));
        assert_eq!(host_id(&m, 0), Ok(200_000));
        assert_eq!(host_id(&m, 999), Ok(200_999));
        assert_eq!(host_id(&m, 1001), Ok(400_000));
    }

    #[test]
    fn a_user_without_subordinate_ids_has_only_its_root_mapped() {
        let m = Userns::Rootless {
            user: "nobody".into(),
            own: 65534,
            sub: sub("nobody", 65534),
        };
        assert_eq!(host_id(&m, 0), Ok(65534));
        let e = host_id(&m, 1000).unwrap_err();
        assert!(
            e.contains("nobody has no subordinate ids in /etc/subuid")
                && e.contains("usermod --add-subuids"),
            "{e}"
        );
    }

    #[test]
    fn users_are_found_by_name_and_uid() {
        assert_eq!(user_named("root").map(|u| u.uid), Ok(0));
        assert_eq!(user_named("0").map(|u| u.name), Ok("root".into()));
        assert!(user_named("no-such-user-here").is_err());
    }
}
