//! What a thread of this process is doing, as the kernel says
//! (`/proc/self/task/<tid>/syscall`): for tests that must act only once
//! another thread sleeps (a close that must wake a sleeper, a send that
//! must wake a receiver asleep on its doorbell), instead of sleeping for a
//! while and hoping it did.

use std::time::{Duration, Instant};

/// The calling thread's id (`gettid`).
pub fn tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// The system calls a thread sleeps in while it waits for an event: poll,
/// ppoll, epoll_wait, epoll_pwait, epoll_pwait2 and futex (a condition
/// variable), by their x86-64 and aarch64 numbers.
fn is_wait(nr: i64) -> bool {
    #[cfg(target_arch = "x86_64")]
    const WAITS: &[i64] = &[7, 271, 232, 281, 441, 202];
    #[cfg(target_arch = "aarch64")]
    const WAITS: &[i64] = &[73, 22, 441, 98];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const WAITS: &[i64] = &[];
    WAITS.contains(&nr)
}

/// Whether thread `tid` of this process sits in a waiting system call.
pub fn blocked_in_wait(tid: i32) -> bool {
    let Ok(s) = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) else {
        return false;
    };
    s.split_whitespace()
        .next()
        .and_then(|n| n.parse::<i64>().ok())
        .is_some_and(is_wait)
}

/// Waits until thread `tid` sits in a waiting system call and stays there
/// for a few milliseconds (not a wait on the way to its sleep); false if
/// that does not happen within `timeout`.
pub fn wait_until_blocked(tid: i32, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    let mut since: Option<Instant> = None;
    while Instant::now() < end {
        if blocked_in_wait(tid) {
            let t = *since.get_or_insert_with(Instant::now);
            if t.elapsed() >= Duration::from_millis(20) {
                return true;
            }
        } else {
            since = None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// The ids of this process's threads whose name (`comm`) starts with
/// `prefix`.
pub fn named(prefix: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .filter(|t| {
            std::fs::read_to_string(format!("/proc/self/task/{t}/comm"))
                .is_ok_and(|c| c.trim_end().starts_with(prefix))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_asleep_on_a_condvar_is_seen_blocked_and_a_running_one_is_not() {
        let (tx, rx) = std::sync::mpsc::channel();
        let pair = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let p2 = std::sync::Arc::clone(&pair);
        let t = std::thread::Builder::new()
            .name("support-sleeper".into())
            .spawn(move || {
                tx.send(tid()).unwrap();
                let (m, c) = &*p2;
                let mut done = m.lock().unwrap();
                while !*done {
                    done = c.wait(done).unwrap();
                }
            })
            .unwrap();
        let sleeper = rx.recv().unwrap();
        assert!(wait_until_blocked(sleeper, Duration::from_secs(5)));
        assert_eq!(named("support-sleeper"), vec![sleeper]);
        assert!(!blocked_in_wait(tid()), "this thread runs");
        *pair.0.lock().unwrap() = true;
        pair.1.notify_one();
        t.join().unwrap();
    }
}
