//! The code blocks of the project's Markdown documents and the commands in
//! them, for `tests/doc_commands.rs`, which runs every command a document
//! shows.
//!
//! A document shows commands in fenced blocks of two languages:
//!
//! - `sh`: a shell script, one command per line (`\` continues a line, and
//!   a here-document belongs to the command that opens it); comments are
//!   the reader's.
//! - `console`: a terminal session: `$ ` starts a command, and the lines
//!   after it, up to the next `$ `, are the output the reader will see. A
//!   line `...` stands for lines left out.
//!
//! Every other fenced block names a language that is not a command
//! (`rust`, `c`, `text`, `mermaid` diagrams, `json` and `yaml`
//! configurations). A fence without a language, an unknown language,
//! a `text` block that looks like a terminal session and an indented code
//! block are all problems: each would let a command into a document
//! without the test seeing it.

/// The languages of blocks whose lines are commands.
pub const COMMAND_LANGUAGES: &[&str] = &["sh", "console"];
/// The languages of blocks that hold no command.
pub const OTHER_LANGUAGES: &[&str] = &["rust", "c", "text", "mermaid", "json", "yaml"];

/// A fenced code block.
#[derive(Debug, Clone)]
pub struct Block {
    /// Line of the opening fence (1-based).
    pub line: usize,
    /// The first word of the info string, up to a comma (`rust,no_run` is
    /// `rust`).
    pub lang: String,
    /// The lines between the fences, without the fence's indentation.
    pub lines: Vec<String>,
    /// The heading the block is under, without its `#`s (empty before the
    /// first heading).
    pub section: String,
}

impl Block {
    /// Whether the block holds commands.
    pub fn has_commands(&self) -> bool {
        COMMAND_LANGUAGES.contains(&self.lang.as_str())
    }

    /// The block's text, one line each.
    pub fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// A document's fenced blocks, and what in it would hide a command.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Every fenced block, in order.
    pub blocks: Vec<Block>,
    /// One line each, naming the document line.
    pub problems: Vec<String>,
}

/// An open fence: its character, length and indentation, and the block.
struct Fence {
    ch: char,
    len: usize,
    indent: usize,
    block: Block,
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_list_item(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// Parses a Markdown document into its fenced blocks.
pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut open: Option<Fence> = None;
    let mut prev_blank = true;
    // The last non-blank line outside fences: an indented line after a
    // blank line continues a list item, or else starts a code block.
    let mut last_text: Option<String> = None;
    let mut section = String::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let indent = indentation(line);
        let t = line.trim_start_matches(' ');
        if let Some(f) = &mut open {
            let closing = t.trim_end();
            if closing.len() >= f.len && closing.chars().all(|c| c == f.ch) {
                out.blocks.push(open.take().unwrap().block);
                prev_blank = false;
                continue;
            }
            let strip = indentation(line).min(f.indent);
            f.block.lines.push(line[strip..].to_string());
            continue;
        }
        let fence_char = t.chars().next().filter(|c| *c == '`' || *c == '~');
        if let Some(ch) = fence_char {
            let len = t.chars().take_while(|c| *c == ch).count();
            if len >= 3 {
                let info = t[len..].trim();
                let lang = info
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .next()
                    .unwrap_or("")
                    .to_string();
                if lang.is_empty() {
                    out.problems.push(format!(
                        "line {n}: a fenced block without a language: tag it sh or console (commands) or one of {OTHER_LANGUAGES:?}"
                    ));
                } else if !COMMAND_LANGUAGES.contains(&lang.as_str())
                    && !OTHER_LANGUAGES.contains(&lang.as_str())
                {
                    out.problems.push(format!(
                        "line {n}: a fenced block in '{lang}': use sh or console for commands, or one of {OTHER_LANGUAGES:?}"
                    ));
                }
                open = Some(Fence {
                    ch,
                    len,
                    indent,
                    block: Block {
                        line: n,
                        lang,
                        lines: Vec::new(),
                        section: section.clone(),
                    },
                });
                continue;
            }
        }
        if t.trim().is_empty() {
            prev_blank = true;
            continue;
        }
        if indent == 0 && t.starts_with('#') {
            section = t.trim_start_matches('#').trim().to_string();
        }
        let in_list = last_text
            .as_deref()
            .is_some_and(|l| indentation(l) > 0 || is_list_item(l));
        if (indent >= 4 || line.starts_with('\t')) && prev_blank && !in_list {
            out.problems.push(format!(
                "line {n}: an indented code block: make it a fenced block with a language"
            ));
        }
        prev_blank = false;
        last_text = Some(line.to_string());
    }
    if let Some(f) = open {
        out.problems.push(format!(
            "line {}: a fenced block that never closes",
            f.block.line
        ));
    }
    for b in &out.blocks {
        if b.lang == "text" && b.lines.iter().any(|l| l.starts_with("$ ")) {
            out.problems.push(format!(
                "line {}: a text block with `$ ` lines: a terminal session is a console block",
                b.line
            ));
        }
    }
    out
}

/// One command of a block.
#[derive(Debug, Clone)]
pub struct Command {
    /// Document line where the command starts.
    pub line: usize,
    /// The command as the shell reads it: continuation lines and
    /// here-documents included, the prompt left out.
    pub text: String,
    /// For a `console` block, the output lines shown after the command
    /// (without blank lines and `...`).
    pub expect: Vec<String>,
}

impl Command {
    /// The command's first line, for messages.
    pub fn head(&self) -> &str {
        self.text.lines().next().unwrap_or("")
    }
}

