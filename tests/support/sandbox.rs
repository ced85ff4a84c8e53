//! A throwaway host for running a document's commands as its reader would,
//! for `tests/doc_commands.rs`.
//!
//! The commands run as root in new mount, PID and network namespaces
//! (`unshare`), where the host looks as a fresh one does to a reader:
//! `/run`, `/tmp` and `/var/lib/lxc` are empty file systems of their own,
//! `/dev/hugepages` is a hugetlbfs of its own (DPDK's files), and the
//! repository, `/usr/local`, `/opt` and `/etc` are overlays whose writes
//! land in the scratch directory. So the commands keep their default paths
//! (`/run/vecring`, `/usr/local/lib`, DPDK's default file prefix, a
//! container named `web`) without touching the host or colliding with
//! other tests; the kernel kills every process left when the namespace's
//! first process ends. Nothing of the namespaces is left afterwards but
//! the scratch directory (kept when a run fails).
//!
//! A run is a list of [`Action`]s, written out as one bash script: commands
//! in the foreground, and commands in terminals of their own (a background
//! process group with its own input, as another shell would be) that the
//! script waits on, types into, ends with Ctrl-D or Ctrl-C, and waits for.
//! Each command's output (stdout and stderr, as on a terminal) and exit
//! status are kept in the scratch directory for the caller to check.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One step of a run. `id`s name commands (their output files); `term`s
/// name terminals.
#[derive(Debug, Clone)]
pub enum Action {
    /// Runs `script` in the foreground; it must exit with status 0.
    Fg { id: String, script: String },
    /// Starts `script` in terminal `term`.
    Start {
        term: String,
        id: String,
        script: String,
    },
    /// Waits until `term`'s output has `count` lines with `text`.
    WaitFor {
        term: String,
        text: String,
        count: usize,
    },
    /// Types a line into `term`.
    Type { term: String, line: String },
    /// Ctrl-D: ends `term`'s input; its program must exit with status 0.
    EndInput { term: String },
    /// Ctrl-C: interrupts `term`'s program, which must then end (status
    /// 0, or killed by SIGINT as a program without a handler is).
    Interrupt { term: String },
    /// Waits for `term`'s program to exit by itself with status 0.
    Exit { term: String },
}

/// What a run left: each command's output and exit status, and the first
/// failure.
#[derive(Debug)]
pub struct Outcome {
    /// The scratch directory (outputs, scripts, the step log).
    pub dir: PathBuf,
    /// The first failure, if any (a command's status, a wait that timed
    /// out, the run's own limit).
    pub failure: Option<String>,
    /// Output of each command started, by id.
    pub outputs: BTreeMap<String, String>,
    /// Exit status of each command that ended, by id.
    pub status: BTreeMap<String, i32>,
    /// What the script did, one line a step.
    pub steps: String,
}

/// How long a foreground command or a wait may take.
const STEP_LIMIT: Duration = Duration::from_secs(90);

/// The functions of the run's script; `$R` is the scratch directory.
const PROLOGUE: &str = r#"set -u
R=$1 REPO=$2 LIMIT=$3 STEP=$4
declare -A PID ID FD
note() { echo "$(date +%T.%3N) $*" >>"$R/steps"; }
fail() { [ -e "$R/failed" ] || echo "$*" >"$R/failed"; exit 1; }
epilogue() {
	local t c
	for t in "${!PID[@]}"; do
		kill -9 -- "-${PID[$t]}" 2>/dev/null
		[ -e "$R/failed" ] || echo "terminal $t (${ID[$t]}) still ran at the end" >"$R/failed"
	done
	for c in $(lxc-ls 2>/dev/null); do
		echo "$c" >>"$R/containers"
		lxc-stop -n "$c" -k >/dev/null 2>&1
	done
	touch "$R/ended"
}
trap epilogue EXIT

