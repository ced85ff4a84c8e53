//! `vecring-cni`: a CNI plugin (specification 1.0, and 0.3/0.4) that
//! gives a container a vecring link on an Open vSwitch with DPDK.
//!
//! - Mode `dpdk`: the switch gets a `dpdk` port whose `eth_vecring` master
//!   listens inside the container's network namespace (`netns=`); the
//!   container's DPDK application (or the `vecring` tool) opens the link
//!   with `netns=self`, nothing mounted. The result names it: an interface
//!   entry whose `socketPath` is the link's abstract name, and whose `mac`
//!   is the one the container's port gets by default.
//! - Mode `tap`: the same port, meeting in the host's run directory, and
//!   `vecring tap` on the host bridging it to a kernel interface it makes
//!   inside the container (`ifname`, default `CNI_IFNAME`).
//!
//! ADD records what it starts before starting it and undoes all of it if
//! a step fails; DEL removes the port (named from the container's id and
//! interface) and stops the bridge, and succeeds when there is nothing to
//! remove; CHECK fails unless the port runs (and, mode `tap`, the bridge
//! and its interface). Errors are CNI error objects on stdout.
//! `docs/kubernetes.md` is the guide.

mod config;
mod error;
mod ovs;
mod state;
mod tap;

use config::{Command, Config, Env, Mode, SUPPORTED_VERSIONS};
use error::{code, CniError, Result};
use serde_json::{json, Value};
use state::{Records, State};
use std::io::Read;
use std::process::ExitCode;
use vecring_core::internal::netns::{abstract_name, NetNs};

/// The most configuration the plugin reads from stdin.
const MAX_CONFIG: u64 = 1 << 20;

