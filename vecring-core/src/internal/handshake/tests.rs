//! The handshake's codec and socket calls.

use super::wire::{self, Field};
use super::*;
use crate::abi;
use crate::geometry::Geometry;
use std::io;
use std::time::Duration;

#[test]
fn messages_round_trip() {
    let g = Geometry::new(512, 4096).unwrap();
    let hello = Msg::hello(g, 4, 6 << 20, 42);
    // A Hello carries the geometry and the region's size, each at its
    // place in the datagram.
    assert_eq!(
        (
            hello.slot_count,
            hello.slot_size,
            hello.max_frame_len,
            hello.region_size
        ),
        (512, 4096, g.max_frame_len(), 6 << 20)
    );
    let b = hello.encode();
    assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 512);
    assert_eq!(u64::from_le_bytes(b[24..32].try_into().unwrap()), 42);
    assert_eq!(u64::from_le_bytes(b[48..56].try_into().unwrap()), 6 << 20);
    assert_eq!(u16::from_le_bytes(b[44..46].try_into().unwrap()), 4);
    let back = Msg::decode(&b).unwrap();
    assert_eq!(back.queue_count, 4);
    assert_eq!(back, hello);
    assert_eq!(
        (back.kind, back.generation, back.region_size),
        (Kind::Hello, 42, 6 << 20)
    );
    assert_eq!(back.version_major, abi::VERSION_MAJOR);
    // Every byte of a two-byte field is its own (versions of any value).
    let odd = Msg {
        version_major: 0x0102,
        version_minor: 0x0304,
        ..Msg::new(Kind::Request, 7)
    };
    assert_eq!(Msg::decode(&odd.encode()).unwrap(), odd);
    let nack = Msg::refusal(
        Kind::Nack,
        3,
        "region slot count mismatch: ours 1024, theirs 512",
    );
    assert_eq!(Msg::decode(&nack.encode()).unwrap(), nack);
}

#[test]
fn long_reasons_are_cut_at_a_char_boundary() {
    let reason = "é".repeat(200);
    let msg = Msg::decode(&Msg::refusal(Kind::Reject, 0, &reason).encode()).unwrap();
    // Whole characters only: no half of a two-byte one at the cut.
    assert_eq!(msg.text, "é".repeat(TEXT_LEN / 2));
    // A cut that lands inside a character backs off to its start.
    let odd = format!("a{}", "é".repeat(200));
    let msg = Msg::decode(&Msg::refusal(Kind::Reject, 0, &odd).encode()).unwrap();
    assert_eq!(msg.text, format!("a{}", "é".repeat((TEXT_LEN - 1) / 2)));
    // A reason that fits exactly is kept whole.
    let exact = "x".repeat(TEXT_LEN);
    let msg = Msg::decode(&Msg::refusal(Kind::Reject, 0, &exact).encode()).unwrap();
    assert_eq!(msg.text, exact);
}

#[test]
fn malformed_messages_are_refused() {
    assert_eq!(Msg::decode(&[0u8; 10]), Err(DecodeError::Size { len: 10 }));
    let mut b = Msg::new(Kind::Ack, 1).encode();
    b[0] = b'X';
    assert!(matches!(Msg::decode(&b), Err(DecodeError::Magic { .. })));
    let mut b = Msg::new(Kind::Ack, 1).encode();
    b[4] = 99;
    assert_eq!(Msg::decode(&b), Err(DecodeError::Kind { kind: 99 }));
    assert!(DecodeError::Kind { kind: 99 }
        .to_string()
        .contains("kind 99"));
}

#[test]
fn every_reserved_byte_must_be_zero() {
    let reserved: [Field; 3] = [wire::RESERVED_12, wire::RESERVED_46, wire::RESERVED_56];
    for f in reserved {
        for at in f.range() {
            let mut b = Msg::new(Kind::Ack, 1).encode();
            b[at] = 0x5a;
            assert_eq!(
                Msg::decode(&b),
                Err(DecodeError::NonZero { at, value: 0x5a }),
                "reserved byte {at}"
            );
        }
    }
    // The bytes after the text's terminating NUL as well.
    let mut b = Msg::refusal(Kind::Nack, 1, "no").encode();
    b[wire::TEXT.at + 3] = b'x';
    assert_eq!(
        Msg::decode(&b),
        Err(DecodeError::NonZero {
            at: wire::TEXT.at + 3,
            value: b'x'
        })
    );
}

