//! What runs on the lcores: the RX and TX queues and their burst functions,
//! with everything a burst touches. Nothing here imports the control path
//! (`port`, `ethdev`, `mp`): the control path reaches the queues only
//! through [`Shared`](shared::Shared) (counters, filter, hand-offs, Rx
//! interrupt descriptors) and the queues' own methods.
//!
//! | module | what |
//! |---|---|
//! | `rx` | [`RxQueue`](rx::RxQueue), the RX burst, Rx interrupt enable/disable |
//! | `tx` | [`TxQueue`](tx::TxQueue), the TX burst, and when it is written with non-temporal stores |
//! | `scatter` | a long frame received into a chain of mbufs |
//! | `zerocopy` | zero-copy receive: mbufs attached to ring slots |
//! | `mbuf` | mbuf helpers: segment bytes and room, bulk free |
//! | `filter` | the receive filter as one burst sees it, and its decisions |
//! | `filter_config` | the filter's modes and address tables, as control operations set them |
//! | `shared` | the state the data path and the control path share: per-queue counters with one writer each, a reopened link's ends on their way to the queues |
//! | `setup` | what a queue was set up with, for queue info |

pub(crate) mod filter;
pub(crate) mod filter_config;
pub(crate) mod mbuf;
pub(crate) mod rx;
mod scatter;
pub(crate) mod setup;
pub(crate) mod shared;
pub(crate) mod tx;
pub(crate) mod zerocopy;
