//! `vecring-device-plugin`: a Kubernetes device plugin that hands out a
//! domain's vecring links as devices of the resource `vecring.dev/<domain>`.
//!
//! A pod that asks for `vecring.dev/k8s: 1` gets one link of domain `k8s`:
//! the environment its application reads (`VECRING_DOMAIN`,
//! `VECRING_LINK`, and `VECRING_NETNS=self` for a link in the pod's network
//! namespace), the domain directory bound by the kubelet (no `hostPath` in
//! the pod's spec), or a CDI device name ([`devices`]). The plugin speaks
//! the kubelet's device-plugin API, v1beta1 ([`api`]), over Unix sockets in
//! the kubelet's directory ([`serve`]).
//!
//! Tested against that API by a test that plays the kubelet
//! (`tests/kubelet.rs`); not against a real kubelet (`docs/kubernetes.md`).

pub mod api;
pub mod devices;
pub mod serve;
