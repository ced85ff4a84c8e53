//! `vecring-attack`: the hostile processes of the attack tests
//! (`tests/attacks_*.rs`). Each role talks to a real master or slave over
//! its socket, reports what happened on stdout, one `word key=value...`
//! line per event, and holds what it took until its stdin closes.
//!
//! ```text
//! vecring-attack take-fd       socket=P rounds=N stop-above=K
//! vecring-attack silent        socket=P count=N
//! vecring-attack flood         socket=P
//! vecring-attack crowd         socket=P hold=N
//! vecring-attack slave         run-dir=R domain=D link=L timeout-ms=T
//! vecring-attack slave-drop    run-dir=R domain=D link=L up-ms=T
//! vecring-attack churn         run-dir=R domain=D link=L secs=S
//! vecring-attack fake-master   socket=P mode=M
//! vecring-attack seal-attack   run-dir=R domain=D link=L
//! vecring-attack wait-attack   run-dir=R domain=D link=L mode=M [after-ms=T] [secs=S]
//! vecring-attack plant         where=hello socket=P
//! vecring-attack pin           socket=P secs=S stop-above=K
//! vecring-attack plant         where=doorbell run-dir=R domain=D link=L
//! vecring-attack plant         where=hogs socket=P count=N
//! vecring-attack plant         where=flood socket=P run-dir=R domain=D link=L
//! vecring-attack rotate        socket=P first=U count=N again=M
//! vecring-attack forge-lost    run-dir=R domain=D link=L
//! vecring-attack outside-connect netns=PATH name=NAME
//! vecring-attack pause         socket=P timeout-ms=T
//! ```

//!
//! A `socket=` that starts with `@` is an abstract name (`@vecring/1/d/l`):
//! the fake master and the listening roles then bind it in their own network
//! namespace, as a squatter inside a container would.

mod close;
mod fake_master;
mod forge;
mod netns;
mod pause;
mod peer;
mod pin;
mod plant;
mod rotate;
mod seal;
mod sock;
mod wait;

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;

/// `key=value` arguments of a role.
pub struct Args(HashMap<String, String>);

impl Args {
    /// The value of `key`; exits with a usage error when missing.
    pub fn get(&self, key: &str) -> &str {
        match self.0.get(key) {
            Some(v) => v,
            None => {
                eprintln!("vecring-attack: missing {key}=...");
                std::process::exit(2);
            }
        }
    }

    /// The value of `key`, if given.
    pub fn opt(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The value of `key` as a number.
    pub fn num(&self, key: &str) -> u64 {
        let v = self.get(key);
        v.parse().unwrap_or_else(|_| {
            eprintln!("vecring-attack: {key}={v} is not a number");
            std::process::exit(2);
        })
    }
}

/// Prints one report line and flushes it, so that the test sees it even
/// if this process dies right after.
pub fn report(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Blocks until stdin closes: the test's way of ending a role.
pub fn until_stdin_closes() {
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
}

fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let Some(role) = argv.next() else {
        eprintln!("usage: vecring-attack ROLE key=value...");
        return ExitCode::from(2);
    };
    let args = Args(
        argv.filter_map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect(),
    );
    let ok = match role.as_str() {
        "take-fd" => peer::take_fd(&args),
        "silent" => peer::silent(&args),
        "flood" => peer::flood(&args),
        "crowd" => peer::crowd(&args),
        "slave" => peer::slave(&args),
        "slave-drop" => peer::slave_drop(&args),
        "churn" => peer::churn(&args),
        "fake-master" => fake_master::run(&args),
        "seal-attack" => seal::run(&args),
        "wait-attack" => wait::run(&args),
        "plant" => plant::run(&args),
        "pin" => pin::run(&args),
        "rotate" => rotate::run(&args),
        "master-close" => close::run(&args),
        "forge-lost" => forge::run(&args),
        "outside-connect" => netns::run(&args),
        "pause" => pause::run(&args),
        _ => {
            eprintln!("vecring-attack: unknown role {role}");
            return ExitCode::from(2);
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
