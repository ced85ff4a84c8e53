//! Runs the commands of the project's documents by plans, for
//! `tests/doc_commands.rs`, which holds the plans: which blocks run, how
//! (in the foreground, in terminals of their own, with what typed into
//! them), and which are left out and why.
//!
//! A plan finds its block by a piece of its text (and the start of the
//! heading it is under); [`Policy::coverage`] checks that every command
//! block of every document has a plan, is skipped or is excluded, and
//! [`Policy::run_doc`] runs a document's blocks, in order, in a sandbox
//! (`sandbox.rs`), then checks each command's status and the output the
//! document shows (`markdown::find_in_order`).

use crate::markdown::{self, Block, Command};
use crate::sandbox::{self, Action};
use crate::Watchdog;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;
use Event::*;
use Step::*;

/// How a block runs.
#[derive(Debug, Clone, Copy)]
pub enum How {
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
pub enum Step {
    /// In the foreground: it must exit with status 0.
    Fg,
    /// In terminal `.0`, which goes on while the document does; with
    /// `Some(text)`, the document goes on once the output has `text`.
    Term(&'static str, Option<&'static str>),
}

/// What the reader does around a block.
#[derive(Debug, Clone, Copy)]
pub enum Event {
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
pub struct Plan {
    /// The document, from the repository root.
    pub doc: &'static str,
    /// The start of the heading the block is under ("": any).
    pub section: &'static str,
    /// Text that occurs in exactly one command block of `doc` under
    /// `section`.
    pub block: &'static str,
    /// How its commands run, or why they do not.
    pub how: How,
    /// What the reader does before the block.
    pub before: &'static [Event],
    /// What the reader does after it.
    pub after: &'static [Event],
}

/// A block whose commands run in the foreground.
pub const fn run(doc: &'static str, block: &'static str) -> Plan {
    Plan {
        doc,
        section: "",
        block,
        how: How::Run,
        before: &[],
        after: &[],
    }
}

/// A block whose commands run by `steps`, then `after`.
pub const fn steps(
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

/// `run` for a block under the heading that starts with `section`.
pub const fn run_in(doc: &'static str, section: &'static str, block: &'static str) -> Plan {
    Plan {
        section,
        ..run(doc, block)
    }
}

/// `steps` for a block under the heading that starts with `section`.
pub const fn steps_in(
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

/// What runs and what does not.
pub struct Policy {
    /// The repository root: the documents' directory and the working
    /// directory of their commands.
    pub root: PathBuf,
    /// Documents not run, with the reason (a path, or a directory ending
    /// in `/`).
    pub excluded_docs: &'static [(&'static str, &'static str)],
    /// Commands never run, by how they start, with the reason. A block
    /// whose commands are all skipped needs no plan.
    pub skipped: &'static [(&'static str, &'static str)],
    /// The plans of the command blocks.
    pub plans: &'static [Plan],
    /// Run in each sandbox before a document's first command.
    pub preamble: &'static str,
}

/// The documents whose commands count: `README.md`, every `.md` under
/// `docs/`, and the `README.md` of each directory at the top.
pub fn documents(root: &Path) -> Vec<String> {
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
    let mut docs = vec!["README.md".to_string()];
    markdown_under(&root.join("docs"), "docs", &mut docs);
    for e in std::fs::read_dir(root).unwrap().flatten() {
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

impl Policy {
    /// Why `doc` is not run, if it is not.
    pub fn excluded_doc(&self, doc: &str) -> Option<&'static str> {
        self.excluded_docs
            .iter()
            .find(|(p, _)| doc == *p || (p.ends_with('/') && doc.starts_with(p)))
            .map(|(_, why)| *why)
    }

    fn skipped(&self, cmd: &Command) -> bool {
        self.skipped
            .iter()
            .any(|(start, _)| cmd.text.trim_start().starts_with(start))
    }

    /// Reads `doc` and finds each command block's plan.
    ///
    /// # Errors
    /// One line per problem: the document's own (`markdown::parse`), a block
    /// without a plan, a plan that finds no block or several, a plan whose
    /// steps do not match the block's commands.
    pub fn plan(&self, doc: &str) -> Result<Vec<Planned>, Vec<String>> {
        let text = std::fs::read_to_string(self.root.join(doc)).unwrap();
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
            let commands: Vec<Command> =
                commands.into_iter().filter(|c| !self.skipped(c)).collect();
            let plans: Vec<&Plan> = self
                .plans
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
                (None, true) | (Some(How::Excluded(_)), _) => {}
                (None, false) => problems.push(format!(
                    "{doc}: line {}: a command block that is neither run nor excluded \
                     (give it a plan in tests/doc_commands.rs, or exclude it there \
                     with the reason): {}",
                    block.line,
                    commands[0].head()
                )),
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
        for p in self.plans.iter().filter(|p| p.doc == doc) {
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

    /// Checks that every command block of every document is run or
    /// excluded; returns what is not run and why, one line each.
    ///
    /// # Errors
    /// Every problem [`Policy::plan`] finds, a plan for a document that is
    /// not run, and a skip rule that skips nothing.
    pub fn coverage(&self) -> Result<Vec<String>, Vec<String>> {
        let docs = documents(&self.root);
        let mut problems = Vec::new();
        let mut not_run = Vec::new();
        for doc in &docs {
            if let Some(why) = self.excluded_doc(doc) {
                not_run.push(format!("{doc}: {why}"));
                continue;
            }
            match self.plan(doc) {
                Ok(planned) => {
                    for b in planned {
                        if let Some(Plan {
                            how: How::Excluded(why),
                            ..
                        }) = b.plan
                        {
                            not_run.push(format!("{doc}: line {}: {why}", b.block.line));
                        }
                    }
                }
                Err(p) => problems.extend(p),
            }
        }
        for (start, why) in self.skipped {
            not_run.push(format!("commands starting '{start}': {why}"));
        }
        for p in self.plans {
            if !docs.iter().any(|d| d == p.doc) || self.excluded_doc(p.doc).is_some() {
                problems.push(format!(
                    "a plan for {}, which is not a document run here",
                    p.doc
                ));
            }
        }
        let all: Vec<Command> = docs
            .iter()
            .filter(|d| self.excluded_doc(d).is_none())
            .flat_map(|d| {
                let text = std::fs::read_to_string(self.root.join(d)).unwrap();
                markdown::parse(&text)
                    .blocks
                    .into_iter()
                    .filter(Block::has_commands)
                    .flat_map(|b| markdown::commands(&b).unwrap_or_default())
            })
            .collect();
        for c in &all {
            if let Some(arg) = plugin_in_checkout(&c.text) {
                problems.push(format!(
                    "'{}' loads a plugin from inside the checkout ({arg}): EAL refuses a -d \
                     plugin below a world-writable directory, so this fails in a clone under \
                     /tmp; show the install (scripts/build-pmd.sh) and load the installed driver",
                    c.text.lines().next().unwrap_or_default()
                ));
            }
        }
        for (start, _) in self.skipped {
            if !all.iter().any(|c| c.text.trim_start().starts_with(start)) {
                problems.push(format!("the skip rule '{start}' skips no command"));
            }
        }
        if problems.is_empty() {
            Ok(not_run)
        } else {
            Err(problems)
        }
    }
}

/// The `-d` argument of a command (EAL's plugin option) that lies inside
/// the checkout: a relative path, or one under `target/`. Such a plugin
/// works only in a checkout no world-writable directory contains, so a
/// document must load the installed driver instead.
pub fn plugin_in_checkout(command: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "-d")
        .map(|w| w[1].trim_matches(|c| c == '"' || c == '\''))
        .chain(words.iter().filter_map(|w| w.strip_prefix("-d")))
        .filter(|a| a.contains(".so"))
        .find(|a| {
            !(a.starts_with('/') || a.starts_with('$') || a.starts_with('~'))
                || a.contains("target/")
        })
        .map(str::to_string)
}

/// Whether `plan` is `block`'s.
fn finds(plan: &Plan, block: &Block) -> bool {
    block.section.starts_with(plan.section) && block.text().contains(plan.block)
}

/// A command block of a document, its commands that run, and its plan.
pub struct Planned {
    /// The block.
    pub block: Block,
    /// Its commands, but those skipped.
    pub commands: Vec<Command>,
    /// Its plan, if any.
    pub plan: Option<&'static Plan>,
}

/// Held while a document runs.
static ONE_DOC: Mutex<()> = Mutex::new(());

/// A command that ran: its id in the sandbox, and what the document shows.
struct Ran<'a> {
    id: String,
    command: &'a Command,
}

/// What a document's check sees: its commands in order, with their outputs.
pub struct Record<'a> {
    ran: Vec<Ran<'a>>,
    outcome: &'a sandbox::Outcome,
}

impl Record<'_> {
    /// The commands that contain `needle`, in document order, with their
    /// outputs.
    pub fn ran(&self, needle: &str) -> Vec<(&Command, &str)> {
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
    pub fn outputs(&self, needle: &str) -> Vec<&str> {
        self.ran(needle).into_iter().map(|(_, o)| o).collect()
    }
}

/// The number after the first `label` in `text`.
pub fn number_after(text: &str, label: &str) -> Option<u64> {
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

impl Policy {
    /// The sandbox's actions for `planned`'s blocks, and the commands they run.
    fn actions<'a>(&self, planned: &'a [Planned]) -> (Vec<Action>, Vec<Ran<'a>>) {
        let mut actions = vec![Action::Fg {
            id: "preamble".into(),
            script: self.preamble.into(),
        }];
        let mut ran = Vec::new();
        for b in planned {
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
        (actions, ran)
    }

    /// Runs `doc`'s commands in a sandbox and checks them, then `check`.
    ///
    /// # Panics
    /// If the document's plans do not hold, not as root, or when a command
    /// fails or does not print what the document shows, or `check` fails.
    pub fn run_doc(&self, doc: &str, limit: Duration, check: fn(&Record) -> Result<(), String>) {
        let _alone = ONE_DOC.lock().unwrap_or_else(PoisonError::into_inner);
        crate::require_root!();
        let planned = self
            .plan(doc)
            .unwrap_or_else(|p| panic!("\n{}", p.join("\n")));
        let (actions, ran) = self.actions(&planned);
        let _w = Watchdog::new("doc commands", limit + Duration::from_secs(60));
        let name = doc.replace('/', "-").trim_end_matches(".md").to_lowercase();
        let outcome = sandbox::run(&name, &self.root, &actions, limit);
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
}
