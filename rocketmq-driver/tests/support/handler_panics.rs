//! Handlers that panic against the real broker: each message's first delivery panics, half of
//! them before the handler's first `await` (a handler's first poll may run on the driver's own
//! task) and half after one (on the handler's own task). Every message comes again, with its
//! reconsume count raised, and is then acknowledged once; the consumer goes on meanwhile.
//! Orderly, so a failed message comes back after the 1 s suspend, not the retry topic's delay.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::broker_scenario::{
    Topic, WAIT, assert_exactly_once, body_of, builder, shutdown_committed, sleep, wait_for,
};
use driver::prelude::*;
use rocketmq_tests::unique;

/// Messages sent.
const MESSAGES: usize = 8;

pub(crate) async fn panicking_handlers_get_their_messages_again<R: Runtime>(prefix: &str) {
    let topic = Topic::create(prefix, 2);
    let sent = topic.send("panics", MESSAGES, None);
    let calls: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    // Acknowledged bodies, with the reconsume count they arrived with.
    let acked: Arc<Mutex<Vec<(String, i32)>>> = Arc::default();
    let consumer = builder::<R>(&topic, &unique("panics"), "*", ConsumeFrom::First)
        .build()
        .expect("the consumer's configuration is valid");
    let running = {
        let (calls, acked) = (Arc::clone(&calls), Arc::clone(&acked));
        consumer.start_orderly(move |messages: Messages| {
            let (calls, acked) = (Arc::clone(&calls), Arc::clone(&acked));
            async move {
                for message in &messages {
                    let body = body_of(message);
                    let call = {
                        let mut calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
                        let call = calls.entry(body.clone()).or_default();
                        *call += 1;
                        *call
                    };
                    let even = body.ends_with(['0', '2', '4', '6', '8']);
                    if call == 1 && even {
                        panic!("the handler panics on {body} before awaiting");
                    }
                    if call == 1 {
                        sleep::<R>(Duration::from_millis(1)).await;
                        panic!("the handler panics on {body} after awaiting");
                    }
                    acked
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((body, message.reconsume_times()));
                }
                ConsumeOutcome::Success
            }
        })
    };
    let acked_count = || acked.lock().unwrap_or_else(PoisonError::into_inner).len();
    wait_for::<R>("every message acknowledged after its panic", || {
        acked_count() >= MESSAGES
    })
    .await;
    // Anything delivered again after its acknowledgement would show up by now.
    sleep::<R>(Duration::from_secs(2)).await;
    let acked = acked.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let bodies: Vec<String> = acked.iter().map(|(body, _)| body.clone()).collect();
    assert_exactly_once(&bodies, &sent, "acknowledged after a panic");
    for (body, times) in &acked {
        assert!(
            *times >= 1,
            "{body} came again with reconsume count {times}"
        );
    }
    let calls = calls.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(
        calls.values().all(|n| *n == 2),
        "each message handled twice, panicking the first time: {calls:?} (waited up to {WAIT:?})"
    );
    shutdown_committed(running).await;
}
