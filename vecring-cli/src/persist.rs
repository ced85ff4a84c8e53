//! `vecring prepare --persist` and `--forget`: a domain declared to
//! systemd-tmpfiles, so that its directory is made again at every boot.
//!
//! `/run` is a tmpfs: the domain directory `prepare` made is gone after a
//! reboot, and a container that bind-mounts it would not start. The
//! declaration is one file, `<tmpfiles-dir>/vecring-<domain>.conf`
//! (`/etc/tmpfiles.d` by default, where an administrator's entries go),
//! with a `d` line for the run directory and one for the domain directory,
//! each giving the owner (numeric: no name service is asked at boot) and
//! mode the directory has right after `prepare`, which are what a master
//! accepts. `systemd-tmpfiles --create` at boot (systemd-tmpfiles-setup
//! .service) makes both before the containers start.
//!
//! Nothing of the file comes from text systemd-tmpfiles would read as
//! syntax: the domain is a checked name ([`vecring_core::name`]), the run
//! directory is refused unless every character is one that needs no
//! quoting there (no white space, quote, backslash or `%` specifier), and
//! owner and mode are numbers.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Where an administrator's tmpfiles.d entries go.
pub const DEFAULT_TMPFILES_DIR: &str = "/etc/tmpfiles.d";

/// The file that declares `domain`'s directory, in `tmpfiles_dir`.
pub fn entry_path(tmpfiles_dir: &Path, domain: &str) -> PathBuf {
    tmpfiles_dir.join(format!("vecring-{domain}.conf"))
}

/// `run_dir` as it is written in a tmpfiles.d line: absolute, without
/// `.` or `..` components, and of characters systemd-tmpfiles takes as
/// they are. Checked before anything is created.
///
/// # Errors
/// The first character or component that cannot be written, named.
pub fn tmpfiles_path(run_dir: &Path) -> Result<String, String> {
    let shown = crate::escape::printable(&run_dir.to_string_lossy());
    let text = run_dir.to_str().ok_or_else(|| {
        format!("--run-dir {shown}: not UTF-8, which a tmpfiles.d entry cannot name")
    })?;
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+@:,=".contains(c);
    if let Some(c) = text.chars().find(|&c| !safe(c)) {
        return Err(format!(
            "--run-dir {shown}: {c:?} would be read by systemd-tmpfiles as a separator, quote, escape or specifier; --persist takes letters, digits and / . _ - + @ : , ="
        ));
    }
    let mut normal = PathBuf::from("/");
    for part in run_dir.components() {
        match part {
            Component::RootDir => {}
            Component::Normal(p) => normal.push(p),
            _ => {
                return Err(format!(
                    "--run-dir {shown}: give it without . or .. components for --persist"
                ))
            }
        }
    }
    if normal == Path::new("/") {
        return Err("--run-dir /: --persist would declare / itself".into());
    }
    Ok(normal.to_string_lossy().into_owned())
}

/// One `d` line: `path` made a directory of `uid`:`gid` with `mode`.
fn line(path: &str, meta: &fs::Metadata) -> String {
    format!(
        "d {path} {:04o} {} {} -",
        meta.mode() & 0o7777,
        meta.uid(),
        meta.gid()
    )
}

/// The directory at `path` as `prepare` left it (not followed if a
/// symlink: it was just checked to be a directory).
fn directory(path: &Path) -> Result<fs::Metadata, String> {
    let meta = fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: no longer a directory", path.display()));
    }
    Ok(meta)
}

/// The entry's text for `domain` under `run_dir` (as [`tmpfiles_path`]
/// wrote it), from the two directories as they are now.
///
/// # Errors
/// A directory that cannot be inspected.
pub fn entry(domain: &str, run_dir: &str) -> Result<String, String> {
    let run = directory(Path::new(run_dir))?;
    let dir = format!("{run_dir}/{domain}");
    let dom = directory(Path::new(&dir))?;
    Ok(format!(
        "# The vecring domain {domain}: its directory, made again at every boot\n\
         # (/run is a tmpfs) with the owner and mode `vecring prepare` gave it.\n\
         # Written by `vecring prepare --domain {domain} --persist`; removed by\n\
         # `vecring prepare --domain {domain} --forget`.\n\
         {}\n\
         {}\n",
        line(run_dir, &run),
        line(&dir, &dom)
    ))
}

/// Writes `text` as `domain`'s entry in `tmpfiles_dir` (made if missing),
/// replacing the file at once: systemd-tmpfiles never reads half of it.
/// Returns the file's path.
///
/// # Errors
/// The call that failed, with the path.
pub fn write(tmpfiles_dir: &Path, domain: &str, text: &str) -> Result<PathBuf, String> {
    let path = entry_path(tmpfiles_dir, domain);
    fs::create_dir_all(tmpfiles_dir).map_err(|e| format!("{}: {e}", tmpfiles_dir.display()))?;
    // Not ending in .conf: systemd-tmpfiles skips it while it is written.
    let part = tmpfiles_dir.join(format!(".vecring-{domain}.conf.{}", std::process::id()));
    write_then_rename(&part, &path, text).map_err(|e| {
        let _ = fs::remove_file(&part);
        format!("writing {}: {e}", path.display())
    })?;
    Ok(path)
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

/// `vecring prepare --domain D --forget`: removes `domain`'s entry from
/// `tmpfiles_dir`. The directory itself stays until the next boot: a
/// master or a container may be using it.
///
/// # Errors
/// An entry that exists and cannot be removed.
pub fn forget(tmpfiles_dir: &Path, domain: &str) -> Result<(), String> {
    let path = entry_path(tmpfiles_dir, domain);
    match fs::remove_file(&path) {
        Ok(()) => println!(
            "# {} removed: the domain {domain} is no longer made at boot (its directory stays until then)",
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => println!(
            "# {} does not exist: the domain {domain} was not declared there",
            path.display()
        ),
        Err(e) => return Err(format!("removing {}: {e}", path.display())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_written_as_they_are_or_refused() {
        assert_eq!(
            tmpfiles_path(Path::new("/run/vecring")).as_deref(),
            Ok("/run/vecring")
        );
        assert_eq!(
            tmpfiles_path(Path::new("/run//vecring/")).as_deref(),
            Ok("/run/vecring")
        );
        for bad in [
            "/run/vec ring",
            "/run/%H",
            "/run/a\nd /etc 0777 0 0 -",
            "/run/\"q\"",
            "/run/a\\x20",
            "/run/a\tb",
            "/run/../etc",
            "/",
            "/run/é",
        ] {
            assert!(tmpfiles_path(Path::new(bad)).is_err(), "{bad:?} accepted");
        }
    }
}
