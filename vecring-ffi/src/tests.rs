//! The Rust-side checks of what C cannot provoke on purpose: a second
//! thread inside a TX or RX call (`VECRING_E_BUSY`), and two threads racing
//! on one sender. The C-side contract is checked by `tests/c/api.c`.

use crate::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};

/// A master and a slave of one link in a fresh run directory, up.
struct Pair {
    master: *mut vecring_link,
    slave: *mut vecring_link,
    dir: std::path::PathBuf,
}

impl Pair {
    fn new(test: &str) -> Pair {
        let dir =
            std::env::temp_dir().join(format!("vecring-ffi-unit-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let run_dir = CString::new(dir.to_str().unwrap()).unwrap();
        let (domain, link) = (CString::new("unit").unwrap(), CString::new(test).unwrap());
        let open = |role| {
            let mut o = vecring_options_t::DEFAULT;
            o.role = role;
            o.domain = domain.as_ptr();
            o.link = link.as_ptr();
            o.run_dir = run_dir.as_ptr();
            o.hugepages = VECRING_HUGEPAGES_NEVER;
            let mut h = std::ptr::null_mut();
            // SAFETY: valid options with live strings (copied by open) and a
            // writable out pointer.
            assert_eq!(unsafe { vecring_open(&o, &mut h) }, VECRING_OK);
            h
        };
        let (master, slave) = (open(VECRING_ROLE_MASTER), open(VECRING_ROLE_SLAVE));
        for h in [master, slave] {
            // SAFETY: live handles; a null generation pointer is allowed.
            let rc = unsafe { vecring_wait_up(h, 10_000, std::ptr::null_mut()) };
            assert_eq!(rc, VECRING_OK);
        }
        Pair { master, slave, dir }
    }

    fn handle(&self, h: *mut vecring_link) -> &vecring_link {
        // SAFETY: a live handle of this pair.
        unsafe { vecring_link::from_ptr(h) }.unwrap()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // SAFETY: live handles, no other user left.
        unsafe {
            assert_eq!(vecring_close(self.slave), VECRING_OK);
            assert_eq!(vecring_close(self.master), VECRING_OK);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_second_thread_in_a_tx_or_rx_call_gets_busy() {
    let p = Pair::new("busy");
    let mut buf = [0u8; 64];
    let mut len = 0usize;
    {
        // Another thread is inside a TX call: hold its lock as it would.
        let _tx = p.handle(p.master).tx().unwrap();
        // SAFETY: live handle and buffers.
        unsafe {
            assert_eq!(
                vecring_send(p.master, buf.as_ptr().cast(), 8),
                VECRING_E_BUSY
            );
            assert_eq!(
                vecring_tx_reserve(p.master, 1, std::ptr::null_mut()),
                VECRING_E_BUSY
            );
            assert_eq!(vecring_tx_commit(p.master), VECRING_E_BUSY);
            // RX and link-level calls are not affected.
            assert_eq!(
                vecring_recv(p.master, buf.as_mut_ptr().cast(), 64, &mut len),
                VECRING_E_AGAIN
            );
            assert_eq!(vecring_state(p.master, std::ptr::null_mut()), 1);
            // Closing now would pull the link from under that thread.
            assert_eq!(vecring_close(p.master), VECRING_E_BUSY);
        }
    }
    {
        let _rx = p.handle(p.slave).rx().unwrap();
        // SAFETY: live handles and buffers.
        unsafe {
            assert_eq!(vecring_send(p.master, buf.as_ptr().cast(), 8), VECRING_OK);
            assert_eq!(
                vecring_recv(p.slave, buf.as_mut_ptr().cast(), 64, &mut len),
                VECRING_E_BUSY
            );
            let mut f = [vecring_frame_t {
                data: std::ptr::null(),
                len: 0,
                flags: 0,
            }];
            assert_eq!(vecring_rx_peek(p.slave, f.as_mut_ptr(), 1), VECRING_E_BUSY);
            assert_eq!(vecring_close(p.slave), VECRING_E_BUSY);
        }
    }
    // Released: both work again, and the frame is still there.
    // SAFETY: live handle and buffers.
    unsafe {
        assert_eq!(
            vecring_recv(p.slave, buf.as_mut_ptr().cast(), 64, &mut len),
            VECRING_OK
        );
    }
    assert_eq!(len, 8);
}

#[test]
fn threads_racing_on_one_sender_are_refused_not_corrupted() {
    let p = Pair::new("race");
    let master = p.master as usize;
    let slave = p.slave;
    let ok = AtomicU64::new(0);
    let mut got = 0u64;
    std::thread::scope(|s| {
        let senders: Vec<_> = (0..4u8)
            .map(|t| {
                let ok = &ok;
                s.spawn(move || {
                    let frame = [t; 100];
                    for _ in 0..20_000 {
                        // SAFETY: a live handle (closed after the scope);
                        // racing here is the misuse under test.
                        let rc = unsafe {
                            vecring_send(master as *mut vecring_link, frame.as_ptr().cast(), 100)
                        };
                        match rc {
                            VECRING_OK => ok.fetch_add(1, Ordering::Relaxed),
                            // Another sender is inside a call: refused.
                            VECRING_E_BUSY => 0,
                            VECRING_E_AGAIN => {
                                std::thread::yield_now();
                                0
                            }
                            rc => panic!("unexpected {rc}"),
                        };
                    }
                })
            })
            .collect();
        // One consumer meanwhile: every frame arrives whole.
        let mut buf = [0u8; 9216];
        let mut len = 0usize;
        loop {
            let finished = senders.iter().all(|h| h.is_finished());
            // SAFETY: live handle and buffer.
            match unsafe { vecring_recv(slave, buf.as_mut_ptr().cast(), buf.len(), &mut len) } {
                VECRING_OK => {
                    assert_eq!(len, 100);
                    assert!(
                        buf[..100].iter().all(|&b| b == buf[0] && b < 4),
                        "a torn frame"
                    );
                    got += 1;
                }
                // Empty after every sender had finished: all is in.
                VECRING_E_AGAIN if finished => break,
                VECRING_E_AGAIN => std::thread::yield_now(),
                rc => panic!("unexpected {rc}"),
            }
        }
    });
    assert_eq!(
        got,
        ok.load(Ordering::Relaxed),
        "every accepted send arrived, once"
    );
    assert!(got > 0);
}
