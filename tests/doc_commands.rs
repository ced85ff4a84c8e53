//! Every command that `README.md`, `docs/` and the READMEs of the
//! repository's directories show is run here, as their reader would run
//! it, so that a guide cannot go stale.
//!
//! A document shows commands in `sh` and `console` blocks
//! (`tests/markdown.rs` says how they are read). Each such block is either
//! run, by the plan [`PLANS`] gives it, or left out with the reason: a
//! whole document in [`EXCLUDED_DOCS`], a command in [`SKIPPED`], a block
//! by a plan of [`How::Excluded`]. A command block that is none of these
//! fails [`every_command_block_is_run_or_excluded`], as do a plan that
//! finds no block, a fence without a language and an indented code block:
//! a new command in a document cannot go untested.
//!
//! Each document runs in order, top to bottom, in a sandbox of its own
//! (`tests/sandbox.rs`: new mount, PID and network namespaces, in which the
//! repository, `/usr/local`, `/opt` and `/etc` are overlays and `/run`,
//! `/tmp`, `/var/lib/lxc` and `/dev/hugepages` are empty), so the commands
//! keep their default paths and names (`/run/vecring`, a container named
//! `web`, DPDK's default file prefix) and change nothing on the host. The
//! working directory is the repository. `vecring` and the DPDK driver are
//! installed first as `README.md` says ([`PREAMBLE`]).
//!
//! Commands a document shows in two shells (a master here, a slave there)
//! run in terminals of their own, started and ended as the document says
//! (Ctrl-D, Ctrl-C, `quit`). A command must exit with status 0, and the
//! output a `console` block shows must appear, in order, in what the
//! command printed (numbers aside: `markdown::shape`); a document's own
//! check compares the numbers that must agree (frames sent and received).
//!
//! Needs root, LXC, DPDK 22.11 (`dpdk-testpmd`, `dpdk-proc-info`,
//! `dpdk-dumpcap`) and hugepages (`scripts/setup.sh`), and the workspace
//! built (`cargo build --release --workspace`, as `scripts/test.sh` does).
//! The documents run one at a time; their containers and DPDK processes
//! busy-poll both CPUs of a small machine. A failed run keeps its sandbox's
//! scratch directory (outputs, scripts, the steps taken), as does every
//! run with `VECRING_TEST_KEEP=1`.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use vecring_tests::markdown::{self, Block, Command};
use vecring_tests::sandbox::{self, Action};
use vecring_tests::Watchdog;

/// Documents not run, with the reason (a path, or a directory ending in
/// `/`). To run one, remove it here and give its blocks plans.
const EXCLUDED_DOCS: &[(&str, &str)] = &[
    (
        "docs/BENCHMARKS.md",
        "benchmark commands take minutes; run by hand",
    ),
    (
        "docs/benchmarks/",
        "benchmark commands take minutes; run by hand",
    ),
];

/// Commands never run, by how they start, with the reason. A block whose
/// commands are all skipped needs no plan.
const SKIPPED: &[(&str, &str)] = &[
    (
        "sudo scripts/setup.sh",
        "installs distribution packages (apt) and reserves hugepages; scripts/test.sh runs it before every test",
    ),
    (
        "cargo build --release -p ",
        "scripts/test.sh builds the workspace (cargo build --release --workspace) before the tests, the same artifacts; a build of one package resolves its dependencies' features differently and relinks it for up to a minute",
    ),
];

/// What a sandbox has before a document's first command: the tool and the
/// driver installed as `README.md` says.
const PREAMBLE: &str = "install -m 0755 target/release/vecring /usr/local/bin/
install -D -m 0644 target/release/librte_net_vecring.so /usr/local/lib/vecring/librte_net_vecring.so
";

