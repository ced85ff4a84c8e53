//! What ADD made, written before it makes it: the TAP bridge's process
//! (its pid and start time, so that a pid reused after a reboot or a crash
//! is never signalled), for DEL and CHECK. The switch's port needs no
//! state: its name comes from the container's id and interface.
//!
//! The records say which process root signals and which port it removes,
//! so nobody else may write them: the directory is opened without
//! following a symlink and refused unless it is this user's and writable
//! by nobody else, and every file in it is reached through that
//! descriptor, never following a symlink (a record is read only if it is
//! a regular file of a sane size; a new one is made under a fresh name and
//! renamed over the old).

use crate::error::{code, CniError, Result};
use serde_json::{json, Value};
use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// One ADD's record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    pub port: String,
    pub bridge: String,
    /// The TAP bridge: (pid, start time in clock ticks since boot).
    pub tap: Option<(u32, u64)>,
}

/// Largest record read: a few hundred bytes are written.
const MAX_RECORD: u64 = 64 * 1024;

fn state_error(what: &str, path: &Path, e: impl std::fmt::Display) -> CniError {
    CniError::new(
        code::STATE,
        format!("{what} {}: {e}", path.display()),
        "the plugin's state directory ('stateDir')",
    )
}

fn cvt(rc: libc::c_int) -> std::io::Result<libc::c_int> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn cstring(s: &str) -> std::io::Result<CString> {
    CString::new(s).map_err(|_| std::io::ErrorKind::InvalidInput.into())
}

/// The state directory, opened and checked.
#[derive(Debug)]
pub struct Records {
    dir: OwnedFd,
    path: PathBuf,
}

