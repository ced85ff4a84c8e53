//! Receiving with tokio: the `Receiver`'s file descriptor (its wait set,
//! the same across link down and up) registered once with `AsyncFd`, so
//! that the task sleeps in tokio's reactor until frames arrive, and the
//! thread is free for other tasks meanwhile.
//!
//! ```text
//! cargo run --release -p vecring-core --example tokio_recv
//! ```
//!
//! Both sides run in this process (the slave on a plain thread sending a
//! frame now and then, with a pause in which the link goes down and comes
//! back); a real host program would run only the master.

use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use vecring_core::{HugepagePolicy, Link, LinkRecvError, Receiver, Role};

/// Frames the slave sends in each of its two visits.
const FRAMES: u32 = 5;

/// Receives one frame, sleeping in tokio's reactor while none is ready.
async fn recv(rx: &mut AsyncFd<Receiver>, buf: &mut [u8]) -> Result<usize, LinkRecvError> {
    loop {
        match rx.get_mut().recv(buf) {
            Ok(n) => return Ok(n),
            // Down: sleep as well; the link's next change wakes the set.
            Err(LinkRecvError::Empty | LinkRecvError::NoPeer) => {}
            Err(e) => return Err(e),
        }
        // Say we are about to sleep and look once more; sleep only if
        // nothing came meanwhile.
        if rx.get_mut().prepare_wait()? {
            let mut ready = rx.readable_mut().await.map_err(|_| LinkRecvError::NoPeer)?;
            ready.clear_ready();
            ready.get_inner_mut().cancel_wait();
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run_dir = std::env::temp_dir().join(format!("vecring-tokio-{}", std::process::id()));
    let open = |role| {
        Link::builder("tokio", "eth0")
            .role(role)
            .run_dir(&run_dir)
            .hugepages(HugepagePolicy::Never)
            .retry_interval(Duration::from_millis(10))
            .open()
    };
    let master = open(Role::Master)?;
    // SAFETY: a Receiver's descriptor is its wait set's, open and the same
    // for the Receiver's whole life (across link down and up), which is
    // what tokio requires.
    let mut rx = unsafe { AsyncFd::register_with_interest(master.receiver()?, Interest::READABLE) }
        .map_err(|e| e.to_string())?;

    // The peer: two visits of FRAMES frames each, a frame every 50 ms,
    // the link going down between them. It leaves after the task says it
    // has read the visit's last frame (frames still in the ring when the
    // slave leaves are lost with its generation).
    let slave_dir = run_dir.clone();
    let (visit_read, read_by_task) = std::sync::mpsc::channel::<u32>();
    let peer = std::thread::spawn(move || -> Result<(), String> {
        for visit in 0..2u32 {
            let slave = Link::builder("tokio", "eth0")
                .role(Role::Slave)
                .run_dir(&slave_dir)
                .open()
                .map_err(|e| e.to_string())?;
            slave
                .wait_up(Duration::from_secs(10))
                .map_err(|e| e.to_string())?;
            let mut tx = slave.sender().map_err(|e| e.to_string())?;
            for i in 0..FRAMES {
                std::thread::sleep(Duration::from_millis(50));
                let frame = format!("visit {visit} frame {i}");
                tx.send(frame.as_bytes()).map_err(|e| e.to_string())?;
            }
            match read_by_task.recv_timeout(Duration::from_secs(10)) {
                Ok(v) if v == visit => {}
                other => return Err(format!("visit {visit} not read by the task: {other:?}")),
            }
        }
        Ok(())
    });

    let mut buf = [0u8; 256];
    for n in 0..2 * FRAMES {
        let len = tokio::time::timeout(Duration::from_secs(10), recv(&mut rx, &mut buf))
            .await
            .map_err(|_| format!("no frame {n} within 10 s"))??;
        let text = std::str::from_utf8(&buf[..len])?;
        let want = format!("visit {} frame {}", n / FRAMES, n % FRAMES);
        if text != want {
            return Err(format!("got {text:?}, expected {want:?}").into());
        }
        println!("tokio_recv: {text}");
        if n % FRAMES == FRAMES - 1 {
            visit_read.send(n / FRAMES)?;
        }
    }
    peer.join().map_err(|_| "the peer thread panicked")??;
    println!(
        "tokio_recv: {} frames in order, {} wakeups for nothing",
        2 * FRAMES,
        rx.get_ref().spurious_wakeups()
    );
    drop(rx);
    drop(master);
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(())
}
