//! The CPUs the data-path threads run on: whether this process may use a
//! CPU, pinning a thread to one, and spreading a link's queues over a list
//! of them (queue `q` on the `q mod len`-th, round robin).

/// Whether this process may run on `cpu` (it exists and is in our
/// affinity mask).
pub fn usable(cpu: usize) -> bool {
    if cpu >= libc::CPU_SETSIZE as usize {
        return false;
    }
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it, and
    // CPU_ISSET reads within it (cpu < CPU_SETSIZE, checked above).
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0
            && libc::CPU_ISSET(cpu, &set)
    }
}

/// Checks every CPU of `cpus`, given with option `opt`.
///
/// # Errors
/// The first CPU this process may not run on, named with the option.
pub fn check(opt: &str, cpus: &[usize]) -> Result<(), String> {
    match cpus.iter().find(|&&cpu| !usable(cpu)) {
        Some(cpu) => Err(format!(
            "{opt} {cpu}: no such CPU, or not one this process may run on"
        )),
        None => Ok(()),
    }
}

/// The CPU of queue `queue`'s threads: round robin over `cpus`; `None`
/// (not pinned) when the list is empty.
pub fn for_queue(cpus: &[usize], queue: u16) -> Option<usize> {
    (!cpus.is_empty()).then(|| cpus[usize::from(queue) % cpus.len()])
}

/// A CPU list as the options take it: `0,2,3`.
pub fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Pins the calling thread to `cpu` (nothing for `None`); a refusal is
/// logged, not fatal: the thread runs unpinned.
pub fn pin(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET stays within it for any
    // cpu below CPU_SETSIZE, checked first.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return;
        }
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            log::warn!(
                target: crate::LOG_TARGET,
                "cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::for_queue;

    #[test]
    fn queues_go_round_robin_over_the_cpus() {
        let cpus = [3, 5];
        let got: Vec<_> = (0..5).map(|q| for_queue(&cpus, q)).collect();
        assert_eq!(got, [Some(3), Some(5), Some(3), Some(5), Some(3)]);
        assert_eq!(for_queue(&[], 7), None);
        assert_eq!(for_queue(&[1], 15), Some(1));
    }
}
