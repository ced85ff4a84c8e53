//! Generates the gRPC glue of the kubelet's device-plugin API (v1beta1:
//! the `Registration` service the kubelet serves, the `DevicePlugin`
//! service a plugin serves) from the method list below; the messages are
//! written out in `src/api.rs`, so no `.proto` file and no protoc are
//! needed.

use tonic_build::manual::{Builder, Method, Service};

fn method(name: &str, route: &str, input: &str, output: &str, streaming: bool) -> Method {
    let m = Method::builder()
        .name(name)
        .route_name(route)
        .input_type(format!("crate::api::{input}"))
        .output_type(format!("crate::api::{output}"))
        .codec_path("tonic::codec::ProstCodec");
    if streaming {
        m.server_streaming().build()
    } else {
        m.build()
    }
}

fn main() {
    let registration = Service::builder()
        .name("Registration")
        .package("v1beta1")
        .method(method(
            "register",
            "Register",
            "RegisterRequest",
            "Empty",
            false,
        ))
        .build();
    let plugin = Service::builder()
        .name("DevicePlugin")
        .package("v1beta1")
        .method(method(
            "get_device_plugin_options",
            "GetDevicePluginOptions",
            "Empty",
            "DevicePluginOptions",
            false,
        ))
        .method(method(
            "list_and_watch",
            "ListAndWatch",
            "Empty",
            "ListAndWatchResponse",
            true,
        ))
        .method(method(
            "get_preferred_allocation",
            "GetPreferredAllocation",
            "PreferredAllocationRequest",
            "PreferredAllocationResponse",
            false,
        ))
        .method(method(
            "allocate",
            "Allocate",
            "AllocateRequest",
            "AllocateResponse",
            false,
        ))
        .method(method(
            "pre_start_container",
            "PreStartContainer",
            "PreStartContainerRequest",
            "PreStartContainerResponse",
            false,
        ))
        .build();
    Builder::new().compile(&[registration, plugin]);
}
