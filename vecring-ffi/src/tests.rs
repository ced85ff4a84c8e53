//! The Rust-side checks of what C cannot provoke on purpose: a second
//! thread inside a TX or RX call (`VECRING_E_BUSY`), two threads racing on
//! one sender, and `vecring_close` racing calls on other threads. The C-side
//! contract is checked by `tests/c/api.c` and `tests/c/close_race.c`.

use crate::table::{self, Lane, Ref};
use crate::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// The workspace's one watchdog (tests/support/, the integration tests'
// support crate, which depends on this crate and so cannot be a
// dependency of its unit tests); `alone` is not needed here.
#[path = "../../tests/support/watchdog.rs"]
#[allow(dead_code)]
mod watchdog;
use watchdog::Watchdog;

/// Generous: every test here takes well under a second alone.
const LIMIT: Duration = Duration::from_secs(60);

/// A master and a slave of one link in a fresh run directory, up.
struct Pair {
    master: *mut vecring_link,
    slave: *mut vecring_link,
    dir: std::path::PathBuf,
}

fn options(
    role: std::ffi::c_int,
    domain: &CString,
    link: &CString,
    run_dir: &CString,
) -> vecring_options_t {
    let mut o = vecring_options_t::DEFAULT;
    o.role = role;
    o.domain = domain.as_ptr();
    o.link = link.as_ptr();
    o.run_dir = run_dir.as_ptr();
    o.hugepages = VECRING_HUGEPAGES_NEVER;
    o
}

fn open(o: &vecring_options_t) -> *mut vecring_link {
    let mut h = std::ptr::null_mut();
    // SAFETY: valid options with live strings (copied by open) and a
    // writable out pointer.
    assert_eq!(unsafe { vecring_open(o, &mut h) }, VECRING_OK);
    h
}

