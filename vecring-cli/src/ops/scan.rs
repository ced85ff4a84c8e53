//! Finding the links under a run directory and asking each master for
//! its status, for `list` and `stats`.
//!
//! The run directory may hold entries planted by others: nothing is
//! followed, every entry is looked at with `lstat`, and a socket is
//! queried only through the descriptor of the directory that holds it.
//! All sockets are asked at once and their answers awaited until one
//! deadline, so listeners that never answer cost a scan one wait in all.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use vecring_core::status::{self, LinkStatus, QueryError};

/// How long the masters of one scan may take to answer, all together:
/// they are asked at once, so a listener that never answers (anyone who
/// can write a domain directory can plant one) costs a scan at most this.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// Questions waiting for their answers at once, a descriptor each; the
/// rest are asked as answers come.
const IN_FLIGHT: usize = 128;

/// What one socket under the run directory turned out to be.
pub(super) enum Found {
    /// A live master answered.
    Live(Box<LinkStatus>),
    /// Nobody listens: the master died without removing its socket.
    Stale,
    /// A master listens but did not answer usefully.
    NoAnswer(String),
}

/// One link (socket) found.
pub(super) struct Entry {
    pub(super) domain: String,
    pub(super) link: String,
    pub(super) found: Found,
}

/// Everything found under a run directory.
#[derive(Default)]
pub(super) struct Scan {
    pub(super) links: Vec<Entry>,
    /// Entries that are not what vecring creates: (path, what is wrong).
    pub(super) problems: Vec<(PathBuf, String)>,
}

fn open_path_dir(path: &Path) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: valid C string; the result is checked.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn kind_of(ft: std::fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(String, std::fs::Metadata)>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        // symlink_metadata: the entry itself, never what it points to.
        if let Ok(md) = std::fs::symlink_metadata(e.path()) {
            v.push((name, md));
        }
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(v)
}

/// Looks at every domain directory and link socket under `run_dir`.
pub(super) fn scan(run_dir: &Path, only: Option<(&str, Option<&str>)>) -> Result<Scan, String> {
    let mut out = Scan::default();
    // The sockets to ask: (index in `out.links`, path through the
    // directory's descriptor, place among its domain's sockets), and the
    // directories' descriptors, open until all are asked.
    let mut asks: Vec<(usize, PathBuf, usize)> = Vec::new();
    let mut dir_fds: Vec<OwnedFd> = Vec::new();
    let domains = match sorted_entries(run_dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(format!("cannot read {}: {e}", run_dir.display())),
    };
    for (domain, md) in domains {
        if only.is_some_and(|(d, _)| d != domain) {
            continue;
        }
        let dpath = run_dir.join(&domain);
        if !md.file_type().is_dir() {
            out.problems.push((
                dpath,
                format!(
                    "{} where a domain directory belongs; ignored",
                    kind_of(md.file_type())
                ),
            ));
            continue;
        }
        if md.mode() & 0o022 != 0 {
            out.problems.push((
                dpath.clone(),
                format!(
                    "writable by group or others (mode {:04o}): masters refuse it",
                    md.mode() & 0o7777
                ),
            ));
        }
        let dir_fd = match open_path_dir(&dpath) {
            Ok(fd) => fd,
            Err(e) => {
                out.problems.push((dpath, format!("cannot open: {e}")));
                continue;
            }
        };
        let entries = match sorted_entries(&dpath) {
            Ok(e) => e,
            Err(e) => {
                out.problems.push((dpath, format!("cannot read: {e}")));
                continue;
            }
        };
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        let mut in_domain = 0;
        for (name, md) in &entries {
            let path = dpath.join(name);
            if let Some(link) = name.strip_suffix(".lock") {
                if !names.contains(&format!("{link}.sock").as_str()) {
                    out.problems.push((
                        path,
                        "lock without a socket: left by a master that died; harmless".into(),
                    ));
                }
                continue;
            }
            // A master binds `.<link>.new` and renames it to `<link>.sock`
            // once it listens; the name outlives only a master that died
            // in between.
            if name.starts_with('.') && name.ends_with(".new") && md.file_type().is_socket() {
                out.problems.push((
                    path,
                    "socket a master was setting up when it died; its next master removes it"
                        .into(),
                ));
                continue;
            }
            let Some(link) = name.strip_suffix(".sock") else {
                out.problems.push((
                    path,
                    format!(
                        "{} vecring did not create; ignored",
                        kind_of(md.file_type())
                    ),
                ));
                continue;
            };
            if only.is_some_and(|(_, l)| l.is_some_and(|l| l != link)) {
                continue;
            }
            if !md.file_type().is_socket() {
                out.problems.push((
                    path,
                    format!(
                        "{} named like a link's socket; ignored",
                        kind_of(md.file_type())
                    ),
                ));
                continue;
            }
            let via = PathBuf::from(format!("/proc/self/fd/{}/{name}", dir_fd.as_raw_fd()));
            asks.push((out.links.len(), via, in_domain));
            in_domain += 1;
            out.links.push(Entry {
                domain: domain.clone(),
                link: link.to_string(),
                found: Found::Stale,
            });
        }
        dir_fds.push(dir_fd);
    }
    // Each domain's first socket, then each one's second, and so on: a
    // domain full of planted listeners cannot keep the others' turn
    // beyond the deadline.
    asks.sort_by_key(|&(i, _, place)| (place, i));
    let vias: Vec<&Path> = asks.iter().map(|(_, v, _)| v.as_path()).collect();
    for ((i, _, _), found) in asks.iter().zip(ask_all(&vias)) {
        out.links[*i].found = found;
    }
    drop(dir_fds);
    Ok(out)
}

