//! What the producer asks of its driver ([`ProducerOutput`]) and how it names a send
//! ([`SendId`]).

use super::{SendError, SendResult};
use crate::output::Wire;

/// Names one send, from [`Producer::send`](super::Producer::send) to its
/// [`ProducerOutput::Sent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SendId(pub(crate) u64);

/// Work for the driver. The match is exhaustive on purpose: a driver that does not handle a new
/// kind of work does not compile.
#[derive(Debug)]
#[must_use]
pub enum ProducerOutput {
    /// Work on the connections (open, write, close), as every client of the crate asks it.
    Wire(Wire),
    /// A send is over.
    Sent {
        /// Which.
        send: SendId,
        /// Stored, or why not.
        result: Result<SendResult, SendError>,
        /// The broker its last attempt went to (the one that stored it, on success), or the
        /// name server it last asked when it never got as far as a broker; empty when it asked
        /// nobody.
        peer: String,
    },
}