/// The delimiter of a here-document that `line` opens (`<<EOF`, `<<'EOF'`,
/// `<<-"EOF"`), if any.
fn heredoc(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = &line[at + 2..];
    if rest.starts_with('<') {
        return None; // a here-string
    }
    let word: String = rest
        .trim_start_matches('-')
        .trim_start()
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ';' && *c != '|' && *c != '&')
        .filter(|c| *c != '\'' && *c != '"')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The commands of a block that has commands.
///
/// # Errors
/// A console block with lines before its first `$ `, or an unfinished
/// continuation or here-document.
pub fn commands(block: &Block) -> Result<Vec<Command>, String> {
    let console = block.lang == "console";
    let mut out: Vec<Command> = Vec::new();
    let mut i = 0;
    while i < block.lines.len() {
        let line = &block.lines[i];
        let n = block.line + 1 + i;
        i += 1;
        let first = if console {
            match line.strip_prefix("$ ") {
                Some(c) => c,
                None => {
                    let shown = line.trim();
                    if shown.is_empty() || shown == "..." || shown == "…" {
                        continue;
                    }
                    match out.last_mut() {
                        Some(c) => c.expect.push(line.trim_end().to_string()),
                        None => {
                            return Err(format!("line {n}: output before the first `$ ` command"))
                        }
                    }
                    continue;
                }
            }
        } else {
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            line.as_str()
        };
        let mut text = format!("{first}\n");
        let mut last = first.to_string();
        while last.trim_end().ends_with('\\') {
            let Some(next) = block.lines.get(i) else {
                return Err(format!("line {n}: a continuation `\\` at the block's end"));
            };
            text += next;
            text.push('\n');
            last = next.clone();
            i += 1;
        }
        let opened: Vec<String> = text.lines().filter_map(heredoc).collect();
        for word in opened {
            loop {
                let Some(next) = block.lines.get(i) else {
                    return Err(format!(
                        "line {n}: the here-document {word} does not end in the block"
                    ));
                };
                text += next;
                text.push('\n');
                i += 1;
                if next.trim() == word {
                    break;
                }
            }
        }
        out.push(Command {
            line: n,
            text,
            expect: Vec::new(),
        });
    }
    Ok(out)
}

/// An output line's shape: runs of blanks as one space, every run of
/// digits as `#`. A sample output in a document promises its words, not
/// its numbers (counts, rates, pids and times differ from run to run).
pub fn shape(line: &str) -> String {
    let mut s = String::new();
    let mut last = ' ';
    for c in line.trim().chars() {
        let c = if c.is_ascii_digit() {
            '#'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if (c == '#' || c == ' ') && c == last {
            continue;
        }
        s.push(c);
        last = c;
    }
    s
}

/// Finds the `expect` lines among `actual`'s lines, in order and by
/// [`shape`] (other lines may come between them).
///
/// # Errors
/// The first expected line that does not follow the ones found before it.
pub fn find_in_order<'a>(expect: &'a [String], actual: &str) -> Result<(), &'a str> {
    let mut lines = actual.lines().map(shape);
    for e in expect {
        let want = shape(e);
        if !lines.any(|l| l == want) {
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_languages_and_problems() {
        let doc = "# t\n\n```sh\nls\n```\n\n- item\n\n  ```console\n  $ echo a\n  a\n  ```\n\n```\nx\n```\n\ntext:\n\n    indented\n\n```text\n$ hidden\n```\n";
        let p = parse(doc);
        assert_eq!(p.blocks.len(), 4);
        assert_eq!(p.blocks[1].lang, "console");
        assert_eq!(p.blocks[1].lines, ["$ echo a", "a"]);
        assert_eq!(p.blocks[1].section, "t");
        assert_eq!(p.problems.len(), 3, "{:?}", p.problems);
        assert!(p.problems[0].starts_with("line 14: a fenced block without"));
        assert!(p.problems[1].starts_with("line 20: an indented code block"));
        assert!(p.problems[2].starts_with("line 22: a text block with"));
    }

    #[test]
    fn a_list_continuation_is_not_code() {
        let p = parse("- a\n\n    still the item\n");
        assert!(p.problems.is_empty(), "{:?}", p.problems);
    }

    #[test]
    fn commands_continuations_heredocs_and_output() {
        let sh = Block {
            line: 1,
            lang: "sh".into(),
            section: String::new(),
            lines: [
                "# c",
                "a \\",
                "  b",
                "cat > f <<'EOF'",
                "x",
                "EOF",
                "",
                "c # d",
            ]
            .map(String::from)
            .to_vec(),
        };
        let c = commands(&sh).unwrap();
        let texts: Vec<&str> = c.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(
            texts,
            ["a \\\n  b\n", "cat > f <<'EOF'\nx\nEOF\n", "c # d\n"]
        );
        assert_eq!(c[1].line, 5);
        let console = Block {
            line: 1,
            lang: "console".into(),
            section: String::new(),
            lines: ["$ a", "out 1", "...", "$ b"].map(String::from).to_vec(),
        };
        let c = commands(&console).unwrap();
        assert_eq!(c[0].expect, ["out 1"]);
        assert!(c[1].expect.is_empty());
    }

    #[test]
    fn output_is_matched_by_shape_in_order() {
        let expect = vec!["sent 10 frames".to_string(), "done  in 1.5 s".to_string()];
        assert!(find_in_order(&expect, "x\nsent 12345 frames\ny\ndone in 22.0 s\n").is_ok());
        assert_eq!(
            find_in_order(&expect, "done in 1.5 s\nsent 1 frames\n"),
            Err("done  in 1.5 s")
        );
        assert_eq!(shape(" a  1.25\tb "), "a #.# b");
    }
}
