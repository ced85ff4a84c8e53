/// The parameter string DPDK shows users (`RTE_PMD_REGISTER_PARAM_STRING`
/// in glue.c, read by `dpdk-pmdinfo`) lists exactly the keys the parser
/// accepts.
#[test]
fn parameter_string_lists_every_key() {
    let glue = include_str!("../sys/glue.c");
    let start = glue
        .find("RTE_PMD_REGISTER_PARAM_STRING")
        .expect("glue.c registers a parameter string");
    let block = &glue[start..start + glue[start..].find(");").expect("closed")];
    let listed: Vec<&str> = block
        .split('"')
        .skip(1)
        .step_by(2)
        .flat_map(|piece| piece.split_whitespace())
        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k))
        .collect();
    assert_eq!(
        listed, VALID_KEYS,
        "glue.c's parameter string and VALID_KEYS differ"
    );
}

use super::*;
use vecring_core::name::MAX_NAME_LEN;
use vecring_core::MAX_QUEUES;

fn ok(args: &str) -> Devargs {
    Devargs::parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn err(args: &str) -> DevargsError {
    match Devargs::parse(args) {
        Ok(d) => panic!("{args:?} accepted: {d:?}"),
        Err(e) => e,
    }
}

#[test]
fn minimal_defaults_to_slave() {
    let d = ok("domain=testcontainer,link=tap456");
    assert_eq!(d.domain, "testcontainer");
    assert_eq!(d.link, "tap456");
    assert!(!d.master);
    assert_eq!(d.role_name(), "slave");
    assert_eq!(d.mac, None);
    assert_eq!(d.socket, None);
    assert_eq!(d.slots, None);
    assert_eq!(d.slot_size, None);
    assert_eq!(d.queues, None);
    assert_eq!(d.run_dir, None);
    assert_eq!(d.hugepages, HugepagePolicy::Prefer);
    assert!(!d.zero_copy);
    assert!(!d.hold_back);
}

#[test]
fn every_key() {
    let d = ok(
        "domain=d-1.x,link=l_2,master=true,mac=00:EC:f4:bb:d9:7f,socket=1,\
                slots=4096,slot_size=2048,queues=4,run_dir=/var/run/vr,hugepages=require,zero_copy=yes,\
                hold_back=on",
    );
    assert!(d.master);
    assert_eq!(d.mac(), [0x00, 0xec, 0xf4, 0xbb, 0xd9, 0x7f]);
    assert_eq!(d.socket, Some(1));
    assert_eq!(d.slots, Some(4096));
    assert_eq!(d.slot_size, Some(2048));
    assert_eq!(d.queues, Some(4));
    assert_eq!(d.run_dir, Some(PathBuf::from("/var/run/vr")));
    assert_eq!(d.hugepages, HugepagePolicy::Require);
    assert!(d.zero_copy);
    assert!(d.hold_back);
}

#[test]
fn empty_args_and_empty_items() {
    assert_eq!(err(""), DevargsError::Missing { key: KEY_DOMAIN });
    assert_eq!(err("domain=a"), DevargsError::Missing { key: KEY_LINK });
    assert_eq!(err("link=a"), DevargsError::Missing { key: KEY_DOMAIN });
    // Stray commas are harmless.
    assert_eq!(ok(",domain=a,,link=b,").link, "b");
}

#[test]
fn name_rules_agree_with_vecring_core() {
    // This module repeats the core's rules to name the key and the
    // offending character; the two must accept exactly the same names.
    let long = "x".repeat(MAX_NAME_LEN);
    let too_long = "x".repeat(MAX_NAME_LEN + 1);
    for name in [
        "a",
        "tap456",
        "web-1.eth0",
        "A_B",
        "a.b.c",
        "x-",
        "x.",
        &long,
        "",
        ".",
        "..",
        ".a",
        "-a",
        "a..b",
        "a/b",
        "a b",
        "a\0b",
        "é",
        "a:b",
        "a,b",
        "a=b",
        &too_long,
    ] {
        let ours = parse_name(KEY_LINK, name).is_ok();
        let core = vecring_core::name::validate("link", name).is_ok();
        assert_eq!(ours, core, "{name:?}: devargs {ours}, vecring-core {core}");
    }
}

#[test]
fn booleans() {
    for (v, want) in [
        ("true", true),
        ("TRUE", true),
        ("1", true),
        ("yes", true),
        ("on", true),
        ("false", false),
        ("0", false),
        ("No", false),
        ("off", false),
    ] {
        assert_eq!(
            ok(&format!("domain=a,link=b,master={v}")).master,
            want,
            "{v}"
        );
    }
    for v in ["", "2", "maybe", "tru"] {
        let e = err(&format!("domain=a,link=b,master={v}"));
        assert_eq!(e.key(), Some("master"), "{v}");
    }
}

#[test]
fn names() {
    let long = "x".repeat(MAX_NAME_LEN);
    assert_eq!(ok(&format!("domain={long},link=b")).domain, long);
    for bad in [
        "",
        ".hidden",
        "..",
        "a/b",
        "a b",
        "é",
        "a..b/",
        &"x".repeat(MAX_NAME_LEN + 1),
    ] {
        for key in [KEY_DOMAIN, KEY_LINK] {
            let args = if key == KEY_DOMAIN {
                format!("domain={bad},link=b")
            } else {
                format!("domain=a,link={bad}")
            };
            let e = err(&args);
            assert_eq!(e.key(), Some(key), "{args}");
            assert!(e.to_string().contains(&format!("for key '{key}'")), "{e}");
        }
    }
    for bad in ["-flag", "c..d", "a/b", "sp ace"] {
        assert_eq!(
            err(&format!("domain=a,link={bad}")).key(),
            Some(KEY_LINK),
            "{bad}"
        );
    }
    // Single dots and dashes inside a name are fine.
    assert_eq!(ok("domain=a.b,link=c-d.e").link, "c-d.e");
}

#[test]
fn mac_values() {
    for bad in [
        "zz",
        "00:11:22:33:44",
        "00:11:22:33:44:55:66",
        "0:11:22:33:44:55",
        "000:11:22:33:44:55",
        "00-11-22-33-44-55",
        "00:11:22:33:44:gg",
        "01:00:5e:00:00:01",
        "ff:ff:ff:ff:ff:ff",
        "00:00:00:00:00:00",
        "",
    ] {
        let e = err(&format!("domain=a,link=b,mac={bad}"));
        assert_eq!(e.key(), Some(KEY_MAC), "{bad}");
    }
    let e = err("domain=a,link=b,mac=zz");
    assert!(
        e.to_string()
            .starts_with("invalid value 'zz' for key 'mac': "),
        "{e}"
    );
}

#[test]
fn default_mac_is_stable_local_unicast_and_differs_by_role() {
    let m = default_mac("dom", "lnk", true);
    let s = default_mac("dom", "lnk", false);
    assert_ne!(m, s);
    for mac in [m, s] {
        assert_eq!(mac[0] & 0x01, 0, "unicast");
        assert_eq!(mac[0] & 0x02, 0x02, "locally administered");
    }
    assert_eq!(m, default_mac("dom", "lnk", true), "stable");
    assert_ne!(m, default_mac("dom", "lnk2", true));
    assert_ne!(m, default_mac("dom2", "lnk", true));
    // The separator keeps ("ab","c") and ("a","bc") apart.
    assert_ne!(default_mac("ab", "c", true), default_mac("a", "bc", true));
    // Pinned values: a change here changes every deployed default MAC.
    assert_eq!(
        format_mac(&default_mac("testcontainer", "tap456", true)),
        "f2:69:ef:96:be:1d"
    );
    assert_eq!(
        format_mac(&default_mac("testcontainer", "tap456", false)),
        "9e:ce:66:29:af:bc"
    );
    assert_eq!(ok("domain=dom,link=lnk,master=1").mac(), m);
}

#[test]
fn numbers() {
    assert_eq!(ok("domain=a,link=b,socket=0").socket, Some(0));
    assert_eq!(
        ok("domain=a,link=b,socket=4294967295").socket,
        Some(u32::MAX)
    );
    for bad in ["", "-1", "+1", "1x", "0x1", "4294967296", " 1"] {
        assert_eq!(
            err(&format!("domain=a,link=b,socket={bad}")).key(),
            Some(KEY_SOCKET),
            "{bad}"
        );
    }
    assert_eq!(ok("domain=a,link=b,slots=2").slots, Some(2));
    for bad in ["0", "1", "3", "1000", "33554432", "x"] {
        assert_eq!(
            err(&format!("domain=a,link=b,slots={bad}")).key(),
            Some(KEY_SLOTS),
            "{bad}"
        );
    }
    assert_eq!(ok("domain=a,link=b,slot_size=64").slot_size, Some(64));
    // The ring format's limits, as vecring-core states them.
    assert_eq!(ok("domain=a,link=b,slot_size=32768").slot_size, Some(32768));
    for bad in ["0", "32", "96", "100", "65536", "131072", "2k"] {
        assert_eq!(
            err(&format!("domain=a,link=b,slot_size={bad}")).key(),
            Some(KEY_SLOT_SIZE),
            "{bad}"
        );
    }
}

#[test]
fn run_dir_and_hugepages() {
    for bad in ["", "relative", "/a/../b", "/.."] {
        assert_eq!(
            err(&format!("domain=a,link=b,run_dir={bad}")).key(),
            Some(KEY_RUN_DIR),
            "{bad}"
        );
    }
    assert_eq!(
        ok("domain=a,link=b,hugepages=Never").hugepages,
        HugepagePolicy::Never
    );
    assert_eq!(
        ok("domain=a,link=b,hugepages=prefer").hugepages,
        HugepagePolicy::Prefer
    );
    assert_eq!(
        err("domain=a,link=b,hugepages=always").key(),
        Some(KEY_HUGEPAGES)
    );
}

/// `queues` is 1 to vecring-core's `MAX_QUEUES` (16), on either role: a
/// master's count, a slave's expectation; the error names the range.
#[test]
fn queue_counts() {
    assert_eq!(MAX_QUEUES, 16);
    for (args, want) in [
        ("domain=a,link=b,master=1,queues=1", 1),
        ("domain=a,link=b,master=1,queues=16", 16),
        ("domain=a,link=b,queues=4", 4),
    ] {
        assert_eq!(ok(args).queues, Some(want), "{args}");
    }
    for bad in ["0", "17", "65536", "65537", "-1", "x", "", "4 "] {
        let e = err(&format!("domain=a,link=b,master=1,queues={bad}"));
        assert_eq!(e.key(), Some(KEY_QUEUES), "{bad}");
    }
    assert_eq!(
        err("domain=a,link=b,master=1,queues=17").to_string(),
        "invalid value '17' for key 'queues': expected a queue pair count from 1 to 16"
    );
    assert_eq!(
        err("domain=a,link=b,queues=2,queues=2"),
        DevargsError::Duplicate { key: KEY_QUEUES }
    );
}

/// The edges of the ranges: the largest values are accepted, one past
/// them and each kind of malformed value refused.
#[test]
fn range_edges() {
    assert_eq!(
        ok("domain=a,link=b,master=1,slots=1048576").slots,
        Some(1 << 20)
    );
    assert_eq!(
        err("domain=a,link=b,master=1,slots=2097152").key(),
        Some(KEY_SLOTS)
    );
    assert_eq!(
        ok("domain=a,link=b,master=1,socket_mode=0777").socket_mode,
        Some(0o777)
    );
    for bad in [
        "socket_mode=",
        "socket_mode=00660",
        "socket_mode=1000",
        "socket_mode=0o",
    ] {
        assert_eq!(
            err(&format!("domain=a,link=b,master=1,{bad}")).key(),
            Some(KEY_SOCKET_MODE),
            "{bad}"
        );
    }
}

#[test]
fn ownership_keys() {
    let d = ok("domain=a,link=b,master=1,owner=100000:100001,allow_uid=100000:0,socket_mode=0600");
    assert_eq!(d.owner, Some((100000, 100001)));
    assert_eq!(d.allow_uids, vec![100000, 0]);
    assert_eq!(d.socket_mode, Some(0o600));
    assert_eq!(
        ok("domain=a,link=b,master=1,socket_mode=660").socket_mode,
        Some(0o660)
    );
    assert!(ok("domain=a,link=b").allow_uids.is_empty());
    assert_eq!(
        ok("domain=a,link=b,master_uid=65534:0").master_uids,
        vec![65534, 0]
    );
    assert_eq!(
        Devargs::parse("domain=a,link=b,master=1,master_uid=0").unwrap_err(),
        DevargsError::SlaveOnly {
            key: KEY_MASTER_UID
        }
    );
    for (args, key) in [
        ("owner=1", KEY_OWNER),
        ("owner=1:", KEY_OWNER),
        ("owner=a:b", KEY_OWNER),
        ("owner=1:2:3", KEY_OWNER),
        ("allow_uid=", KEY_ALLOW_UID),
        ("allow_uid=1::2", KEY_ALLOW_UID),
        ("allow_uid=-1", KEY_ALLOW_UID),
        ("socket_mode=0680", KEY_SOCKET_MODE),
        ("socket_mode=7777", KEY_SOCKET_MODE),
        ("socket_mode=", KEY_SOCKET_MODE),
        ("socket_mode=rw", KEY_SOCKET_MODE),
    ] {
        let e = err(&format!("domain=a,link=b,master=1,{args}"));
        assert_eq!(e.key(), Some(key), "{args}: {e}");
    }
    let e = err("domain=a,link=b,owner=1:2");
    assert_eq!(e, DevargsError::MasterOnly { key: KEY_OWNER });
    assert!(
        e.to_string()
            .contains("key 'owner' applies to the master only"),
        "{e}"
    );
    assert_eq!(
        err("domain=a,link=b,master=no,allow_uid=5"),
        DevargsError::MasterOnly { key: KEY_ALLOW_UID }
    );
}

#[test]
fn unknown_duplicate_malformed() {
    let e = err("domain=a,link=b,speed=25G");
    assert_eq!(
        e,
        DevargsError::UnknownKey {
            key: "speed".into()
        }
    );
    assert!(e.to_string().contains("unknown key 'speed'"), "{e}");
    assert!(e.to_string().contains("domain, link, master"), "{e}");
    // Keys are case-sensitive, like DPDK's kvargs.
    assert_eq!(err("Domain=a,link=b").key(), Some("Domain"));
    assert_eq!(
        err("domain=a,link=b,link=c"),
        DevargsError::Duplicate { key: KEY_LINK }
    );
    let e = err("domain=a,link=b,master");
    assert_eq!(
        e,
        DevargsError::Malformed {
            arg: "master".into()
        }
    );
    assert_eq!(e.key(), None);
    assert!(e.to_string().contains("expected key=value"));
    // The first offending key is reported, before a missing one.
    assert_eq!(err("mac=zz").key(), Some(KEY_MAC));
}

#[test]
fn value_may_contain_equals_sign_only_where_valid() {
    // `split_once` keeps everything after the first '=' as the value.
    assert_eq!(err("domain=a=b,link=c").key(), Some(KEY_DOMAIN));
    assert_eq!(
        ok("domain=a,link=c,run_dir=/x=y").run_dir,
        Some(PathBuf::from("/x=y"))
    );
}

#[test]
fn netns_names_a_namespace_and_excludes_the_socket_file_keys() {
    assert_eq!(ok("domain=a,link=b").netns, None);
    assert_eq!(ok("domain=a,link=b,netns=self").netns, Some(Netns::Own));
    assert_eq!(
        ok("domain=a,link=b,master=1,netns=/run/netns/pod1").netns,
        Some(Netns::Path(PathBuf::from("/run/netns/pod1")))
    );
    for bad in [
        "netns=",
        "netns=pod1",
        "netns=/run/netns/../x",
        "netns=SELF",
    ] {
        let e = err(&format!("domain=a,link=b,{bad}"));
        assert_eq!(e.key(), Some(KEY_NETNS), "{bad}: {e}");
    }
    for (with, key) in [
        ("owner=1:1", KEY_OWNER),
        ("socket_mode=0600", KEY_SOCKET_MODE),
    ] {
        let e = err(&format!("domain=a,link=b,master=1,netns=self,{with}"));
        assert_eq!(
            e,
            DevargsError::Conflict {
                key: KEY_NETNS,
                with: key
            }
        );
        assert!(e.to_string().contains("no socket file"), "{e}");
    }
}

/// `env=1`: names not given come from VECRING_DOMAIN, VECRING_LINK and
/// VECRING_RUN_DIR; given keys win; values are checked and the error names
/// the variable; without `env=1` the environment is never read.
#[test]
fn names_from_the_environment_with_env() {
    let vars = |list: &'static [(&'static str, &'static str)]| {
        move |var: &str| {
            list.iter()
                .find(|(k, _)| *k == var)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let cdi = vars(&[
        ("VECRING_DOMAIN", "pd"),
        ("VECRING_LINK", "eth0"),
        ("VECRING_RUN_DIR", "/srv/vr"),
    ]);
    let d = Devargs::parse_with_env("env=1", &cdi).unwrap();
    assert_eq!((d.domain.as_str(), d.link.as_str()), ("pd", "eth0"));
    assert_eq!(d.run_dir, Some(PathBuf::from("/srv/vr")));
    let d = Devargs::parse_with_env("env=yes,link=eth1,run_dir=/run/x", &cdi).unwrap();
    assert_eq!((d.domain.as_str(), d.link.as_str()), ("pd", "eth1"));
    assert_eq!(d.run_dir, Some(PathBuf::from("/run/x")));
    assert_eq!(
        Devargs::parse_with_env("link=eth0", &cdi).unwrap_err(),
        DevargsError::Missing { key: KEY_DOMAIN },
        "the environment is read only with env=1"
    );
    let domain_only = vars(&[("VECRING_DOMAIN", "pd"), ("VECRING_RUN_DIR", "/srv/vr")]);
    let e = Devargs::parse_with_env("env=1", &domain_only).unwrap_err();
    assert_eq!(e.key(), Some(KEY_LINK));
    assert_eq!(
        e.to_string(),
        "missing required key 'link', and VECRING_LINK is not set (env=1)"
    );
    assert!(Devargs::parse_with_env("env=1,link=a", &domain_only).is_ok());
    for (bad, key, var) in [
        (
            vars(&[("VECRING_DOMAIN", "../x"), ("VECRING_LINK", "l")]),
            KEY_DOMAIN,
            "VECRING_DOMAIN",
        ),
        (
            vars(&[("VECRING_DOMAIN", "d"), ("VECRING_LINK", "")]),
            KEY_LINK,
            "VECRING_LINK",
        ),
        (
            vars(&[
                ("VECRING_DOMAIN", "d"),
                ("VECRING_LINK", "l"),
                ("VECRING_RUN_DIR", "rel"),
            ]),
            KEY_RUN_DIR,
            "VECRING_RUN_DIR",
        ),
    ] {
        let e = Devargs::parse_with_env("env=1", &bad).unwrap_err();
        assert_eq!(e.key(), Some(key), "{e}");
        assert!(
            e.to_string().contains(&format!("(from {var}, env=1)")),
            "{e}"
        );
    }
    // A device in network-namespace mode: VECRING_NETNS=self.
    let netns = vars(&[
        ("VECRING_DOMAIN", "pd"),
        ("VECRING_LINK", "eth0"),
        ("VECRING_NETNS", "self"),
    ]);
    let d = Devargs::parse_with_env("env=1", &netns).unwrap();
    assert_eq!((d.netns, d.run_dir), (Some(Netns::Own), None));
    let e = Devargs::parse_with_env("env=1,master=1,owner=1:1", &netns).unwrap_err();
    assert_eq!(e.key(), Some(KEY_NETNS), "{e}");
    let bad = vars(&[
        ("VECRING_DOMAIN", "d"),
        ("VECRING_LINK", "l"),
        ("VECRING_NETNS", "pod"),
    ]);
    let e = Devargs::parse_with_env("env=1", &bad).unwrap_err();
    assert!(e.to_string().contains("(from VECRING_NETNS, env=1)"), "{e}");
    assert_eq!(err("domain=d,link=l,env=1,env=0").key(), Some(KEY_ENV));
    assert_eq!(err("domain=d,link=l,env=maybe").key(), Some(KEY_ENV));
}