fn scratch_dir(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vecring-ffi-unit-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

impl Pair {
    fn new(test: &str) -> Pair {
        let dir = scratch_dir(test);
        let run_dir = CString::new(dir.to_str().unwrap()).unwrap();
        let (domain, link) = (CString::new("unit").unwrap(), CString::new(test).unwrap());
        let master = open(&options(VECRING_ROLE_MASTER, &domain, &link, &run_dir));
        let slave = open(&options(VECRING_ROLE_SLAVE, &domain, &link, &run_dir));
        for h in [master, slave] {
            // SAFETY: live handles; a null generation pointer is allowed.
            let rc = unsafe { vecring_wait_up(h, 10_000, std::ptr::null_mut()) };
            assert_eq!(rc, VECRING_OK);
        }
        Pair { master, slave, dir }
    }

    /// A reference to one of the pair's handles, as a call in flight holds.
    fn handle(&self, h: *mut vecring_link, lane: Lane) -> Ref {
        Ref::new(h, lane).unwrap()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // SAFETY: closing any value is allowed.
        unsafe {
            assert_eq!(vecring_close(self.slave), VECRING_OK);
            assert_eq!(vecring_close(self.master), VECRING_OK);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_second_thread_in_a_tx_or_rx_call_gets_busy() {
    let _w = Watchdog::new("busy", LIMIT);
    let p = Pair::new("busy");
    let mut buf = [0u8; 64];
    let mut len = 0usize;
    {
        // Another thread is inside a TX call: hold its lock as it would.
        let h = p.handle(p.master, Lane::Tx);
        let _tx = h.tx().unwrap();
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
        }
    }
    {
        let h = p.handle(p.slave, Lane::Rx);
        let _rx = h.rx().unwrap();
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
    let _w = Watchdog::new("race", LIMIT);
    let p = Pair::new("race");
    let master = p.master as usize;
    let slave = p.slave;
    let ok = AtomicU64::new(0);
    let busy = AtomicU64::new(0);
    let mut got = 0u64;
    std::thread::scope(|s| {
        let senders: Vec<_> = (0..4u8)
            .map(|t| {
                let (ok, busy) = (&ok, &busy);
                s.spawn(move || {
                    let frame = [t; 100];
                    // 20 000 sends each, and on until some sender was
                    // refused (or a bound that a try-lock never reaches).
                    for i in 0..2_000_000 {
                        if i >= 20_000 && busy.load(Ordering::Relaxed) > 0 {
                            break;
                        }
                        // SAFETY: a live handle (closed after the scope);
                        // racing here is the misuse under test.
                        let rc = unsafe {
                            vecring_send(master as *mut vecring_link, frame.as_ptr().cast(), 100)
                        };
                        match rc {
                            VECRING_OK => ok.fetch_add(1, Ordering::Relaxed),
                            // Another sender is inside a call: refused.
                            VECRING_E_BUSY => busy.fetch_add(1, Ordering::Relaxed),
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
    assert!(
        busy.load(Ordering::Relaxed) > 0,
        "no sender was ever refused with VECRING_E_BUSY while another was inside a call"
    );
}

#[test]
fn a_call_in_flight_keeps_a_closed_handle_alive_and_the_last_user_frees_it() {
    let _w = Watchdog::new("last_user", LIMIT);
    let mut p = Pair::new("last_user");
    let master = p.master;
    // Another thread is inside a TX call: it holds a reference.
    let held = p.handle(master, Lane::Tx);
    let tx = held.tx().unwrap();
    // Close does not wait for it forever: it marks the handle and returns.
    // SAFETY: closing any value is allowed.
    assert_eq!(unsafe { vecring_close(master) }, VECRING_OK);
    // New calls on every lane are refused as closed...
    let mut buf = [0u8; 8];
    let mut len = 0;
    // SAFETY: live buffers; the handle is checked.
    unsafe {
        assert_eq!(
            vecring_send(master, buf.as_ptr().cast(), 8),
            VECRING_E_CLOSED
        );
        assert_eq!(
            vecring_recv(master, buf.as_mut_ptr().cast(), 8, &mut len),
            VECRING_E_CLOSED
        );
        assert_eq!(
            vecring_state(master, std::ptr::null_mut()),
            VECRING_E_CLOSED
        );
        assert_eq!(vecring_close(master), VECRING_E_CLOSED);
    }
    // ...while the call in flight still has its handle, intact.
    assert!(held.closing());
    assert!(held.link().state().is_up());
    assert!(!table::is_freed(master));
    drop(tx);
    drop(held);
    // The last user freed it.
    assert!(table::is_freed(master));
    // SAFETY: as above.
    assert_eq!(unsafe { vecring_close(master) }, VECRING_E_CLOSED);
    p.master = std::ptr::null_mut();
}

#[test]
fn close_ends_a_wait_on_another_thread_many_times() {
    let _w = Watchdog::new("close_wait", LIMIT);
    let dir = scratch_dir("close_wait");
    let run_dir = CString::new(dir.to_str().unwrap()).unwrap();
    let (domain, link) = (
        CString::new("unit").unwrap(),
        CString::new("close_wait").unwrap(),
    );
    // A slave without a master never comes up: its waits block.
    let o = options(VECRING_ROLE_SLAVE, &domain, &link, &run_dir);
    for round in 0..50u64 {
        let h = open(&o) as usize;
        let waiters: Vec<_> = (0..4)
            .map(|k| {
                std::thread::spawn(move || {
                    let h = h as *mut vecring_link;
                    let mut buf = [0u8; 64];
                    let rc = match k {
                        // SAFETY: the handle is checked; a null generation
                        // is allowed.
                        0 => unsafe { vecring_wait_up(h, 30_000, std::ptr::null_mut()) },
                        1 => loop {
                            let mut len = 0;
                            // SAFETY: as above, with a live buffer.
                            let rc = unsafe {
                                vecring_recv(h, buf.as_mut_ptr().cast(), buf.len(), &mut len)
                            };
                            // Busy: waiter 2 is inside an RX call.
                            if rc != VECRING_E_LINK_DOWN && rc != VECRING_E_BUSY {
                                break rc;
                            }
                            // Polling, but leaving the CPU to the others
                            // (two CPUs, five threads).
                            std::thread::yield_now();
                        },
                        // Asleep on the receiver's wait set while down:
                        // only the close bell (or the wait's one-second
                        // look) wakes it.
                        2 => loop {
                            // SAFETY: as above.
                            let rc = unsafe { vecring_rx_wait(h, -1) };
                            if rc != VECRING_E_BUSY {
                                break rc;
                            }
                        },
                        // SAFETY: as above.
                        _ => unsafe { vecring_send_timeout(h, buf.as_ptr().cast(), 64, -1) },
                    };
                    assert_eq!(rc, VECRING_E_CLOSED, "waiter {k}");
                })
            })
            .collect();
        // Close at varying points: before, while and after the waiters start.
        std::thread::sleep(Duration::from_micros(round * 97 % 3000));
        // SAFETY: closing any value is allowed.
        assert_eq!(unsafe { vecring_close(h as *mut vecring_link) }, VECRING_OK);
        // Every wait noticed the close while the close waited for it, so
        // the close itself freed the handle.
        assert!(
            table::is_freed(h as *mut vecring_link),
            "round {round}: a wait outlived vecring_close"
        );
        for w in waiters {
            w.join().unwrap();
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn values_that_are_no_handle_are_refused() {
    let _w = Watchdog::new("no_handle", LIMIT);
    // An open link publishes the first 64 slots, most of them never used.
    let dir = scratch_dir("no_handle");
    let run_dir = CString::new(dir.to_str().unwrap()).unwrap();
    let (domain, link) = (CString::new("unit").unwrap(), CString::new("nh").unwrap());
    let open_one = open(&options(VECRING_ROLE_MASTER, &domain, &link, &run_dir));
    let local = 0u64;
    for p in [
        &local as *const u64 as *mut vecring_link,
        1usize as *mut vecring_link,
        usize::MAX as *mut vecring_link,
        // Well-formed, in a slot that was never used.
        0x0001_0000_fff0_7672usize as *mut vecring_link,
        // Generation 0 (never issued), in published slots: the last one
        // of the first segment is used only by the 64th open link.
        0x0000_0000_003f_7672usize as *mut vecring_link,
        0x0000_0000_0000_7672usize as *mut vecring_link,
    ] {
        // SAFETY: any value is checked, never dereferenced.
        unsafe {
            assert_eq!(vecring_state(p, std::ptr::null_mut()), VECRING_E_INVAL);
            assert_eq!(vecring_close(p), VECRING_E_INVAL);
        }
    }
    // SAFETY: the handle opened above.
    assert_eq!(unsafe { vecring_close(open_one) }, VECRING_OK);
    let _ = std::fs::remove_dir_all(&dir);
}