/// How a block runs.
#[derive(Debug, Clone, Copy)]
enum How {
    /// Each command in the foreground, in order (an `sh` block as one
    /// script, a `console` block a command at a time).
    Run,
    /// One step per command, in order.
    Steps(&'static [Step]),
    /// Not run, for this reason.
    Excluded(&'static str),
}

/// How one command of a block runs.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// In the foreground: it must exit with status 0.
    Fg,
    /// In terminal `.0`, which goes on while the document does; with
    /// `Some(text)`, the document goes on once the output has `text`.
    Term(&'static str, Option<&'static str>),
}

/// What the reader does around a block.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// A command of the reader's own situation that the document assumes
    /// (e.g. their program's source), run in the foreground.
    Shell(&'static str),
    /// Types a line into a terminal.
    Type(&'static str, &'static str),
    /// Waits until a terminal has printed `count` lines with `text`.
    WaitFor(&'static str, &'static str, usize),
    /// Ctrl-D in a terminal: its program must exit with status 0.
    EndInput(&'static str),
    /// Ctrl-C in a terminal: its program must end (status 0 or SIGINT's).
    Interrupt(&'static str),
    /// Waits for a terminal's program to exit by itself, with status 0.
    Exit(&'static str),
}

/// The plan of one command block.
struct Plan {
    /// The document, from the repository root.
    doc: &'static str,
    /// The start of the heading the block is under ("": any).
    section: &'static str,
    /// Text that occurs in exactly one command block of `doc` under
    /// `section`.
    block: &'static str,
    how: How,
    before: &'static [Event],
    after: &'static [Event],
}

const fn run(doc: &'static str, block: &'static str) -> Plan {
    Plan {
        doc,
        section: "",
        block,
        how: How::Run,
        before: &[],
        after: &[],
    }
}

const fn steps(
    doc: &'static str,
    block: &'static str,
    steps: &'static [Step],
    after: &'static [Event],
) -> Plan {
    Plan {
        doc,
        section: "",
        block,
        how: How::Steps(steps),
        before: &[],
        after,
    }
}

use Event::*;
use Step::*;

/// `run` for a block under the heading that starts with `section`.
const fn run_in(doc: &'static str, section: &'static str, block: &'static str) -> Plan {
    Plan {
        section,
        ..run(doc, block)
    }
}

/// `steps` for a block under the heading that starts with `section`.
const fn steps_in(
    doc: &'static str,
    section: &'static str,
    block: &'static str,
    how: &'static [Step],
    after: &'static [Event],
) -> Plan {
    Plan {
        section,
        ..steps(doc, block, how, after)
    }
}

const LXC: &str = "docs/lxc.md";

const PLANS: &[Plan] = &[
    // docs/lxc.md: an unprivileged container with a root file system of
    // its own, started before the master and after it, then privileged.
    run_in(
        LXC,
        "1.",
        "$ vecring prepare --domain web --owner 100000:100000",
    ),
    run_in(LXC, "2.", "cp --parents -L"),
    run_in(LXC, "3.", "cat > /var/lib/lxc/web/config"),
    run_in(LXC, "3.", "$ vecring doctor --domain web --lxc web"),
    steps_in(
        LXC,
        "4.",
        "$ lxc-start -n web",
        &[Fg, Term("container", Some("waiting for the master"))],
        &[],
    ),
    Plan {
        after: &[EndInput("container")],
        ..run_in(LXC, "4.", "$ vecring txonly --role master")
    },
    run_in(LXC, "5.", "$ lxc-stop -n web -k"),
    steps_in(
        LXC,
        "5.",
        "$ vecring txonly --role master",
        &[Term("host", Some("waiting for the slave"))],
        &[],
    ),
    steps_in(
        LXC,
        "5.",
        "$ lxc-start -n web",
        &[Fg, Term("container", None)],
        &[Exit("host"), EndInput("container")],
    ),
    run_in(LXC, "6.", "sed -i -e '/^lxc.idmap/d'"),
    steps_in(
        LXC,
        "6.",
        "$ lxc-start -n web",
        &[Fg, Term("container", Some("waiting for the master"))],
        &[],
    ),
    Plan {
        after: &[EndInput("container")],
        ..run_in(LXC, "6.", "$ vecring txonly --role master")
    },
    run_in(LXC, "6.", "lxc-destroy -n web"),
    // README.md
    Plan {
        how: How::Excluded(
            "scripts/demo.sh is the main job: it installs packages, builds, and benchmarks a host<->container link for minutes (its parts are tested: tests/lxc.rs, vecring-cli/tests/bench.rs); scripts/test.sh is the test suite, which runs this test",
        ),
        ..run("README.md", "scripts/demo.sh")
    },
    steps(
        "README.md",
        "dpdk-testpmd -d target/release/librte_net_vecring.so",
        &[Term("testpmd", Some("testpmd> "))],
        &[
            Type("testpmd", "show port info 0"),
            Type("testpmd", "quit"),
            Exit("testpmd"),
        ],
    ),
    run(
        "README.md",
        "install -m 0755 target/release/vecring /usr/local/bin/",
    ),
    // docs/c-api.md
    run(
        "docs/c-api.md",
        "sudo vecring-ffi/install.sh --no-build      #",
    ),
    Plan {
        before: &[Shell("cp vecring-ffi/examples/c/hello.c app.c")],
        ..run(
            "docs/c-api.md",
            "cc app.c -o app $(pkg-config --cflags --libs vecring)",
        )
    },
    run("docs/c-api.md", "./hello /tmp/vecring-demo"),
    run("docs/c-api.md", "-o master -Iinclude -Ltarget/release"),
    run(
        "docs/c-api.md",
        "cc vecring-ffi/examples/c/master.c -o master $(pkg-config",
    ),
    steps(
        "docs/c-api.md",
        "./slave /tmp/vecring-demo 1000",
        &[Fg, Term("slave", None), Fg],
        &[Exit("slave")],
    ),
    // docs/operations.md
    steps(
        "docs/operations.md",
        "vecring txonly --role master --domain web --link eth0 --seconds 600",
        &[
            Term("web master", Some("waiting for the slave")),
            Term("web slave", Some("link up")),
            Term("db master", Some("waiting for the slave")),
        ],
        &[],
    ),
    run("docs/operations.md", "$ vecring list"),
    steps(
        "docs/operations.md",
        "$ vecring stats web --watch 1",
        &[Term("stats", None)],
        &[WaitFor("stats", "web/eth0: up", 3), Interrupt("stats")],
    ),
    Plan {
        after: &[
            Interrupt("web master"),
            Interrupt("db master"),
            EndInput("web slave"),
        ],
        ..run("docs/operations.md", "$ vecring doctor")
    },
    // vecring-pmd/README.md
    steps(
        "vecring-pmd/README.md",
        "--file-prefix=vr_master --lcores=0@0,1@0",
        &[
            Term("master", Some("testpmd> ")),
            Term("slave", Some("testpmd> ")),
        ],
        &[
            WaitFor("master", "link up", 1),
            WaitFor("slave", "link up", 1),
        ],
    ),
    run("vecring-pmd/README.md", "dpdk-proc-info -d"),
    steps(
        "vecring-pmd/README.md",
        "dpdk-dumpcap --file-prefix vr_master",
        &[Term("dumpcap", Some("Packets captured"))],
        &[
            Interrupt("dumpcap"),
            Type("master", "quit"),
            Type("slave", "quit"),
            Exit("master"),
            Exit("slave"),
        ],
    ),
];

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// The documents whose commands count: `README.md`, every `.md` under
/// `docs/`, and the `README.md` of each directory at the top.
fn documents() -> Vec<String> {
    fn markdown_under(dir: &Path, rel: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = format!("{rel}/{name}");
            if e.file_type().unwrap().is_dir() {
                markdown_under(&e.path(), &rel, out);
            } else if name.ends_with(".md") {
                out.push(rel);
            }
        }
    }
    let root = root();
    let mut docs = vec!["README.md".to_string()];
    markdown_under(&root.join("docs"), "docs", &mut docs);
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir()
            && !name.starts_with('.')
            && name != "target"
            && name != "docs"
            && e.path().join("README.md").exists()
        {
            docs.push(format!("{name}/README.md"));
        }
    }
    docs.sort();
    docs
}

fn excluded_doc(doc: &str) -> Option<&'static str> {
    EXCLUDED_DOCS
        .iter()
        .find(|(p, _)| doc == *p || (p.ends_with('/') && doc.starts_with(p)))
        .map(|(_, why)| *why)
}

fn skipped(cmd: &Command) -> bool {
    SKIPPED
        .iter()
        .any(|(start, _)| cmd.text.trim_start().starts_with(start))
}

/// Whether `plan` is `block`'s.
fn finds(plan: &Plan, block: &Block) -> bool {
    block.section.starts_with(plan.section) && block.text().contains(plan.block)
}

/// A command block of a document, its commands that run, and its plan.
struct Planned {
    block: Block,
    commands: Vec<Command>,
    plan: Option<&'static Plan>,
}

/// Reads `doc` and finds each command block's plan.
///
/// # Errors
/// One line per problem: the document's own (`markdown::parse`), a block
/// without a plan, a plan that finds no block or several, a plan whose
/// steps do not match the block's commands.
fn plan(doc: &str) -> Result<Vec<Planned>, Vec<String>> {
    let text = std::fs::read_to_string(root().join(doc)).unwrap();
    let parsed = markdown::parse(&text);
    let mut problems: Vec<String> = parsed
        .problems
        .iter()
        .map(|p| format!("{doc}: {p}"))
        .collect();
    let mut out = Vec::new();
    for block in parsed.blocks.into_iter().filter(Block::has_commands) {
        let commands = match markdown::commands(&block) {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{doc}: {e}"));
                continue;
            }
        };
        let commands: Vec<Command> = commands.into_iter().filter(|c| !skipped(c)).collect();
        let plans: Vec<&Plan> = PLANS
            .iter()
            .filter(|p| p.doc == doc && finds(p, &block))
            .collect();
        if plans.len() > 1 {
            problems.push(format!(
                "{doc}: line {}: several plans find this block",
                block.line
            ));
        }
        let plan = plans.first().copied();
        match (plan.map(|p| p.how), commands.is_empty()) {
            (None, true) => {}
            (None, false) => problems.push(format!(
                "{doc}: line {}: a command block that is neither run nor excluded (give it a plan in tests/doc_commands.rs): {}",
                block.line,
                commands[0].head()
            )),
            (Some(How::Excluded(_)), _) => {}
            (Some(_), true) => problems.push(format!(
                "{doc}: line {}: a plan for a block whose commands are all skipped",
                block.line
            )),
            (Some(How::Steps(s)), false) if s.len() != commands.len() => {
                problems.push(format!(
                    "{doc}: line {}: {} steps for {} commands",
                    block.line,
                    s.len(),
                    commands.len()
                ))
            }
            (Some(_), false) => {}
        }
        out.push(Planned {
            block,
            commands,
            plan,
        });
    }
    for p in PLANS.iter().filter(|p| p.doc == doc) {
        let found = out.iter().filter(|b| finds(p, &b.block)).count();
        if found != 1 {
            problems.push(format!(
                "{doc}: the plan for '{}' (section '{}') finds {found} command blocks, not one",
                p.block, p.section
            ));
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

#[test]
fn every_command_block_is_run_or_excluded() {
    let docs = documents();
    assert!(docs.iter().any(|d| d == "docs/lxc.md"), "{docs:?}");
    let mut problems = Vec::new();
    // What is not run, and why (shown with --nocapture).
    for doc in &docs {
        if let Some(why) = excluded_doc(doc) {
            eprintln!("not run: {doc}: {why}");
            continue;
        }
        match plan(doc) {
            Ok(planned) => {
                for b in planned {
                    if let Some(Plan {
                        how: How::Excluded(why),
                        ..
                    }) = b.plan
                    {
                        eprintln!("not run: {doc}: line {}: {why}", b.block.line);
                    }
                }
            }
            Err(p) => problems.extend(p),
        }
    }
    for (start, why) in SKIPPED {
        eprintln!("not run: commands starting '{start}': {why}");
    }
    for p in PLANS {
        if !docs.iter().any(|d| d == p.doc) || excluded_doc(p.doc).is_some() {
            problems.push(format!(
                "a plan for {}, which is not a document run here",
                p.doc
            ));
        }
    }
    let all: Vec<Command> = docs
        .iter()
        .filter(|d| excluded_doc(d).is_none())
        .flat_map(|d| {
            let text = std::fs::read_to_string(root().join(d)).unwrap();
            markdown::parse(&text)
                .blocks
                .into_iter()
                .filter(Block::has_commands)
                .flat_map(|b| markdown::commands(&b).unwrap_or_default())
        })
        .collect();
    for (start, _) in SKIPPED {
        if !all.iter().any(|c| c.text.trim_start().starts_with(start)) {
            problems.push(format!("the skip rule '{start}' skips no command"));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Held while a document runs.
static ONE_DOC: Mutex<()> = Mutex::new(());

/// A command that ran: its id in the sandbox, and what the document shows.
struct Ran<'a> {
    id: String,
    command: &'a Command,
}

/// What a document's check sees: its commands in order, with their outputs.
struct Record<'a> {
    ran: Vec<Ran<'a>>,
    outcome: &'a sandbox::Outcome,
}

impl Record<'_> {
    /// The commands that contain `needle`, in document order, with their
    /// outputs.
    fn ran(&self, needle: &str) -> Vec<(&Command, &str)> {
        self.ran
            .iter()
            .filter(|r| r.command.text.contains(needle))
            .map(|r| {
                let out = self.outcome.outputs.get(&r.id);
                (r.command, out.map(String::as_str).unwrap_or(""))
            })
            .collect()
    }

    /// Outputs of the commands that contain `needle`, in document order.
    fn outputs(&self, needle: &str) -> Vec<&str> {
        self.ran(needle).into_iter().map(|(_, o)| o).collect()
    }
}

/// The number after the first `label` in `text`.
fn number_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn event_actions(e: &Event, id: String) -> Action {
    let t = |s: &str| s.to_string();
    match *e {
        Shell(script) => Action::Fg {
            id,
            script: format!("{script}\n"),
        },
        Type(term, line) => Action::Type {
            term: t(term),
            line: t(line),
        },
        WaitFor(term, text, count) => Action::WaitFor {
            term: t(term),
            text: t(text),
            count,
        },
        EndInput(term) => Action::EndInput { term: t(term) },
        Interrupt(term) => Action::Interrupt { term: t(term) },
        Exit(term) => Action::Exit { term: t(term) },
    }
}

/// Runs `doc`'s commands in a sandbox and checks them, then `check`.
fn run_doc(doc: &str, limit: Duration, check: fn(&Record) -> Result<(), String>) {
    let _alone = ONE_DOC.lock().unwrap_or_else(PoisonError::into_inner);
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "{doc}: needs root");
    let planned = plan(doc).unwrap_or_else(|p| panic!("\n{}", p.join("\n")));
    let mut actions = vec![Action::Fg {
        id: "preamble".into(),
        script: PREAMBLE.into(),
    }];
    let mut ran = Vec::new();
    for b in &planned {
        let Some(plan) = b.plan.filter(|p| !matches!(p.how, How::Excluded(_))) else {
            continue;
        };
        let line = b.block.line;
        for (k, e) in plan.before.iter().enumerate() {
            actions.push(event_actions(e, format!("L{line}-before-{k}")));
        }
        match plan.how {
            How::Excluded(_) => unreachable!("excluded blocks are left out above"),
            How::Run if b.block.lang == "sh" => {
                let id = format!("L{}", b.commands[0].line);
                let script: String = b.commands.iter().map(|c| c.text.as_str()).collect();
                actions.push(Action::Fg {
                    id: id.clone(),
                    script,
                });
                ran.extend(b.commands.iter().map(|c| Ran {
                    id: id.clone(),
                    command: c,
                }));
            }
            How::Run | How::Steps(_) => {
                for (k, c) in b.commands.iter().enumerate() {
                    let id = format!("L{}", c.line);
                    let script = c.text.clone();
                    let step = match plan.how {
                        How::Steps(s) => s[k],
                        _ => Fg,
                    };
                    match step {
                        Fg => actions.push(Action::Fg {
                            id: id.clone(),
                            script,
                        }),
                        Term(term, ready) => {
                            actions.push(Action::Start {
                                term: term.into(),
                                id: id.clone(),
                                script,
                            });
                            if let Some(text) = ready {
                                actions.push(Action::WaitFor {
                                    term: term.into(),
                                    text: text.into(),
                                    count: 1,
                                });
                            }
                        }
                    }
                    ran.push(Ran { id, command: c });
                }
            }
        }
        for (k, e) in plan.after.iter().enumerate() {
            actions.push(event_actions(e, format!("L{line}-after-{k}")));
        }
    }
    let _w = Watchdog::new("doc commands", limit + Duration::from_secs(60));
    let name = doc.replace('/', "-").trim_end_matches(".md").to_lowercase();
    let outcome = sandbox::run(&name, &root(), &actions, limit);
    let show = |id: &str| {
        let out = outcome.outputs.get(id).map(String::as_str).unwrap_or("");
        let tail: Vec<&str> = out.lines().rev().take(40).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("--- output of {id}:\n{}", tail.join("\n"))
    };
    let mut failures = Vec::new();
    if let Some(f) = &outcome.failure {
        failures.push(f.clone());
        // The failure names its command "ID: ..." or "terminal NAME (ID)".
        for id in outcome.outputs.keys() {
            if f.starts_with(&format!("{id}:")) || f.contains(&format!("({id})")) {
                failures.push(show(id));
            }
        }
    } else {
        let record = Record {
            ran,
            outcome: &outcome,
        };
        for r in &record.ran {
            if r.command.expect.is_empty() {
                continue;
            }
            let out = outcome.outputs.get(&r.id).map(String::as_str).unwrap_or("");
            if let Err(missing) = markdown::find_in_order(&r.command.expect, out) {
                failures.push(format!(
                    "{doc}: line {}: `{}` did not print, in order, the line\n    {missing}\n{}",
                    r.command.line,
                    r.command.head(),
                    show(&r.id)
                ));
            }
        }
        if let Err(e) = check(&record) {
            failures.push(format!("{doc}: {e}"));
        }
    }
    if failures.is_empty() {
        if std::env::var_os("VECRING_TEST_KEEP").is_some() {
            eprintln!("{doc}: sandbox kept in {}", outcome.dir.display());
        } else {
            outcome.clean_up();
        }
    } else {
        panic!(
            "\n{}\n--- steps:\n{}--- sandbox kept in {}",
            failures.join("\n"),
            outcome.steps,
            outcome.dir.display()
        );
    }
}

fn no_check(_: &Record) -> Result<(), String> {
    Ok(())
}

/// testpmd probed the port the README's devargs describe, and shows it
/// (its output to a pipe arrives when it quits).
fn readme_check(r: &Record) -> Result<(), String> {
    let out = r.outputs("dpdk-testpmd").concat();
    for want in [
        "VECRING: eth_vecring0: port 0, master of link testcontainer/tap456, mac 00:ec:f4:bb:d9:7f",
        "Driver name: net_vecring",
        "Link status: down",
    ] {
        if !out.contains(want) {
            return Err(format!("testpmd did not print '{want}':\n{out}"));
        }
    }
    Ok(())
}

/// Each master's frames all reached the container's slave (the k-th
/// master is the k-th slave's peer), and the master saw the slave's uid as
/// the host sees the container's root: 100000 when it gave the socket to
/// that uid, 0 in the privileged container.
fn lxc_check(r: &Record) -> Result<(), String> {
    let masters = r.ran("vecring txonly --role master");
    let slaves = r.outputs("vecring rxonly");
    if masters.len() != 3 || slaves.len() != 3 {
        return Err(format!(
            "{} masters and {} slaves, not 3 each",
            masters.len(),
            slaves.len()
        ));
    }
    for ((cmd, master), slave) in masters.into_iter().zip(slaves) {
        let what = format!("line {}", cmd.line);
        let sent = number_after(master, "txonly: sent ");
        let taken = number_after(master, "taken by the peer ");
        let left = number_after(master, "still in the ring ");
        let summary = slave.find("rxonly: summary").map(|at| &slave[at..]);
        let got = summary.and_then(|s| number_after(s, "frames "));
        let bytes = summary.and_then(|s| number_after(s, "bytes "));
        if !(sent > Some(0) && taken == sent && left == Some(0)) {
            return Err(format!(
                "{what}: sent {sent:?}, taken {taken:?}, left {left:?}:\n{master}"
            ));
        }
        if got != sent || bytes != sent.map(|n| n * 64) {
            return Err(format!(
                "{what}: the master sent {sent:?} frames of 64 bytes, the slave received {got:?} frames, {bytes:?} bytes:\n{slave}"
            ));
        }
        let uid = if cmd.text.contains("--owner 100000:100000") {
            100_000
        } else {
            0
        };
        let attached = master.find("slave attached: ").map(|at| &master[at..]);
        let seen = (
            attached.and_then(|a| number_after(a, " uid ")),
            attached.and_then(|a| number_after(a, " gid ")),
        );
        if seen != (Some(uid), Some(uid)) {
            return Err(format!(
                "{what}: the master saw the slave as uid/gid {seen:?}, not {uid}:\n{master}"
            ));
        }
    }
    Ok(())
}

#[test]
fn lxc_guide() {
    require_lxc();
    run_doc(LXC, Duration::from_secs(240), lxc_check);
}

fn require_lxc() {
    assert!(
        Path::new("/usr/bin/lxc-start").exists(),
        "lxc-start missing: run scripts/setup.sh"
    );
}

#[test]
fn readme() {
    run_doc("README.md", Duration::from_secs(120), readme_check);
}

#[test]
fn c_api() {
    run_doc("docs/c-api.md", Duration::from_secs(120), no_check);
}

#[test]
fn operations() {
    run_doc("docs/operations.md", Duration::from_secs(120), no_check);
}

#[test]
fn pmd_readme() {
    run_doc("vecring-pmd/README.md", Duration::from_secs(120), no_check);
}
