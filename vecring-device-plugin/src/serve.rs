//! The plugin's life with the kubelet: serve the `DevicePlugin` service on
//! its socket in the kubelet's device-plugin directory, register with the
//! kubelet's `Registration` service (`kubelet.sock` there), and when the
//! kubelet restarts (it empties the directory, taking the plugin's socket
//! with it) serve and register again. A failed registration ends the
//! plugin, as the API asks.

use crate::api::device_plugin::device_plugin_server::{DevicePlugin, DevicePluginServer};
use crate::api::registration::registration_client::RegistrationClient;
use crate::api::*;
use crate::devices::Devices;
use hyper_util::rt::TokioIo;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::{ReceiverStream, UnixListenerStream};
use tonic::transport::{Channel, Endpoint, Server, Uri};
use tonic::{Request, Response, Status};

/// How often the plugin looks whether its socket is still there.
const WATCH: Duration = Duration::from_millis(200);

/// The `DevicePlugin` service of one serving.
struct Plugin {
    devices: Arc<Devices>,
    /// Closed when this serving ends: open ListAndWatch streams end too.
    ending: watch::Receiver<bool>,
}

#[tonic::async_trait]
impl DevicePlugin for Plugin {
    async fn get_device_plugin_options(
        &self,
        _: Request<Empty>,
    ) -> Result<Response<DevicePluginOptions>, Status> {
        Ok(Response::new(DevicePluginOptions::default()))
    }

    type ListAndWatchStream = ReceiverStream<Result<ListAndWatchResponse, Status>>;

    /// The devices once (they never change: links are named at start),
    /// then the stream stays open until this serving ends.
    async fn list_and_watch(
        &self,
        _: Request<Empty>,
    ) -> Result<Response<Self::ListAndWatchStream>, Status> {
        let (tx, rx) = mpsc::channel(1);
        let list = ListAndWatchResponse {
            devices: self.devices.list(),
        };
        tx.send(Ok(list))
            .await
            .map_err(|_| Status::internal("the stream closed"))?;
        let mut ending = self.ending.clone();
        tokio::spawn(async move {
            let _ = ending.wait_for(|e| *e).await;
            drop(tx);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_preferred_allocation(
        &self,
        _: Request<PreferredAllocationRequest>,
    ) -> Result<Response<PreferredAllocationResponse>, Status> {
        Err(Status::unimplemented(
            "no preferred allocation (the plugin does not offer one)",
        ))
    }

    async fn allocate(
        &self,
        request: Request<AllocateRequest>,
    ) -> Result<Response<AllocateResponse>, Status> {
        let mut out = AllocateResponse::default();
        for c in &request.get_ref().container_requests {
            let r = self
                .devices
                .allocate(&c.devices_ids)
                .map_err(Status::invalid_argument)?;
            out.container_responses.push(r);
        }
        Ok(Response::new(out))
    }

    async fn pre_start_container(
        &self,
        _: Request<PreStartContainerRequest>,
    ) -> Result<Response<PreStartContainerResponse>, Status> {
        Ok(Response::new(PreStartContainerResponse::default()))
    }
}

/// A gRPC channel over the Unix socket at `path`.
///
/// # Errors
/// The connection's error.
pub async fn unix_channel(path: &Path) -> Result<Channel, tonic::transport::Error> {
    let path = path.to_path_buf();
    // The URI is a placeholder: the connector ignores it.
    Endpoint::from_static("http://[::]:0")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move { UnixStream::connect(path).await.map(TokioIo::new) }
        }))
        .await
}

/// The identity of the file at `path` (device, inode), if a socket.
fn socket_id(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::symlink_metadata(path).ok()?;
    m.file_type().is_socket().then(|| (m.dev(), m.ino()))
}

/// Serves and registers until `stop` says so; serves and registers again
/// whenever the socket goes (a kubelet restart).
///
/// # Errors
/// The socket cannot be made, or the kubelet refused or did not answer the
/// registration.
pub async fn run(
    devices: Devices,
    dir: &Path,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let devices = Arc::new(devices);
    let sock: PathBuf = dir.join(devices.endpoint());
    loop {
        // A socket left at our name is ours (a previous run): the
        // directory is the kubelet's and root's.
        if socket_id(&sock).is_some() {
            let _ = std::fs::remove_file(&sock);
        }
        let listener = UnixListener::bind(&sock)
            .map_err(|e| format!("cannot listen on {}: {e}", sock.display()))?;
        let id = socket_id(&sock);
        let (end_tx, end_rx) = watch::channel(false);
        let plugin = Plugin {
            devices: Arc::clone(&devices),
            ending: end_rx.clone(),
        };
        let mut server_end = end_rx.clone();
        let server = tokio::spawn(
            Server::builder()
                .add_service(DevicePluginServer::new(plugin))
                .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async move {
                    let _ = server_end.wait_for(|e| *e).await;
                }),
        );
        register(&devices, dir).await?;
        eprintln!(
            "vecring-device-plugin: registered {} ({} devices: {}) at {}",
            devices.resource_name(),
            devices.links.len(),
            devices.links.join(", "),
            sock.display()
        );
        // Until told to stop, or the socket is gone or replaced.
        let stopping = loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break true,
                _ = tokio::time::sleep(WATCH) => {
                    if socket_id(&sock) != id {
                        eprintln!(
                            "vecring-device-plugin: {} is gone (the kubelet restarted?): serving and registering again",
                            sock.display()
                        );
                        break false;
                    }
                }
            }
        };
        let _ = end_tx.send(true);
        let _ = server.await;
        if stopping {
            if socket_id(&sock) == id {
                let _ = std::fs::remove_file(&sock);
            }
            return Ok(());
        }
    }
}

/// Registers with the kubelet at `dir/kubelet.sock`.
async fn register(devices: &Devices, dir: &Path) -> Result<(), String> {
    let kubelet = dir.join("kubelet.sock");
    let channel = tokio::time::timeout(Duration::from_secs(10), unix_channel(&kubelet))
        .await
        .map_err(|_| {
            format!(
                "no answer from the kubelet at {} in 10 s",
                kubelet.display()
            )
        })?
        .map_err(|e| format!("cannot reach the kubelet at {}: {e}", kubelet.display()))?;
    let request = RegisterRequest {
        version: VERSION.into(),
        endpoint: devices.endpoint(),
        resource_name: devices.resource_name(),
        options: Some(DevicePluginOptions::default()),
    };
    RegistrationClient::new(channel)
        .register(request)
        .await
        .map(|_| ())
        .map_err(|s| format!("the kubelet refused the registration: {}", s.message()))
}
