//! Hostile peers (issue 11) against a smol consumer: a fake name server and broker on loopback
//! (`rocketmq_tests::hostile`) that answer with garbage, a 2 GiB length prefix, a header
//! length beyond the frame, a trickle of one byte a second, a corrupt message batch, or route
//! to a closed port. The scenarios are `rocketmq-driver/tests/support/hostile_peers.rs`; each
//! checks that nothing hostile becomes a message, that the fault is reported, that reconnects
//! back off, and that the process's peak RSS stays within 64 MiB of where it started.
//!
//! A test binary of its own, so that the peak RSS it checks is only these scenarios'. Needs no
//! broker: everything is on 127.0.0.1.

/// The scenarios, from `rocketmq-driver/tests/support/`.
#[path = "../../rocketmq-driver/tests/support"]
mod scenario {
    pub(crate) mod hostile_peers;
}

use rocketmq_tests::hostile::Mode;
use scenario::hostile_peers;

type Rt = rocketmq_smol::SmolRuntime;

/// A broker answering a pull with garbage instead of a frame.
#[test]
fn smol_broker_garbage() {
    smol::block_on(hostile_peers::broker_breaks_the_framing::<Rt>(
        Mode::Garbage,
    ));
}

/// A broker answering a pull with a 2 GiB length prefix and a stream of filler.
#[test]
fn smol_broker_2gib_length_prefix() {
    smol::block_on(hostile_peers::broker_breaks_the_framing::<Rt>(
        Mode::HugeLength,
    ));
}

/// A broker answering a pull with a header length beyond its frame.
#[test]
fn smol_broker_header_beyond_frame() {
    smol::block_on(hostile_peers::broker_breaks_the_framing::<Rt>(
        Mode::HeaderBeyondFrame,
    ));
}

/// A broker answering a pull `SUCCESS` with a corrupt message batch.
#[test]
fn smol_broker_corrupt_batch() {
    smol::block_on(hostile_peers::broker_sends_a_corrupt_batch::<Rt>());
}

/// A name server answering the route with garbage instead of a frame.
#[test]
fn smol_name_server_garbage() {
    smol::block_on(hostile_peers::name_server_breaks_the_framing::<Rt>(
        Mode::Garbage,
    ));
}

/// A name server answering the route with a 2 GiB length prefix and a stream of filler.
#[test]
fn smol_name_server_2gib_length_prefix() {
    smol::block_on(hostile_peers::name_server_breaks_the_framing::<Rt>(
        Mode::HugeLength,
    ));
}

/// A name server answering the route with a header length beyond its frame.
#[test]
fn smol_name_server_header_beyond_frame() {
    smol::block_on(hostile_peers::name_server_breaks_the_framing::<Rt>(
        Mode::HeaderBeyondFrame,
    ));
}

/// A name server trickling its route answer, one byte a second.
#[test]
fn smol_name_server_trickle() {
    smol::block_on(hostile_peers::name_server_trickles::<Rt>());
}

/// A route to a closed port.
#[test]
fn smol_route_to_a_closed_port() {
    smol::block_on(hostile_peers::route_to_a_closed_port::<Rt>());
}
