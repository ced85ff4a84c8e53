//! `pause socket=P timeout-ms=T`: asks the master at `socket` to pause its
//! link (`vecring_core::pause`), as the CRIU plugin does before a dump,
//! and holds the pause until stdin closes. Reports `paused`, `refused
//! reason=...`, `timeout reason=...` or `error ...`.

use crate::{report, until_stdin_closes, Args};
use std::path::Path;
use std::time::Duration;
use vecring_core::status::QueryError;

pub fn run(args: &Args) -> bool {
    let timeout = Duration::from_millis(args.opt("timeout-ms").map_or(10_000, |v| {
        v.parse().unwrap_or_else(|_| {
            eprintln!("vecring-attack: timeout-ms={v} is not a number");
            std::process::exit(2);
        })
    }));
    match vecring_core::pause::pause(Path::new(args.get("socket")), timeout) {
        Ok(held) => {
            report("paused");
            until_stdin_closes();
            drop(held);
            true
        }
        Err(QueryError::Refused(why)) => {
            report(&format!("refused reason={why}"));
            until_stdin_closes();
            true
        }
        Err(QueryError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
            report(&format!("timeout reason={e}"));
            until_stdin_closes();
            true
        }
        Err(e) => {
            report(&format!("error {e}"));
            false
        }
    }
}
