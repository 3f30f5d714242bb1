//! Queue allocation at scale: 10 000 queues among 1 000 consumers, one consumer's share, for
//! Averagely (the default; target under 5 ms) and ConsistentHash (10 virtual nodes).
//! Queues are given unsorted, as routes from several brokers arrive.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use criterion::{Criterion, criterion_group, criterion_main};
use rocketmq_consumer_core::MessageQueue;
use rocketmq_consumer_core::rebalance::{Strategy, allocate};

fn inputs() -> (Vec<MessageQueue>, Vec<String>) {
    // 10 brokers x 1 000 queues, interleaved so the input is not already sorted.
    let mut queues = Vec::with_capacity(10_000);
    for queue_id in 0..1_000 {
        for broker in 0..10 {
            queues.push(MessageQueue::new(
                "BenchTopic",
                &format!("broker-{broker}"),
                queue_id,
            ));
        }
    }
    let consumers = (0..1_000)
        .rev()
        .map(|i| format!("10.0.{}.{}@{i}", i / 256, i % 256))
        .collect();
    (queues, consumers)
}

fn allocation(c: &mut Criterion) {
    let (queues, consumers) = inputs();
    let me = consumers[500].clone();
    let mut group = c.benchmark_group("allocate/10000q-1000c");
    for (name, strategy) in [
        ("averagely", Strategy::Averagely),
        ("averagely_by_circle", Strategy::AveragelyByCircle),
        (
            "consistent_hash",
            Strategy::ConsistentHash { virtual_nodes: 10 },
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| std::hint::black_box(allocate(&strategy, &me, &queues, &consumers)))
        });
    }
    group.finish();
}

criterion_group!(benches, allocation);
criterion_main!(benches);