# The sandbox: file systems of its own, overlays whose writes stay in $R.
ov() {
	mkdir -p "$R/ov/$2/up" "$R/ov/$2/work" &&
		mount -t overlay overlay -o "lowerdir=$1,upperdir=$R/ov/$2/up,workdir=$R/ov/$2/work" "$1" ||
		fail "cannot overlay $1"
}
ov "$REPO" repo; ov /usr/local usr-local; ov /opt opt; ov /etc etc
lxc_mode=$(stat -c %a /var/lib/lxc 2>/dev/null || echo 755)
mkdir -p /var/lib/lxc
mount -t tmpfs -o mode=0755 tmpfs /run &&
	mount -t tmpfs -o "mode=$lxc_mode" tmpfs /var/lib/lxc ||
	fail "cannot mount the sandbox's /run and /var/lib/lxc"
# (A checkout under /tmp keeps the host's /tmp.)
case $REPO/ in
/tmp/*) ;;
*) mount -t tmpfs -o mode=1777 tmpfs /tmp || fail "cannot mount the sandbox's /tmp" ;;
esac
if [ -d /dev/hugepages ]; then
	mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages || fail "cannot mount hugetlbfs"
fi
# As root, sudo changes nothing (and Debian's minimal images have none).
mkdir -p "$R/bin" "$R/out" "$R/in" "$R/rc"
printf '#!/bin/sh\nexec "$@"\n' >"$R/bin/sudo" && chmod 0755 "$R/bin/sudo"
export PATH="$R/bin:$PATH"
unset CARGO_TARGET_DIR RUST_LOG
cd "$REPO" || fail "cannot cd $REPO"

fg() {
	note "run $1"
	timeout -k 5 "$STEP" bash -eo pipefail "$R/cmd/$1.sh" </dev/null >"$R/out/$1" 2>&1
	local rc=$?
	echo "$rc" >"$R/rc/$1"
	[ "$rc" = 0 ] || fail "$1: exit status $rc"
}
start() {
	note "start $2 in terminal $1"
	[ -z "${PID[$1]:-}" ] || fail "terminal $1 is still running ${ID[$1]}"
	mkfifo "$R/in/$2"
	setsid timeout -k 5 "$LIMIT" bash -eo pipefail "$R/cmd/$2.sh" <"$R/in/$2" >"$R/out/$2" 2>&1 &
	PID[$1]=$!
	ID[$1]=$2
	local fd
	exec {fd}>"$R/in/$2"
	FD[$1]=$fd
}
wait_for() {
	note "wait in terminal $1 for $3 x '$2'"
	local i n
	for ((i = 0; i < STEP * 10; i++)); do
		n=$(grep -cF -- "$2" "$R/out/${ID[$1]}")
		[ "${n:-0}" -ge "$3" ] && return 0
		if ! kill -0 "${PID[$1]}" 2>/dev/null; then
			finish "$1" none
			fail "terminal $1 (${ID[$1]}) ended before printing '$2'"
		fi
		sleep 0.1
	done
	fail "terminal $1 (${ID[$1]}): no '$2' (x$3) within $STEP s"
}
type_line() {
	note "type '$2' in terminal $1"
	printf '%s\n' "$2" >&"${FD[$1]}" || fail "terminal $1: cannot type '$2'"
}
close_input() {
	[ -n "${FD[$1]:-}" ] && eval "exec ${FD[$1]}>&-"
	FD[$1]=
}
# finish TERM "STATUS...": waits (at most $STEP s) for the terminal's
# program, which must exit with one of the statuses ("none": any).
finish() {
	local i rc id=${ID[$1]}
	for ((i = 0; i < STEP * 10; i++)); do
		kill -0 "${PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "${PID[$1]}" 2>/dev/null && fail "terminal $1 ($id) still runs after $STEP s"
	wait "${PID[$1]}"
	rc=$?
	echo "$rc" >"$R/rc/$id"
	close_input "$1"
	unset "PID[$1]"
	[ "$2" = none ] && return 0
	case " $2 " in
	*" $rc "*) ;;
	*) fail "terminal $1 ($id): exit status $rc" ;;
	esac
}
end_input() { note "Ctrl-D in terminal $1"; close_input "$1"; finish "$1" 0; }
interrupt() { note "Ctrl-C in terminal $1"; kill -INT -- "-${PID[$1]}"; finish "$1" "0 130"; }
exits() { note "wait for terminal $1 to end"; finish "$1" 0; }
"#;

/// Quotes `s` for bash.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `actions` in a sandbox, with `repo` as the working directory,
/// within `limit`; `name` names the scratch directory.
///
/// # Panics
/// If the scratch directory cannot be written or `unshare` cannot run.
pub fn run(name: &str, repo: &Path, actions: &[Action], limit: Duration) -> Outcome {
    let dir = PathBuf::from(format!(
        "/var/tmp/vecring-doc-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("cmd")).unwrap();
    let mut script = String::from(PROLOGUE);
    for a in actions {
        let line = match a {
            Action::Fg { id, script } => {
                std::fs::write(dir.join(format!("cmd/{id}.sh")), script).unwrap();
                format!("fg {id}")
            }
            Action::Start { term, id, script } => {
                std::fs::write(dir.join(format!("cmd/{id}.sh")), script).unwrap();
                format!("start {} {id}", quote(term))
            }
            Action::WaitFor { term, text, count } => {
                format!("wait_for {} {} {count}", quote(term), quote(text))
            }
            Action::Type { term, line } => format!("type_line {} {}", quote(term), quote(line)),
            Action::EndInput { term } => format!("end_input {}", quote(term)),
            Action::Interrupt { term } => format!("interrupt {}", quote(term)),
            Action::Exit { term } => format!("exits {}", quote(term)),
        };
        writeln!(script, "{line}").unwrap();
    }
    script += "note done\n";
    std::fs::write(dir.join("run.sh"), &script).unwrap();
    let log = std::fs::File::create(dir.join("run.log")).unwrap();
    let status = Command::new("timeout")
        .args(["-k", "10", &limit.as_secs().to_string()])
        .args([
            "unshare",
            "--kill-child",
            "--mount",
            "--pid",
            "--net",
            "--fork",
            "--mount-proc",
            "--propagation",
            "private",
            "bash",
        ])
        .arg(dir.join("run.sh"))
        .arg(&dir)
        .arg(repo)
        .arg(limit.as_secs().to_string())
        .arg(STEP_LIMIT.as_secs().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .expect("run unshare (util-linux)");
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap_or_default();
    let mut failure = Some(read("failed").trim().to_string()).filter(|f| !f.is_empty());
    if failure.is_none() && !status.success() {
        failure = Some(format!(
            "the run ended with {status} (limit {limit:?}): {}",
            read("run.log").trim()
        ));
    }
    let mut outputs = BTreeMap::new();
    let mut statuses = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("out")).into_iter().flatten() {
        let entry = entry.unwrap();
        let id = entry.file_name().to_string_lossy().into_owned();
        outputs.insert(id.clone(), read(&format!("out/{id}")));
        if let Ok(rc) = read(&format!("rc/{id}")).trim().parse() {
            statuses.insert(id, rc);
        }
    }
    remove_container_cgroups(&read("containers"));
    Outcome {
        failure,
        outputs,
        status: statuses,
        steps: read("steps"),
        dir,
    }
}

/// Removes the empty cgroups LXC leaves when a container's monitor was
/// killed with the namespace (LXC removes them itself on a clean stop).
fn remove_container_cgroups(names: &str) {
    let Ok(hierarchies) = std::fs::read_dir("/sys/fs/cgroup") else {
        return;
    };
    let mut roots: Vec<PathBuf> = hierarchies.flatten().map(|e| e.path()).collect();
    roots.push(PathBuf::from("/sys/fs/cgroup"));
    for name in names.split_whitespace() {
        for root in &roots {
            for kind in ["lxc.payload", "lxc.monitor"] {
                let _ = std::fs::remove_dir(root.join(format!("{kind}.{name}")));
            }
        }
    }
}

impl Outcome {
    /// Removes the scratch directory.
    pub fn clean_up(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