impl Records {
    /// Opens `path` (made `0700` with its parents when missing) and checks
    /// it: a directory, not a symlink, of this user, writable by nobody
    /// else.
    pub fn open(path: &Path) -> Result<Records> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| state_error("creating", path, e))?;
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|e| state_error("opening", path, e))?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid C string; the result is checked.
        let fd = cvt(unsafe { libc::open(c.as_ptr(), flags) })
            .map_err(|e| state_error("opening", path, e))?;
        // SAFETY: a fresh descriptor nobody else owns.
        let dir = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a zeroed stat is a valid out-parameter; fstat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: our descriptor; `st` outlives the call.
        cvt(unsafe { libc::fstat(dir.as_raw_fd(), &mut st) })
            .map_err(|e| state_error("inspecting", path, e))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let problem = if st.st_uid != me {
            Some(format!("it is owned by uid {}, not {me}", st.st_uid))
        } else if st.st_mode & 0o022 != 0 {
            Some(format!(
                "it is writable by group or others (mode {:04o})",
                st.st_mode & 0o7777
            ))
        } else {
            None
        };
        if let Some(p) = problem {
            return Err(CniError::new(
                code::STATE,
                format!("refusing {}: {p}", path.display()),
                "the records say what root signals and removes: give 'stateDir' a directory of root's that only root may write",
            ));
        }
        Ok(Records {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// The path of `file` in the directory, for messages.
    pub fn path(&self, file: &str) -> PathBuf {
        self.path.join(file)
    }

    fn open_at(&self, file: &str, flags: libc::c_int, mode: u32) -> std::io::Result<File> {
        let c = cstring(file)?;
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: our directory descriptor and a valid C string; checked.
        let fd = cvt(unsafe { libc::openat(self.dir.as_raw_fd(), c.as_ptr(), flags, mode) })?;
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    fn unlink(&self, file: &str) -> std::io::Result<()> {
        let c = cstring(file)?;
        // SAFETY: our directory descriptor and a valid C string.
        match cvt(unsafe { libc::unlinkat(self.dir.as_raw_fd(), c.as_ptr(), 0) }) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Reads the record `<key>.json`, if there is one.
    pub fn load(&self, key: &str) -> Result<Option<State>> {
        let file = format!("{key}.json");
        let path = self.path(&file);
        // Non-blocking: a FIFO in its place must not hold the plugin.
        let mut f = match self.open_at(&file, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_error("reading", &path, e)),
        };
        let md = f.metadata().map_err(|e| state_error("reading", &path, e))?;
        if !md.is_file() || md.len() > MAX_RECORD {
            return Err(state_error(
                "reading",
                &path,
                "not a record of this plugin (not a regular file, or too long)",
            ));
        }
        let mut text = String::new();
        (&mut f)
            .take(MAX_RECORD)
            .read_to_string(&mut text)
            .map_err(|e| state_error("reading", &path, e))?;
        let v: Value = serde_json::from_str(&text).map_err(|e| state_error("parsing", &path, e))?;
        let s = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let tap = match (
            v.get("tapPid").and_then(Value::as_u64),
            v.get("tapStart").and_then(Value::as_u64),
        ) {
            (Some(pid), Some(start)) => Some((u32::try_from(pid).unwrap_or(0), start)),
            _ => None,
        };
        Ok(Some(State {
            port: s("port"),
            bridge: s("bridge"),
            tap,
        }))
    }

    /// Writes the record `<key>.json`: a new file, root's alone, renamed
    /// over the old.
    pub fn save(&self, key: &str, st: &State) -> Result<()> {
        let file = format!("{key}.json");
        let path = self.path(&file);
        let v = json!({
            "port": st.port,
            "bridge": st.bridge,
            "tapPid": st.tap.map(|t| t.0),
            "tapStart": st.tap.map(|t| t.1),
        });
        // A name of this process's: one a crashed plugin of the same pid
        // left is ours to replace.
        let tmp = format!(".{key}.{}.tmp", std::process::id());
        self.unlink(&tmp)
            .map_err(|e| state_error("writing", &self.path(&tmp), e))?;
        let create = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        let mut f = self
            .open_at(&tmp, create, 0o600)
            .map_err(|e| state_error("writing", &self.path(&tmp), e))?;
        let written = f
            .write_all(v.to_string().as_bytes())
            .and_then(|_| f.sync_all())
            .and_then(|_| {
                let (from, to) = (cstring(&tmp)?, cstring(&file)?);
                let d = self.dir.as_raw_fd();
                // SAFETY: our directory descriptor for both names, valid C
                // strings; rename never follows a symlink.
                cvt(unsafe { libc::renameat(d, from.as_ptr(), d, to.as_ptr()) }).map(|_| ())
            });
        if let Err(e) = written {
            let _ = self.unlink(&tmp);
            return Err(state_error("writing", &path, e));
        }
        Ok(())
    }

    /// Removes the record `<key>.json` and the bridge's log; nothing for
    /// what is gone.
    pub fn remove(&self, key: &str) -> Result<()> {
        let _ = self.unlink(&format!("{key}.log"));
        let file = format!("{key}.json");
        self.unlink(&file)
            .map_err(|e| state_error("removing", &self.path(&file), e))
    }

    /// The bridge's log `<key>.log`, opened to append (made `0600`).
    pub fn log(&self, key: &str) -> Result<File> {
        let file = format!("{key}.log");
        let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_NONBLOCK;
        let f = self
            .open_at(&file, flags, 0o600)
            .map_err(|e| state_error("opening", &self.path(&file), e))?;
        match f.metadata() {
            Ok(md) if md.is_file() => Ok(f),
            _ => Err(state_error(
                "opening",
                &self.path(&file),
                "not a regular file",
            )),
        }
    }

    /// The last `n` lines of the bridge's log, for an error's details.
    pub fn log_tail(&self, key: &str, n: usize) -> String {
        let mut text = String::new();
        if let Ok(f) = self.open_at(&format!("{key}.log"), libc::O_RDONLY | libc::O_NONBLOCK, 0) {
            if f.metadata().is_ok_and(|m| m.is_file()) {
                let _ = f.take(MAX_RECORD).read_to_string(&mut text);
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

/// The name a container's interface's files share: `<id>-<ifname>`.
pub fn key(container_id: &str, ifname: &str) -> String {
    format!("{container_id}-{ifname}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vecring-cni-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_record_round_trips_and_goes() {
        let dir = scratch("state");
        let r = Records::open(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(r.load("abc-net1").unwrap(), None);
        let s = State {
            port: "vr0123".into(),
            bridge: "br0".into(),
            tap: Some((42, 4242)),
        };
        r.save("abc-net1", &s).unwrap();
        assert_eq!(r.load("abc-net1").unwrap(), Some(s));
        let mode = std::fs::metadata(dir.join("abc-net1.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        writeln!(r.log("abc-net1").unwrap(), "one\ntwo\nthree").unwrap();
        assert_eq!(r.log_tail("abc-net1", 2), "two\nthree");
        r.remove("abc-net1").unwrap();
        r.remove("abc-net1").unwrap();
        assert_eq!(r.load("abc-net1").unwrap(), None);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_or_a_symlink_is_refused() {
        let dir = scratch("open");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o733)).unwrap();
        let e = Records::open(&dir).unwrap_err();
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = scratch("open-link");
        symlink(&dir, &link).unwrap();
        assert!(Records::open(&link).is_err());
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn planted_files_are_never_followed_nor_waited_on() {
        let dir = scratch("planted");
        let r = Records::open(&dir).unwrap();
        let victim = scratch("victim");
        std::fs::write(&victim, b"untouched").unwrap();
        // The record and the log as symlinks: refused, the target intact.
        symlink(&victim, dir.join("c-net1.json")).unwrap();
        symlink(&victim, dir.join("c-net1.log")).unwrap();
        assert!(r.load("c-net1").is_err());
        assert!(r.log("c-net1").is_err());
        assert_eq!(r.log_tail("c-net1", 5), "");
        // Saving replaces the link itself, never writes through it.
        r.save("c-net1", &State::default()).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
        // A FIFO as the record: refused at once, not waited on.
        std::fs::remove_file(dir.join("c-net1.json")).unwrap();
        let c = CString::new(dir.join("c-net1.json").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(r.load("c-net1").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&victim).unwrap();
    }
}
