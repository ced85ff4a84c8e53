//! Names and paths found on disk are printed escaped: anyone who can
//! write the run directory plants them, and a terminal would obey the
//! control characters in them.

/// `s` with control characters (C0, DEL, C1) and backslashes escaped
/// (`\u{1b}`, `\\`); everything else as is.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || c == '\\' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` as one word for a POSIX shell: as is when it holds only safe
/// characters, otherwise in single quotes (a quote inside becomes
/// `'\''`); control characters are escaped first, so the line stays
/// printable (and such a path is to be removed by hand).
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_string();
    }
    format!("'{}'", printable(s).replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_control_characters() {
        assert_eq!(printable("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(printable("l\n0\u{9b}"), "l\\n0\\u{9b}");
        assert_eq!(printable("plain-name"), "plain-name");
    }

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(
            shell_quote("/run/vecring/d/l0.sock"),
            "/run/vecring/d/l0.sock"
        );
        assert_eq!(shell_quote("/run/x; rm -rf ~"), "'/run/x; rm -rf ~'");
        assert_eq!(shell_quote("/run/it's"), r"'/run/it'\''s'");
        assert_eq!(shell_quote("/run/$(id)"), "'/run/$(id)'");
    }
}
