//! The iceoryx2 peer of `link-compare` (cargo feature `iceoryx2`): the
//! Rust shared-memory IPC users would pick, publish-subscribe between two
//! processes, zero-copy.
//!
//! Set up as a link would need it: a `[u8]` slice payload (a frame of any
//! length up to the publisher's maximum, here the frame length measured,
//! iceoryx2's best case), one publisher and one subscriber per service, no
//! history, and no overflow (`enable_safe_overflow(false)`, the default
//! `RetryUntilDelivered` back-pressure: a full subscriber queue makes the
//! publisher wait, as a full vecring ring does, instead of overwriting
//! frames not yet read). Each frame size has a service of its own whose
//! subscriber queue holds as many frames as the vecring ring does at that
//! size ([`crate::frames_in_flight`]). The publisher copies each frame
//! into a loaned sample and sends it; the subscriber copies each frame out
//! into a `[u8; N]` buffer: copy on both sides, as the link's benchmark
//! does. iceoryx2 has no batch call: every frame is one loan, one send and
//! one receive.
//!
//! A ping and a pong service of 64-byte frames carry the latency
//! ping-pong.

use crate::frames_in_flight;
use iceoryx2::port::publisher::Publisher;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::prelude::*;

/// The frame lengths with a throughput service.
pub const SIZES: [usize; 2] = [64, 1514];
/// The length of the ping-pong's frames.
const PING_LEN: usize = 64;

type Pub = Publisher<ipc::Service, [u8], ()>;
type Sub = Subscriber<ipc::Service, [u8], ()>;
type Error = Box<dyn std::error::Error>;

/// The service `prefix/what`, created by whichever side comes first.
fn service(
    node: &Node<ipc::Service>,
    prefix: &str,
    what: &str,
    queue: usize,
) -> Result<
    iceoryx2::service::port_factory::publish_subscribe::PortFactory<ipc::Service, [u8], ()>,
    Error,
> {
    let name: ServiceName = format!("{prefix}/{what}").as_str().try_into()?;
    Ok(node
        .service_builder(&name)
        .publish_subscribe::<[u8]>()
        .max_publishers(1)
        .max_subscribers(1)
        .history_size(0)
        .subscriber_max_buffer_size(queue)
        .subscriber_max_borrowed_samples(1)
        .enable_safe_overflow(false)
        .open_or_create()?)
}

fn node() -> Result<Node<ipc::Service>, Error> {
    set_log_level(LogLevel::Error);
    Ok(NodeBuilder::new().create::<ipc::Service>()?)
}

fn publisher(
    node: &Node<ipc::Service>,
    prefix: &str,
    what: &str,
    len: usize,
    queue: usize,
) -> Result<Pub, Error> {
    Ok(service(node, prefix, what, queue)?
        .publisher_builder()
        .initial_max_slice_len(len)
        .max_loaned_samples(1)
        .create()?)
}

fn subscriber(
    node: &Node<ipc::Service>,
    prefix: &str,
    what: &str,
    queue: usize,
) -> Result<Sub, Error> {
    Ok(service(node, prefix, what, queue)?
        .subscriber_builder()
        .buffer_size(queue)
        .create()?)
}

/// Loans a sample of `frame.len()` bytes, copies `frame` into it and
/// sends it (waiting while the subscriber's queue is full).
fn send(publisher: &Pub, frame: &[u8]) {
    let sample = publisher
        .loan_slice_uninit(frame.len())
        .expect("iceoryx2: loan a sample");
    sample
        .write_from_slice(frame)
        .send()
        .expect("iceoryx2: send");
}

/// Spins until a sample arrives, and copies it into `buf`.
fn receive_into(subscriber: &Sub, buf: &mut [u8]) {
    loop {
        match subscriber.receive().expect("iceoryx2: receive") {
            Some(sample) => {
                buf.copy_from_slice(sample.payload());
                return;
            }
            None => std::hint::spin_loop(),
        }
    }
}

