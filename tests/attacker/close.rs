//! A legitimate Rust master whose link is closed under attack
//! (`master-close run-dir=R domain=D link=L allow-uid=U`): opens the link
//! as master (ordinary pages, its socket open to every local user, only
//! `U` admitted), reports `up` once a slave attached, and at the first line
//! on stdin drops the [`Link`] and reports `closed ms=N`: how long the drop
//! took, whatever the slave planted or still holds. vecring-core's log
//! lines go to stderr (among them the one saying the control thread was
//! left behind).

use crate::{report, Args};
use std::io::BufRead;
use std::time::{Duration, Instant};
use vecring_core::{HugepagePolicy, Link, Role};

/// Prints every record on stderr.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        eprintln!("{} {}", record.level(), record.args());
    }
    fn flush(&self) {}
}

pub fn run(args: &Args) -> bool {
    static LOGGER: Stderr = Stderr;
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Info);
    }
    let uid = args.num("allow-uid") as u32;
    let link = match Link::builder(args.get("domain"), args.get("link"))
        .role(Role::Master)
        .run_dir(args.get("run-dir"))
        .hugepages(HugepagePolicy::Never)
        .socket_mode(0o666)
        .allow_uid(uid)
        .open()
    {
        Ok(l) => l,
        Err(e) => {
            report(&format!("error {e}"));
            return false;
        }
    };
    report("listening");
    if let Err(e) = link.wait_up(Duration::from_secs(30)) {
        report(&format!("error {e}"));
        return false;
    }
    report("up");
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    let t0 = Instant::now();
    drop(link);
    report(&format!("closed ms={}", t0.elapsed().as_millis()));
    true
}
