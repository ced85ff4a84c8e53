//! Container side of a link: the slave. It echoes every frame back in upper
//! case. Start it before or after `host`; stop and restart it at will.
//!
//! ```text
//! cargo run --release -p vecring-core --example container
//! ```

use std::time::Duration;
use vecring_core::{Link, LinkRecvError, Role};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let run_dir =
        std::env::var("VECRING_RUN_DIR").unwrap_or_else(|_| "/tmp/vecring-example".into());
    let link = Link::builder("example", "eth0")
        .role(Role::Slave)
        .run_dir(&run_dir)
        .open()?;
    println!("container: waiting for the host at {run_dir}/example/eth0.sock");
    let generation = link.wait_up(Duration::from_secs(3600))?;
    println!("container: attached (generation {generation})");
    let mut tx = link.sender()?;
    let mut rx = link.receiver()?;
    let mut buf = vec![0u8; 9216];
    loop {
        match rx.recv(&mut buf) {
            Ok(len) => {
                println!("container: got '{}'", String::from_utf8_lossy(&buf[..len]));
                let reply = String::from_utf8_lossy(&buf[..len]).to_uppercase();
                if let Err(e) = tx.send(reply.as_bytes()) {
                    eprintln!("container: send: {e}");
                }
            }
            Err(LinkRecvError::Empty) => std::thread::sleep(Duration::from_millis(1)),
            Err(LinkRecvError::NoPeer) => {
                println!("container: host gone; waiting for it");
                link.wait_up(Duration::from_secs(3600))?;
                println!("container: host back");
            }
            Err(e) => return Err(e.into()),
        }
    }
}