/// The sending side (the benchmark's master process).
pub struct IceMaster {
    // The ports before the node: they are dropped first.
    publishers: Vec<(usize, Pub)>,
    ping: Pub,
    pong: Sub,
    _node: Node<ipc::Service>,
}

impl IceMaster {
    /// The publishers of the services under `prefix` (a name unique to
    /// this run) and the pong's subscriber.
    ///
    /// # Errors
    /// A service or port cannot be created.
    pub fn new(prefix: &str) -> Result<Self, Error> {
        let node = node()?;
        let publishers = SIZES
            .iter()
            .map(|&len| {
                let queue = frames_in_flight(len);
                Ok((
                    len,
                    publisher(&node, prefix, &format!("fps{len}"), len, queue)?,
                ))
            })
            .collect::<Result<_, Error>>()?;
        Ok(IceMaster {
            publishers,
            ping: publisher(&node, prefix, "ping", PING_LEN, 1)?,
            pong: subscriber(&node, prefix, "pong", 1)?,
            _node: node,
        })
    }

    /// Sends `n` frames of `N` bytes, in turn from `frames`.
    ///
    /// # Panics
    /// If `N` is not one of [`SIZES`], or iceoryx2 fails.
    #[inline(never)]
    pub fn send<const N: usize>(&self, frames: &[[u8; N]], n: u64) {
        let (_, publisher) = self
            .publishers
            .iter()
            .find(|(len, _)| *len == N)
            .expect("a service for this frame length");
        for i in 0..n as usize {
            send(publisher, &frames[i % frames.len()]);
        }
    }

    /// `trips` ping-pongs of one `frame` (of 64 bytes) with
    /// [`IceSlave::echo`].
    pub fn ping_pong(&self, frame: &[u8], trips: u32) {
        let mut buf = vec![0u8; frame.len()];
        for _ in 0..trips {
            send(&self.ping, frame);
            receive_into(&self.pong, &mut buf);
        }
    }
}

/// The receiving side (the benchmark's slave process).
pub struct IceSlave {
    subscribers: Vec<(usize, Sub)>,
    ping: Sub,
    pong: Pub,
    _node: Node<ipc::Service>,
}

impl IceSlave {
    /// The subscribers of the services under `prefix` and the pong's
    /// publisher.
    ///
    /// # Errors
    /// A service or port cannot be created.
    pub fn new(prefix: &str) -> Result<Self, Error> {
        let node = node()?;
        let subscribers = SIZES
            .iter()
            .map(|&len| {
                let queue = frames_in_flight(len);
                Ok((len, subscriber(&node, prefix, &format!("fps{len}"), queue)?))
            })
            .collect::<Result<_, Error>>()?;
        Ok(IceSlave {
            subscribers,
            ping: subscriber(&node, prefix, "ping", 1)?,
            pong: publisher(&node, prefix, "pong", PING_LEN, 1)?,
            _node: node,
        })
    }

    /// Receives `n` frames of `N` bytes, each copied into the next of
    /// `batch` buffers of the rtrb peer consumer's type (`[u8; N]`).
    ///
    /// # Panics
    /// If `N` is not one of [`SIZES`], or iceoryx2 fails.
    #[inline(never)]
    pub fn receive<const N: usize>(&self, n: u64, batch: usize) {
        let (_, subscriber) = self
            .subscribers
            .iter()
            .find(|(len, _)| *len == N)
            .expect("a service for this frame length");
        let mut bufs: Vec<[u8; N]> = (0..batch).map(|_| [0u8; N]).collect();
        for i in 0..n as usize {
            receive_into(subscriber, &mut bufs[i % batch]);
        }
        std::hint::black_box(&bufs);
    }

    /// Answers `trips` pings with a pong of the same bytes.
    pub fn echo(&self, trips: u32) {
        let mut buf = [0u8; PING_LEN];
        for _ in 0..trips {
            receive_into(&self.ping, &mut buf);
            send(&self.pong, &buf);
        }
    }
}