#[test]
fn unknown_features_are_refused_by_name() {
    let unknown = !abi::FEATURES_KNOWN & (1 << 40);
    let msg = Msg {
        features: abi::FEATURES_KNOWN | unknown,
        ..Msg::new(Kind::Request, 0)
    };
    let err = Msg::decode(&msg.encode()).unwrap_err();
    assert_eq!(err, DecodeError::UnknownFeatures { unknown });
    assert!(err.to_string().contains("0x10000000000"), "{err}");
}

#[test]
fn another_major_is_decoded_for_the_control_layer_to_name() {
    // A message of another major reaches the control layer, which
    // refuses it naming both versions, whatever its later bytes hold.
    let mut b = Msg::new(Kind::Request, 0).encode();
    b[wire::VERSION_MAJOR.range()].copy_from_slice(&(abi::VERSION_MAJOR + 1).to_le_bytes());
    b[wire::RESERVED_12.at] = 1;
    b[wire::FEATURES.at + 7] = 0x80;
    let msg = Msg::decode(&b).unwrap();
    assert_eq!(msg.version_major, abi::VERSION_MAJOR + 1);
    assert_eq!(msg.kind, Kind::Request);
}

#[test]
fn fd_passing_over_a_socket_pair() {
    use std::os::fd::AsFd;
    let dir = std::env::temp_dir().join(format!("vecring-hs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("l.sock");
    let _ = std::fs::remove_file(&path);
    let listener = listen(&path).unwrap();
    let client = connect(&path).unwrap();
    let server = accept(&listener).unwrap();
    let cred = peer_credentials(&server).unwrap();
    assert_eq!(cred.pid as u32, std::process::id());
    let msg = Msg::new(Kind::Ack, 9);
    send(&server, &msg, &[client.as_fd()]).unwrap();
    let (got, fds) = recv(&client, Duration::from_secs(1)).unwrap();
    assert_eq!(got, msg);
    assert_eq!(fds.len(), 1);
    let many: Vec<_> = (0..MAX_FDS).map(|_| client.as_fd()).collect();
    send(&server, &msg, &many).unwrap();
    let (_, fds) = recv(&client, Duration::from_secs(1)).unwrap();
    assert_eq!(
        fds.len(),
        MAX_FDS,
        "a region and the doorbells of 16 queues"
    );
    let too_many: Vec<_> = (0..=MAX_FDS).map(|_| client.as_fd()).collect();
    assert!(send(&server, &msg, &too_many).is_err());
    drop(server);
    let err = recv(&client, Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_master_refuses_unknown_features_naming_them() {
    use crate::{HugepagePolicy, Link, Role};
    let dir = std::env::temp_dir().join(format!("vecring-hs-features-{}", std::process::id()));
    let master = Link::builder("hs", "features")
        .role(Role::Master)
        .run_dir(&dir)
        .hugepages(HugepagePolicy::Never)
        .open()
        .unwrap();
    let conn = connect(master.socket_path().unwrap()).unwrap();
    let unknown = !abi::FEATURES_KNOWN & (1 << 40);
    let request = Msg {
        features: abi::FEATURES_KNOWN | unknown,
        ..Msg::new(Kind::Request, 0)
    };
    send(&conn, &request, &[]).unwrap();
    let (answer, fds) = recv(&conn, Duration::from_secs(10)).unwrap();
    assert_eq!((answer.kind, fds.len()), (Kind::Reject, 0));
    assert!(
        answer.text.contains("unknown feature bits 0x10000000000"),
        "{}",
        answer.text
    );
    drop(master);
    let _ = std::fs::remove_dir_all(&dir);
}
