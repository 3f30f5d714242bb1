//! Header encode and decode, JSON against binary, on a pull response's header (the header the
//! consumer decodes most often), and the encoding of a pull request's (the one it writes most
//! often).
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use bytes::BytesMut;
use criterion::{Criterion, criterion_group, criterion_main};
use rocketmq_benches::{pull_request_header, pull_response_header};
use rocketmq_proto::{FrameDecoder, HeaderEncoding, frame};

fn header(c: &mut Criterion) {
    let response = pull_response_header();
    let request = pull_request_header();
    let mut group = c.benchmark_group("header");
    for (name, encoding) in [
        ("json", HeaderEncoding::Json),
        ("binary", HeaderEncoding::Binary),
    ] {
        for (what, command) in [("encode", &response), ("encode_pull_request", &request)] {
            group.bench_function(format!("{what}/{name}"), |b| {
                let mut buf = BytesMut::with_capacity(1024);
                b.iter(|| {
                    buf.clear();
                    frame::encode(command, encoding, &mut buf).expect("fits");
                    std::hint::black_box(buf.len())
                })
            });
        }
        let mut wire = BytesMut::new();
        frame::encode(&response, encoding, &mut wire).expect("fits");
        let wire = wire.freeze();
        group.bench_function(format!("decode/{name}"), |b| {
            let mut decoder = FrameDecoder::default();
            b.iter(|| {
                let mut buf = BytesMut::from(&wire[..]);
                std::hint::black_box(decoder.decode(&mut buf).expect("valid").expect("whole"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, header);
criterion_main!(benches);
