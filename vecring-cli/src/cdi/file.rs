//! A spec file, changed whole: read under a lock, written to a temporary
//! file in the same directory and renamed over it (mode 0644: rootless
//! Podman reads the spec directories as its user). A runtime reading the
//! directory meanwhile sees the old spec or the new one, never half of
//! one; two `vecring cdi` commands on one directory take turns (an
//! exclusive `flock` on the directory itself, so no lock file is left
//! behind).

use serde_json::Value;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The spec file's directory, locked while it is held.
pub struct Locked {
    _dir: File,
    path: PathBuf,
}

impl Locked {
    /// Locks `path`'s directory, made (0755) if missing and `create`;
    /// `None` if it is missing and not to be made.
    ///
    /// # Errors
    /// A path that is not `DIR/NAME.json`, or the call that failed.
    pub fn open(path: &Path, create: bool) -> Result<Option<Locked>, String> {
        let named_json = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.len() > ".json".len() && n.ends_with(".json"));
        if !named_json {
            return Err(format!(
                "{}: a spec file's name ends in .json (CDI runtimes read only .json and .yaml files)",
                path.display()
            ));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.exists() {
            if !create {
                return Ok(None);
            }
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let handle = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(handle.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!(
                "locking {}: {}",
                dir.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(Some(Locked {
            _dir: handle,
            path: path.to_path_buf(),
        }))
    }

    /// The spec as it is, or `None` if there is no file.
    ///
    /// # Errors
    /// A file that cannot be read or is not JSON.
    pub fn read(&self) -> Result<Option<Value>, String> {
        match fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                format!(
                    "{}: not a JSON document ({e}); left as it is",
                    self.path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", self.path.display())),
        }
    }

    /// Replaces the file with `spec`.
    ///
    /// # Errors
    /// The call that failed; the file is then as it was.
    pub fn write(&self, spec: &Value) -> Result<(), String> {
        let mut text = serde_json::to_string_pretty(spec).map_err(|e| e.to_string())?;
        text.push('\n');
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Not ending in .json: a runtime scanning the directory skips it.
        let part = self
            .path
            .with_file_name(format!(".{name}.{}", std::process::id()));
        write_then_rename(&part, &self.path, &text).map_err(|e| {
            let _ = fs::remove_file(&part);
            format!("writing {}: {e}", self.path.display())
        })
    }

    /// Removes the file (a spec with no device is not valid).
    ///
    /// # Errors
    /// The call that failed.
    pub fn delete(&self) -> Result<(), String> {
        fs::remove_file(&self.path).map_err(|e| format!("removing {}: {e}", self.path.display()))
    }
}

/// Writes `text` to the new file `part` (0644), then renames it `path`.
fn write_then_rename(part: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(part)?;
    // Exactly: the umask may have taken bits away.
    f.set_permissions(fs::Permissions::from_mode(0o644))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    fs::rename(part, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn written_whole_with_mode_0644_then_deleted() {
        let dir = std::env::temp_dir().join(format!("vecring-cdi-file-{}", std::process::id()));
        let path = dir.join("sub/vecring.json");
        let spec = json!({"kind": "vecring.dev/link"});
        assert!(Locked::open(&path, false).unwrap().is_none());
        assert!(!dir.exists(), "nothing made without create");
        {
            let f = Locked::open(&path, true).unwrap().unwrap();
            assert_eq!(f.read().unwrap(), None);
            f.write(&spec).unwrap();
            assert_eq!(f.read().unwrap(), Some(spec.clone()));
        }
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o644);
        let names: Vec<_> = fs::read_dir(dir.join("sub")).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        fs::write(&path, "{not json").unwrap();
        let f = Locked::open(&path, false).unwrap().unwrap();
        assert!(f.read().unwrap_err().contains("not a JSON document"));
        f.delete().unwrap();
        assert!(!path.exists());
        fs::remove_dir_all(&dir).unwrap();
        for bad in ["/tmp/x.yaml", "/tmp/.json", "/tmp/x"] {
            assert!(
                Locked::open(Path::new(bad), true).is_err(),
                "{bad} accepted"
            );
        }
    }
}