fn main() -> ExitCode {
    let mut text = String::new();
    let read = std::io::stdin().take(MAX_CONFIG).read_to_string(&mut text);
    let version = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            v.get("cniVersion")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .filter(|v| SUPPORTED_VERSIONS.contains(&v.as_str()))
        .unwrap_or_else(|| "1.0.0".into());
    let result = read
        .map_err(|e| CniError::new(code::INVALID_CONFIG, format!("reading stdin: {e}"), ""))
        .and_then(|_| run(&text));
    match result {
        Ok(Some(out)) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            println!("{}", e.to_json(&version));
            eprintln!("vecring-cni: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(text: &str) -> Result<Option<Value>> {
    let env = Env::from_env()?;
    if env.command == Command::Version {
        return Ok(Some(json!({
            "cniVersion": "1.0.0",
            "supportedVersions": SUPPORTED_VERSIONS,
        })));
    }
    let cfg = Config::parse(text)?;
    match env.command {
        Command::Add => add(&cfg, &env).map(Some),
        Command::Del => del(&cfg, &env).map(|_| None),
        Command::Check => check(&cfg, &env).map(|_| None),
        Command::Version => unreachable!("answered above"),
    }
}

/// The interface the container's side gets: mode `tap`'s kernel
/// interface, or mode `dpdk`'s link.
fn ifname(cfg: &Config, env: &Env) -> String {
    cfg.ifname.clone().unwrap_or_else(|| env.ifname.clone())
}

/// The link's name: mode `dpdk`'s is the application's (per namespace,
/// so the same in every container); mode `tap`'s is the port's (one run
/// directory for all).
fn link_name(cfg: &Config, env: &Env, port: &str) -> String {
    match cfg.mode {
        Mode::Dpdk => cfg.link.clone().unwrap_or_else(|| env.ifname.clone()),
        Mode::Tap => port.to_string(),
    }
}

fn ovs(cfg: &Config) -> ovs::Ovs {
    ovs::Ovs::new(cfg.ovs_vsctl.clone(), cfg.ovsdb.clone())
}

fn add(cfg: &Config, env: &Env) -> Result<Value> {
    let netns = env.netns.as_deref().expect("checked for ADD");
    NetNs::open(netns).map_err(|e| {
        CniError::new(
            code::INVALID_ENV,
            format!("CNI_NETNS {}: {e}", netns.display()),
            "",
        )
    })?;
    let ifname = ifname(cfg, env);
    let port = ovs::port_name(&env.container_id, &ifname);
    let link = link_name(cfg, env, &port);
    let sw = ovs(cfg);
    sw.check_bridge(&cfg.bridge)?;
    let records = Records::open(&cfg.state_dir)?;
    let key = state::key(&env.container_id, &ifname);
    if records.load(&key)?.is_some() {
        return Err(CniError::new(
            code::INVALID_CONFIG,
            format!(
                "container {} already has {ifname} from this plugin",
                env.container_id
            ),
            "DEL it first",
        ));
    }
    let mut st = State {
        port: port.clone(),
        bridge: cfg.bridge.clone(),
        tap: None,
    };
    records.save(&key, &st)?;
    let made = make(cfg, env, &sw, &mut st, (&records, &key), &ifname, &link);
    if let Err(e) = made {
        // Undo everything: the bridge, the port, the record.
        if let Some(t) = st.tap {
            tap::stop(t);
        }
        let _ = sw.del_port(&cfg.bridge, &port);
        let _ = records.remove(&key);
        return Err(e);
    }
    Ok(result(cfg, env, &ifname, &link, &port))
}

/// ADD's steps after the record: the port, then (mode `tap`) the bridge.
fn make(
    cfg: &Config,
    env: &Env,
    sw: &ovs::Ovs,
    st: &mut State,
    (records, key): (&Records, &str),
    ifname: &str,
    link: &str,
) -> Result<()> {
    let netns = env.netns.as_deref().expect("checked for ADD");
    let mut devargs = format!(
        "eth_vecring_{},domain={},link={link},master=1,queues={}",
        st.port, cfg.domain, cfg.queues
    );
    match cfg.mode {
        Mode::Dpdk => devargs.push_str(&format!(",netns={}", netns.display())),
        Mode::Tap => devargs.push_str(&format!(",run_dir={}", cfg.run_dir.display())),
    }
    // EAL splits device arguments at commas: a path holding one would
    // become another argument.
    let paths = [netns.as_os_str(), cfg.run_dir.as_os_str()];
    if paths.iter().any(|p| p.to_string_lossy().contains(',')) {
        return Err(CniError::new(
            code::INVALID_ENV,
            "CNI_NETNS or runDir holds a comma, which device arguments cannot carry",
            devargs,
        ));
    }
    sw.add_port(&cfg.bridge, &st.port, &devargs, cfg.queues)?;
    if cfg.mode == Mode::Tap {
        let t = tap::start(cfg, netns, ifname, link, (records, key))?;
        st.tap = Some(t);
        records.save(key, st)?;
    }
    Ok(())
}

/// The result: the previous plugin's, with this plugin's interface added.
fn result(cfg: &Config, env: &Env, ifname: &str, link: &str, port: &str) -> Value {
    let netns = env
        .netns
        .as_deref()
        .expect("checked for ADD")
        .display()
        .to_string();
    let ours = match cfg.mode {
        Mode::Tap => json!({
            "name": ifname,
            "mac": mac_text(vecring_core::internal::mac::default_mac(&cfg.domain, port, false)),
            "sandbox": netns,
        }),
        // No kernel interface: the link, named by its socket in the
        // container's namespace, with the MAC the container's port gets by
        // default (the driver derives it from domain, link and role).
        Mode::Dpdk => json!({
            "name": link,
            "mac": mac_text(vecring_core::internal::mac::default_mac(&cfg.domain, link, false)),
            "sandbox": netns,
            "socketPath": format!("@{}", abstract_name(&cfg.domain, link)),
        }),
    };
    let mut out = cfg
        .prev_result
        .clone()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    out["cniVersion"] = json!(cfg.cni_version);
    match out.get_mut("interfaces").and_then(Value::as_array_mut) {
        Some(list) => list.push(ours),
        None => out["interfaces"] = json!([ours]),
    }
    out
}

/// `aa:bb:cc:dd:ee:ff`: the address `vecring tap` gives the interface
/// (derived from domain, link and role, as the driver's ports get theirs).
fn mac_text(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn del(cfg: &Config, env: &Env) -> Result<()> {
    let ifname = ifname(cfg, env);
    let records = Records::open(&cfg.state_dir)?;
    let key = state::key(&env.container_id, &ifname);
    let st = records.load(&key)?;
    if let Some(t) = st.as_ref().and_then(|s| s.tap) {
        tap::stop(t);
    }
    // The port from the record, else from the names (an ADD that failed
    // before writing it, or a record lost with /run at a reboot).
    let (bridge, port) = match &st {
        Some(s) => (s.bridge.clone(), s.port.clone()),
        None => (
            cfg.bridge.clone(),
            ovs::port_name(&env.container_id, &ifname),
        ),
    };
    ovs(cfg).del_port(&bridge, &port)?;
    records.remove(&key)
}

fn check(cfg: &Config, env: &Env) -> Result<()> {
    let ifname = ifname(cfg, env);
    let records = Records::open(&cfg.state_dir)?;
    let key = state::key(&env.container_id, &ifname);
    let st = records.load(&key)?.ok_or_else(|| {
        CniError::new(
            code::UNKNOWN_CONTAINER,
            format!(
                "container {} has no {ifname} from this plugin",
                env.container_id
            ),
            "",
        )
    })?;
    ovs(cfg).check_port(&st.bridge, &st.port)?;
    if cfg.mode == Mode::Tap {
        let alive = st.tap.is_some_and(tap::alive);
        if !alive {
            return Err(CniError::new(
                code::TAP,
                format!("the bridge of {ifname} (vecring tap) is not running"),
                records.path(&format!("{key}.log")).display().to_string(),
            ));
        }
    }
    Ok(())
}
