//! `Msg::decode` on arbitrary datagrams: it never panics, and a message it
//! accepts survives `encode` and `decode` again.
//!
//! Written against `Msg::decode` / `Msg::encode` and the message's public
//! fields only, so that new message kinds need no change here.
//!
//! The reason text is the one field that is not carried through as is:
//! `decode` escapes it (`str::escape_debug`: a peer's text goes into logs)
//! and `encode` cuts it to the text field's size, so a decoded text that
//! escaping changes, or one grown past the field, comes back different.
//! For such texts the target checks every other field and that the text
//! comes back escaped and cut as `decode` and `encode` promise.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use vecring_core::internal::handshake::{Kind, Msg, MSG_LEN};

/// Bytes of text a message carries, asked of `encode` rather than restated.
fn text_capacity() -> usize {
    static CAP: OnceLock<usize> = OnceLock::new();
    *CAP.get_or_init(|| {
        let long = Msg::refusal(Kind::Nack, 1, &"x".repeat(MSG_LEN));
        Msg::decode(&long.encode())
            .expect("an encoded message decodes")
            .text
            .len()
    })
}

/// `s` cut to at most `max` bytes at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn check(b: &[u8]) {
    let Ok(m) = Msg::decode(b) else { return };
    let encoded = m.encode();
    assert_eq!(encoded.len(), MSG_LEN);
    let again = Msg::decode(&encoded).expect("an encoded message decodes");
    // Every field but the text is carried exactly.
    assert_eq!(
        Msg {
            text: m.text.clone(),
            ..again.clone()
        },
        m,
        "fields changed through encode/decode"
    );
    let stable = m.text.escape_debug().to_string() == m.text;
    if stable && m.text.len() <= text_capacity() {
        assert_eq!(again, m, "decode(encode(m)) != m");
        assert_eq!(
            again.encode(),
            encoded,
            "encode is not a function of the message"
        );
    } else {
        let expected = cut(&m.text, text_capacity()).escape_debug().to_string();
        assert_eq!(
            again.text, expected,
            "text not escaped and cut as documented"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    // The datagram as received, whatever its length ...
    check(data);
    // ... and fitted to the message size, so that the fuzzer's mutations
    // reach the fields whatever length it tries.
    let mut b = [0u8; MSG_LEN];
    let n = data.len().min(MSG_LEN);
    b[..n].copy_from_slice(&data[..n]);
    check(&b);
});
