//! Decoding pull responses, against copying the same bytes once (the baseline in the same run):
//! 32 x 1 KiB (a real capture) and 32 x 128 B (synthetic), CRC verification off and on.
//! Throughput is in bytes of response body; messages/s = 32 / time.
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rocketmq_benches::{captured_pull_body, synthetic_pull_body};
use rocketmq_proto::message::{DecodeOptions, decode_messages};

fn bench_body(c: &mut Criterion, name: &str, body: &Bytes) {
    let mut group = c.benchmark_group(format!("pull_decode/{name}"));
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("copy_baseline", |b| {
        b.iter(|| std::hint::black_box(Bytes::copy_from_slice(std::hint::black_box(body))))
    });
    for (label, verify_crc) in [("crc_off", false), ("crc_on", true)] {
        let options = DecodeOptions::default().with_verify_crc(verify_crc);
        group.bench_function(label, |b| {
            b.iter(|| {
                let batch = decode_messages(std::hint::black_box(body), &options);
                assert!(batch.error.is_none());
                std::hint::black_box(batch.messages)
            })
        });
        group.bench_function(format!("{label}_read_bodies"), |b| {
            b.iter(|| {
                let batch = decode_messages(std::hint::black_box(body), &options);
                let total: usize = batch.messages.iter().map(|m| m.body().len()).sum();
                std::hint::black_box(total)
            })
        });
    }
    group.finish();
}

fn decode(c: &mut Criterion) {
    bench_body(c, "32x1KiB_captured", &captured_pull_body());
    bench_body(c, "32x128B", &synthetic_pull_body(32, 128));
}

criterion_group!(benches, decode);
criterion_main!(benches);