fn found_of(answer: Result<LinkStatus, QueryError>) -> Found {
    match answer {
        Ok(s) => Found::Live(Box::new(s)),
        Err(QueryError::NoMaster { .. }) => Found::Stale,
        Err(e) => Found::NoAnswer(e.to_string()),
    }
}

/// Asks the listener at each socket for its link's status, all at once
/// (at most [`IN_FLIGHT`] waiting), and waits for the answers until one
/// deadline, [`ANSWER_WITHIN`] from now; in the order given.
fn ask_all(sockets: &[&Path]) -> Vec<Found> {
    let deadline = Instant::now() + ANSWER_WITHIN;
    let mut found: Vec<Option<Found>> = sockets.iter().map(|_| None).collect();
    let mut next = 0;
    let mut waiting: Vec<(usize, status::Asked)> = Vec::new();
    loop {
        while waiting.len() < IN_FLIGHT && next < sockets.len() {
            match status::ask(sockets[next]) {
                Ok(a) => waiting.push((next, a)),
                Err(e) => found[next] = Some(found_of(Err(e))),
            }
            next += 1;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if waiting.is_empty() || left.is_zero() {
            break;
        }
        let mut fds: Vec<libc::pollfd> = waiting
            .iter()
            .map(|(_, a)| libc::pollfd {
                fd: a.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // Rounded up: a wait of 0 ms would spin until the deadline.
        let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is an array of `fds.len()` valid pollfds.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        let mut still = Vec::with_capacity(waiting.len());
        for ((i, a), p) in waiting.into_iter().zip(&fds) {
            if p.revents != 0 {
                found[i] = Some(found_of(a.answer()));
            } else {
                still.push((i, a));
            }
        }
        waiting = still;
    }
    for (i, _) in waiting {
        found[i] = Some(Found::NoAnswer("the master did not answer in time".into()));
    }
    found
        .into_iter()
        .map(|f| {
            f.unwrap_or_else(|| {
                Found::NoAnswer(format!(
                    "not asked: the {} s the answers may take had passed",
                    ANSWER_WITHIN.as_secs()
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn what_dead_masters_leave_is_named_and_the_rest_is_not_vecrings() {
        let run = std::env::temp_dir().join(format!("vecring-scan-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&run);
        std::fs::create_dir_all(run.join("d")).unwrap();
        for name in ["l.lock", "other"] {
            std::fs::write(run.join("d").join(name), b"").unwrap();
        }
        drop(UnixListener::bind(run.join("d/.l.new")).unwrap());
        drop(UnixListener::bind(run.join("d/.x")).unwrap());
        let s = scan(&run, None).unwrap();
        assert!(s.links.is_empty());
        let said = |name: &str| {
            s.problems
                .iter()
                .find(|(p, _)| p.ends_with(name))
                .map(|(_, what)| what.as_str())
                .unwrap_or_else(|| panic!("nothing said of {name}"))
        };
        assert!(said(".l.new").starts_with("socket a master was setting up"));
        assert!(said("l.lock").starts_with("lock without a socket"));
        assert!(said(".x").contains("did not create"), "{}", said(".x"));
        assert!(said("other").contains("did not create"));
        std::fs::remove_dir_all(&run).unwrap();
    }
}
