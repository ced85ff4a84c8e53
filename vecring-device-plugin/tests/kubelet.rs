//! The plugin as the kubelet meets it: a fake kubelet (the `Registration`
//! service on `kubelet.sock` in a directory of the test's) receives the
//! plugin's registration, then calls the plugin's `DevicePlugin` service
//! on the socket it named, as the kubelet's device manager does:
//! GetDevicePluginOptions, ListAndWatch, Allocate (a link, and one the
//! domain does not have). A kubelet restart (the plugin's socket removed)
//! brings a second registration and a served socket again; SIGTERM ends
//! the plugin, its socket gone. A kubelet that refuses the registration
//! ends the plugin with the kubelet's reason.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Server;
use tonic::{Code, Request, Response, Status};
use vecring_device_plugin::api::device_plugin::device_plugin_client::DevicePluginClient;
use vecring_device_plugin::api::registration::registration_server::{
    Registration, RegistrationServer,
};
use vecring_device_plugin::api::*;
use vecring_device_plugin::serve::unix_channel;
use vecring_tests::Watchdog;

const LIMIT: Duration = Duration::from_secs(60);
const WAIT: Duration = Duration::from_secs(10);

struct FakeKubelet {
    registered: mpsc::UnboundedSender<RegisterRequest>,
    refuse: bool,
}

#[tonic::async_trait]
impl Registration for FakeKubelet {
    async fn register(&self, r: Request<RegisterRequest>) -> Result<Response<Empty>, Status> {
        let _ = self.registered.send(r.into_inner());
        if self.refuse {
            return Err(Status::already_exists("resource vecring.dev/k8s is taken"));
        }
        Ok(Response::new(Empty {}))
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vecring-dp-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The fake kubelet on `dir/kubelet.sock`; its registrations arrive on the
/// receiver.
fn kubelet(dir: &Path, refuse: bool) -> mpsc::UnboundedReceiver<RegisterRequest> {
    let (tx, rx) = mpsc::unbounded_channel();
    let listener = tokio::net::UnixListener::bind(dir.join("kubelet.sock")).unwrap();
    let service = RegistrationServer::new(FakeKubelet {
        registered: tx,
        refuse,
    });
    tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(UnixListenerStream::new(listener)),
    );
    rx
}

fn plugin(dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_vecring-device-plugin"))
        .args(["--domain", "k8s", "--link", "net1", "--link", "net2"])
        .arg("--kubelet-dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the plugin starts")
}

/// The plugin's stderr, once it has exited.
fn stderr(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn registered(rx: &mut mpsc::UnboundedReceiver<RegisterRequest>) -> RegisterRequest {
    tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("the plugin registers within 10 s")
        .expect("the fake kubelet runs")
}

async fn client(sock: &Path) -> DevicePluginClient<tonic::transport::Channel> {
    DevicePluginClient::new(
        unix_channel(sock)
            .await
            .expect("the plugin's socket answers"),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_kubelet_registers_lists_and_allocates_links_and_survives_a_restart() {
    let _w = Watchdog::new("device plugin: kubelet", LIMIT);
    let dir = scratch("kubelet");
    runtime().block_on(async {
        let mut regs = kubelet(&dir, false);
        let mut child = plugin(&dir);
        let r = registered(&mut regs).await;
        assert_eq!(
            (
                r.version.as_str(),
                r.endpoint.as_str(),
                r.resource_name.as_str()
            ),
            ("v1beta1", "vecring-k8s.sock", "vecring.dev/k8s")
        );
        let sock = dir.join(&r.endpoint);
        let mut c = client(&sock).await;
        let options = c.get_device_plugin_options(Empty {}).await.unwrap();
        assert!(!options.get_ref().pre_start_required);

        let mut watch = c.list_and_watch(Empty {}).await.unwrap().into_inner();
        let first = watch.message().await.unwrap().expect("a device list");
        let devices: Vec<(String, String)> = first
            .devices
            .iter()
            .map(|d| (d.id.clone(), d.health.clone()))
            .collect();
        assert_eq!(
            devices,
            [
                ("net1".into(), "Healthy".into()),
                ("net2".into(), "Healthy".into())
            ]
        );

        let asked = AllocateRequest {
            container_requests: vec![ContainerAllocateRequest {
                devices_ids: vec!["net2".into()],
            }],
        };
        let got = c.allocate(asked).await.unwrap().into_inner();
        let envs = &got.container_responses[0].envs;
        assert_eq!(envs["VECRING_DOMAIN"], "k8s");
        assert_eq!(envs["VECRING_LINK"], "net2");
        assert_eq!(envs["VECRING_NETNS"], "self");
        assert!(got.container_responses[0].mounts.is_empty());

        let unknown = AllocateRequest {
            container_requests: vec![ContainerAllocateRequest {
                devices_ids: vec!["net9".into()],
            }],
        };
        let e = c.allocate(unknown).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().contains("net9 is no link"), "{}", e.message());

        // The kubelet restarts: it empties its directory.
        std::fs::remove_file(&sock).unwrap();
        let again = registered(&mut regs).await;
        assert_eq!(again.endpoint, "vecring-k8s.sock");
        // The open stream of the old serving ends; the new one serves.
        let ended = tokio::time::timeout(WAIT, watch.message()).await;
        assert!(
            matches!(ended, Ok(Ok(None)) | Ok(Err(_))),
            "the old ListAndWatch stream did not end"
        );
        let mut c = client(&sock).await;
        let mut watch = c.list_and_watch(Empty {}).await.unwrap().into_inner();
        assert_eq!(watch.message().await.unwrap().unwrap().devices.len(), 2);

        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let mut status = None;
        for _ in 0..100 {
            if let Some(s) = child.try_wait().unwrap() {
                status = Some(s);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let status = status.expect("the plugin ends within 5 s of SIGTERM");
        assert!(status.success(), "{status}: {}", stderr(child));
        assert!(!sock.exists(), "the plugin's socket remains");
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_registration_ends_the_plugin_with_the_kubelets_reason() {
    let _w = Watchdog::new("device plugin: refused", LIMIT);
    let dir = scratch("refused");
    runtime().block_on(async {
        let mut regs = kubelet(&dir, true);
        let mut child = plugin(&dir);
        registered(&mut regs).await;
        let mut status = None;
        for _ in 0..200 {
            if let Some(s) = child.try_wait().unwrap() {
                status = Some(s);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            status.is_some_and(|s| !s.success()),
            "the plugin did not end"
        );
        let err = stderr(child);
        assert!(
            err.contains("refused the registration: resource vecring.dev/k8s is taken"),
            "{err}"
        );
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_kubelet_is_a_clear_error() {
    let _w = Watchdog::new("device plugin: no kubelet", LIMIT);
    let dir = scratch("none");
    let out = Command::new(env!("CARGO_BIN_EXE_vecring-device-plugin"))
        .args(["--domain", "k8s", "--link", "net1", "--kubelet-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot reach the kubelet at"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
