//! The bare pull loop: the ceiling a consumer is measured against. One `PULL_MESSAGE` in flight
//! per queue on one connection per broker, messages decoded and counted, nothing else.

use std::collections::BTreeMap;
use std::time::Instant;

use bytes::BytesMut;
use rocketmq_proto::headers::{PullMessageRequest, PullMessageResponse, pull_sys_flag};
use rocketmq_proto::message::{DecodeOptions, decode_messages};
use rocketmq_proto::{Command, FrameDecoder, HeaderEncoding, RequestCode, ResponseCode, frame};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::measure::{cpu_seconds, drain_report};
use crate::stamp;

/// Every queue of `topic` pulled from its first offset with one request of `batch` messages in
/// flight per queue on one connection per broker, messages decoded and counted, until each
/// queue's pull reaches the queue's end; the child's report of it.
pub async fn bare(namesrv: &str, topic: &str, batch: i32) -> Value {
    let route = rmq_cli::admin::route(&rmq_cli::admin::Cluster::new(namesrv), topic)
        .unwrap_or_else(|e| panic!("route: {e}"));
    let mut by_broker: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for queue in route.subscribe_queues(topic) {
        let addr = route
            .master_addr(queue.broker_name())
            .unwrap_or_else(|| panic!("no master for {}", queue.broker_name()));
        by_broker
            .entry(addr.to_owned())
            .or_default()
            .push(queue.queue_id());
    }
    let group = format!("e2e-bare-{}", stamp());
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let mut messages = 0;
    let mut bytes = 0;
    for (addr, queues) in by_broker {
        let (m, b) = bare_broker(&addr, &group, topic, &queues, batch).await;
        messages += m;
        bytes += b;
    }
    drain_report(messages, bytes, started, cpu_before)
}

/// A pull of `batch` messages from `offset`, framed.
fn pull_request(
    group: &str,
    topic: &str,
    (queue_id, offset): (i32, i64),
    batch: i32,
    opaque: i32,
) -> BytesMut {
    let header = PullMessageRequest {
        consumer_group: group.to_owned(),
        topic: topic.to_owned(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: batch,
        // The subscription travels in the request, so no heartbeat is needed; no suspend: the
        // backlog is there, and an empty queue is done.
        sys_flag: pull_sys_flag::SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".to_owned()),
        sub_version: 0,
        expression_type: Some("TAG".to_owned()),
        ..PullMessageRequest::default()
    };
    let mut request = Command::request(RequestCode::PULL_MESSAGE, &header);
    request.opaque = opaque;
    let mut buf = BytesMut::new();
    frame::encode(&request, HeaderEncoding::Json, &mut buf).expect("a pull request fits a frame");
    buf
}

/// Drains `queues` of `topic` on the broker at `addr`: messages and body bytes.
async fn bare_broker(
    addr: &str,
    group: &str,
    topic: &str,
    queues: &[i32],
    batch: i32,
) -> (u64, u64) {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.set_nodelay(true).expect("TCP_NODELAY can be set");
    // The opaque of a pull is its queue's index, so answers find their queue directly.
    let mut pending = queues.len();
    for (i, &queue_id) in queues.iter().enumerate() {
        let opaque = i32::try_from(i).expect("queue index fits");
        stream
            .write_all(&pull_request(group, topic, (queue_id, 0), batch, opaque))
            .await
            .expect("write a pull");
    }
    let options = DecodeOptions::default();
    let mut decoder = FrameDecoder::default();
    let mut buf = BytesMut::with_capacity(1 << 20);
    let (mut messages, mut bytes) = (0_u64, 0_u64);
    while pending > 0 {
        let n = stream
            .read_buf(&mut buf)
            .await
            .expect("read from the broker");
        assert!(n > 0, "the broker closed the connection");
        while let Some(response) = decoder.decode(&mut buf).expect("the broker sends frames") {
            let index = usize::try_from(response.opaque).expect("own opaque");
            let queue_id = queues[index];
            let header: PullMessageResponse = response
                .header()
                .unwrap_or_else(|e| panic!("pull response of queue {queue_id}: {e}: {response:?}"));
            match response.response_code() {
                ResponseCode::SUCCESS => {
                    let batch = decode_messages(&response.body, &options);
                    messages += batch.messages.len() as u64;
                    bytes += batch
                        .messages
                        .iter()
                        .map(|m| m.body().len() as u64)
                        .sum::<u64>();
                }
                ResponseCode::PULL_NOT_FOUND
                | ResponseCode::PULL_RETRY_IMMEDIATELY
                | ResponseCode::PULL_OFFSET_MOVED => {}
                other => panic!("pull of queue {queue_id} answered {other}: {response:?}"),
            }
            if header.next_begin_offset >= header.max_offset {
                pending -= 1;
            } else {
                let request = pull_request(
                    group,
                    topic,
                    (queue_id, header.next_begin_offset),
                    batch,
                    response.opaque,
                );
                stream.write_all(&request).await.expect("write a pull");
            }
        }
    }
    (messages, bytes)
}
