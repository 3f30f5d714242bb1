//! Header encode and decode, JSON against binary, on a pull response's header (the header the
//! consumer decodes most often), and the encoding of a pull request's (the one it writes most
//! often).
#![allow(missing_docs)] // criterion_group! generates undocumented functions

use bytes::BytesMut;
use criterion::{Criterion, criterion_group, criterion_main};
use rocketmq_benches::{pull_request_header, pull_response_header};
use rocketmq_proto::{FrameDecoder, HeaderEncoding, frame};

fn header(c: &mut Criterion) {
    let command = pull_response_header();
    let mut group = c.benchmark_group("header");
    for (name, encoding) in [
        ("json", HeaderEncoding::Json),
        ("binary", HeaderEncoding::Binary),
    ] {
        group.bench_function(format!("encode/{name}"), |b| {
            let mut buf = BytesMut::with_capacity(1024);
            b.iter(|| {
                buf.clear();
                frame::encode(&command, encoding, &mut buf).expect("fits");
                std::hint::black_box(buf.len())
            })
        });
        let mut wire = BytesMut::new();
        frame::encode(&command, encoding, &mut wire).expect("fits");
        let wire = wire.freeze();
        group.bench_function(format!("decode/{name}"), |b| {
            let mut decoder = FrameDecoder::default();
            b.iter(|| {
                let mut buf = BytesMut::from(&wire[..]);
                std::hint::black_box(decoder.decode(&mut buf).expect("valid").expect("whole"))
            })
        });
    }
    let request = pull_request_header();
    for (name, encoding) in [
        ("json", HeaderEncoding::Json),
        ("binary", HeaderEncoding::Binary),
    ] {
        group.bench_function(format!("encode_pull_request/{name}"), |b| {
            let mut buf = BytesMut::with_capacity(1024);
            b.iter(|| {
                buf.clear();
                frame::encode(&request, encoding, &mut buf).expect("fits");
                std::hint::black_box(buf.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, header);
criterion_main!(benches);
