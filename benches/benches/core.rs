//! The consumer core alone, without a network: pull response -> delivery -> completion ->
//! committable offset, over 16 queues with 32-message pull responses (128-byte bodies, the
//! properties a producer sets), in messages per second. The target is 5 million
//! messages/s on one core.
//!
//! The consumer is brought to "pulling 16 queues" by answering its requests by hand
//! ([`SteadyConsumer::new`]); an iteration then answers each queue's outstanding pull with a
//! pre-encoded response (a clone of a `Command`, as a driver would hand over a freshly decoded
//! frame), drains the outputs and completes every delivery with `Success`. The time includes
//! decoding the stored records (the core decodes pull bodies itself); `decode_only`, the
//! baseline in the same group, decodes the same 16 bodies with `decode_messages` alone, so the
//! core's own share is the difference.
//!
//! `orderly_batch_*` runs the same rounds through an orderly consumer (queues locked, one
//! delivery per queue at a time), beside the concurrent ones. `as_driver` takes and completes
//! the deliveries as the driver's task does with handlers that finish on their first poll:
//! each completed as soon as it is taken, under the default in-flight limit (20), so every
//! completion hands out the next delivery. `on_demand` does the same with the deliveries
//! handed out on demand (`Consumer::deliver_now`), each settled as it is handed out.
//!
//! Offsets must advance (the core ignores offsets it has consumed), so responses for
//! `ROUNDS` rounds are encoded up front and a fresh consumer is set up, untimed, every
//! `ROUNDS` iterations.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rocketmq_benches::{
    CORE_NAMESRV, CORE_PULL_BATCH, CORE_QUEUES, SteadyConsumer, core_pull_rounds,
};
use rocketmq_consumer_core::{ConsumeMode, ConsumerConfig};
use rocketmq_proto::Command;
use rocketmq_proto::message::{DecodeOptions, decode_messages};

/// Rounds of responses encoded up front (16 x 16 x 32 messages, about 2.6 MB).
const ROUNDS: usize = 16;
/// Body bytes per message.
const BODY_LEN: usize = 128;
/// Messages per iteration: one 32-message response per queue.
const MESSAGES: usize = CORE_QUEUES as usize * CORE_PULL_BATCH;

/// How the deliveries of a round are taken and completed.
#[derive(Clone, Copy)]
enum Drain {
    /// Every delivery taken, then every one completed, with enough in flight that the limit
    /// never holds one back.
    Batched,
    /// As the driver's task does with quick handlers: each completed as it is taken, under
    /// the default in-flight limit (20), so each completion hands out the next delivery.
    AsDriver,
    /// As `AsDriver`, with the deliveries handed out on demand and settled as they are
    /// handed out (`Consumer::deliver_now`).
    OnDemand,
}

fn config(consume_batch_size: usize, mode: ConsumeMode, drain: Drain) -> ConsumerConfig {
    let mut config = ConsumerConfig::new("bench-group", vec![CORE_NAMESRV.to_owned()]);
    config.consume_batch_size = consume_batch_size;
    config.consume_mode = mode;
    if let Drain::Batched = drain {
        config.max_in_flight_deliveries = 1024;
    }
    config
}

/// Runs `iters` rounds; only the rounds themselves are timed, not the set-ups.
fn run(
    iters: u64,
    consume_batch_size: usize,
    mode: ConsumeMode,
    drain: Drain,
    rounds: &[Vec<Command>],
) -> Duration {
    let mut timed = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        let mut steady = SteadyConsumer::new(config(consume_batch_size, mode, drain));
        if let Drain::OnDemand = drain {
            steady.consumer.deliver_on_demand();
        }
        let n = left.min(rounds.len());
        let start = Instant::now();
        for round in &rounds[..n] {
            let round = std::hint::black_box(round);
            let delivered = match drain {
                Drain::Batched => steady.round(round),
                Drain::AsDriver => steady.round_as_driver(round),
                Drain::OnDemand => steady.round_on_demand(round),
            };
            assert_eq!(delivered, MESSAGES);
        }
        timed += start.elapsed();
        left -= n;
        // Untimed: every message was acknowledged, and the clock never reached a timer.
        let stats = steady.consumer.stats();
        assert_eq!(stats.in_flight_deliveries, 0);
        let consumed = (n * CORE_PULL_BATCH) as i64;
        assert!(
            stats
                .queues
                .iter()
                .all(|q| q.committable_offset == consumed)
        );
        assert!(
            steady
                .consumer
                .poll_timeout()
                .is_some_and(|at| at > steady.now)
        );
    }
    timed
}

fn core(c: &mut Criterion) {
    let rounds = core_pull_rounds(ROUNDS, BODY_LEN);
    let mut group = c.benchmark_group("core/16q-32msg-128B");
    group.throughput(Throughput::Elements(MESSAGES as u64));
    group.bench_function("decode_only", |b| {
        let options = DecodeOptions::default();
        let mut next = 0;
        b.iter(|| {
            let round = &rounds[next];
            next = (next + 1) % rounds.len();
            let mut decoded = 0;
            for response in round {
                let batch = decode_messages(std::hint::black_box(&response.body), &options);
                assert!(batch.error.is_none());
                decoded += batch.messages.len();
                std::hint::black_box(batch.messages);
            }
            assert_eq!(decoded, MESSAGES);
        })
    });
    for consume_batch_size in [1, 32] {
        group.bench_function(format!("consume_batch_{consume_batch_size}"), |b| {
            b.iter_custom(|iters| {
                run(
                    iters,
                    consume_batch_size,
                    ConsumeMode::Concurrent,
                    Drain::Batched,
                    &rounds,
                )
            })
        });
        group.bench_function(format!("orderly_batch_{consume_batch_size}"), |b| {
            b.iter_custom(|iters| {
                run(
                    iters,
                    consume_batch_size,
                    ConsumeMode::Orderly,
                    Drain::Batched,
                    &rounds,
                )
            })
        });
    }
    group.bench_function("as_driver", |b| {
        b.iter_custom(|iters| run(iters, 1, ConsumeMode::Concurrent, Drain::AsDriver, &rounds))
    });
    group.bench_function("on_demand", |b| {
        b.iter_custom(|iters| run(iters, 1, ConsumeMode::Concurrent, Drain::OnDemand, &rounds))
    });
    group.finish();
}

criterion_group!(benches, core);
criterion_main!(benches);
