//! Validation of `domain` and `link` names, which become path components.

/// Longest domain or link name.
pub const MAX_NAME_LEN: usize = 64;

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Empty name.
    #[error("{what} name is empty")]
    Empty {
        /// "domain" or "link".
        what: &'static str,
    },
    /// Longer than [`MAX_NAME_LEN`].
    #[error("{what} name is {len} bytes long; the limit is {MAX_NAME_LEN}")]
    TooLong {
        /// "domain" or "link".
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// A character outside `[A-Za-z0-9_.-]`, a leading `.` or `-`, or `..`.
    #[error("{what} name '{name}' is not allowed: use letters, digits, '_', '-' and '.', not starting with '.' or '-', without '..'")]
    Invalid {
        /// "domain" or "link".
        what: &'static str,
        /// The name, with unprintable characters escaped.
        name: String,
    },
}

/// Checks a `domain` or `link` name (`what` says which) so that it is one
/// safe path component.
///
/// # Errors
/// [`NameError`] says what is wrong.
pub fn validate(what: &'static str, name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { what });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong {
            what,
            len: name.len(),
        });
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if !name.chars().all(allowed) || name.starts_with(['.', '-']) || name.contains("..") {
        return Err(NameError::Invalid {
            what,
            name: name.escape_default().to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for n in [
            "testcontainer",
            "tap456",
            "a",
            "web-1.eth0",
            "A_B",
            &"x".repeat(64),
        ] {
            validate("link", n).unwrap();
        }
    }

    #[test]
    fn refuses_path_like_and_odd_names() {
        assert_eq!(
            validate("domain", ""),
            Err(NameError::Empty { what: "domain" })
        );
        assert!(matches!(
            validate("link", &"x".repeat(65)),
            Err(NameError::TooLong { len: 65, .. })
        ));
        for n in [
            "a/b", "..", "../etc", ".hidden", "-flag", "a..b", "sp ace", "nul\0", "é", "a\nb",
        ] {
            let e = validate("link", n).unwrap_err();
            assert!(matches!(e, NameError::Invalid { .. }), "{n:?}: {e}");
        }
        let msg = validate("link", "a/b").unwrap_err().to_string();
        assert!(msg.starts_with("link name 'a/b' is not allowed"), "{msg}");
    }
}
