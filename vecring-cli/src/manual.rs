//! Shell completions and man pages, generated from the command
//! definitions (clap's), so that they list exactly the commands and
//! options this build of the tool takes: `vecring completions SHELL`
//! prints a completion script, `vecring manpages DIR` writes `vecring.1`
//! and a page per command (`vecring-tap.1`, ...). Packages install both.

use clap::CommandFactory;
use std::path::Path;

/// Prints the completion script for `shell` on stdout.
///
/// # Errors
/// Never today; a `Result` like the other commands.
pub fn completions(shell: clap_complete::Shell) -> Result<(), String> {
    let mut cmd = crate::Cli::command();
    clap_complete::generate(shell, &mut cmd, "vecring", &mut std::io::stdout());
    Ok(())
}

/// Writes the man pages into `dir` (which must exist) and names them on
/// stdout.
///
/// # Errors
/// `dir` missing or not writable.
pub fn manpages(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let cmd = crate::Cli::command();
    clap_mangen::generate_to(cmd, dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("vecring") && n.ends_with(".1"))
        .collect();
    pages.sort();
    for p in pages {
        println!("{}", dir.join(p).display());
    }
    Ok(())
}
