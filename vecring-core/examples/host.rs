//! Host side of a link: the master. Run it, then `container` in another
//! terminal (or inside a container that sees the domain directory):
//!
//! ```text
//! terminal 1:  cargo run --release -p vecring-core --example host
//! terminal 2:  cargo run --release -p vecring-core --example container
//! ```
//!
//! It sends numbered greetings and prints what comes back, and keeps going
//! when the container side stops and starts again.

use std::time::Duration;
use vecring_core::{Link, LinkRecvError, LinkSendError, LinkState, Role};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let run_dir =
        std::env::var("VECRING_RUN_DIR").unwrap_or_else(|_| "/tmp/vecring-example".into());
    let link = Link::builder("example", "eth0")
        .role(Role::Master)
        .run_dir(&run_dir)
        .on_state_change(|s| match s {
            LinkState::Up { generation } => {
                println!("host: container attached (generation {generation})")
            }
            LinkState::Down => println!("host: container gone; waiting for it to come back"),
        })
        .open()?;
    println!("host: listening in {run_dir}/example/eth0.sock; start the container side");
    let mut tx = link.sender()?;
    let mut rx = link.receiver()?;
    let mut buf = vec![0u8; 9216];
    for n in 0u64.. {
        match tx.send(format!("hello #{n} from the host").as_bytes()) {
            Ok(()) | Err(LinkSendError::NoPeer) => {}
            Err(e) => eprintln!("host: send: {e}"),
        }
        std::thread::sleep(Duration::from_millis(500));
        loop {
            match rx.recv(&mut buf) {
                Ok(len) => println!("host: got '{}'", String::from_utf8_lossy(&buf[..len])),
                Err(LinkRecvError::Empty | LinkRecvError::NoPeer) => break,
                Err(e) => {
                    eprintln!("host: receive: {e}");
                    break;
                }
            }
        }
    }
    Ok(())
}
