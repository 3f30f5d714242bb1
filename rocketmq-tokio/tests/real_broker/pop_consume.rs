//! Pop consumption on tokio against the real local broker, Apache RocketMQ 5.x only (`scripts/broker
//! start --impl java5`, `NAMESRV_ADDR`); the scenarios are
//! `rocketmq-driver/tests/support/pop_consume.rs`. Select them with the name filter `pop_consume::`,
//! and skip them on 4.9 with `--skip pop_consume::` (a bare `pop_` would also match the
//! simulation's and the core's pop tests in a workspace run).

use crate::scenario::pop_consume;
use crate::support;

#[test]
fn tokio_pop_three_members_share_one_queue() {
    support::block_on(pop_consume::three_members_share_one_queue::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-pop-share"));
}

#[test]
fn tokio_pop_failures_come_back_raised_then_dead_letter() {
    support::block_on(pop_consume::failures_come_back_raised_then_dead_letter::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-pop-retry"));
}

#[test]
fn tokio_pop_a_long_handler_keeps_its_message() {
    support::block_on(pop_consume::a_long_handler_keeps_its_message::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-pop-renew"));
}

#[test]
fn tokio_pop_simple_consumer_receives_and_acks() {
    support::block_on(pop_consume::simple_consumer_receives_and_acks::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-pop-simple"));
}

#[test]
fn tokio_pop_a_killed_members_messages_come_back() {
    support::block_on(pop_consume::a_killed_members_messages_come_back::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-pop-kill"));
}

/// On the TLS cluster of the same implementation (`TLS_NAMESRV_ADDR`); here so 4.9 and the
/// Rust broker runs leave it out with the other pop scenarios.
#[test]
fn tokio_pop_consumes_over_tls() {
    support::block_on(crate::scenario::tls::pop_consumes_over_tls::<
        rocketmq_tokio::TokioRuntime,
    >("tokio"));
}

#[test]
fn tokio_pop_orderly_keeps_each_queue_in_order() {
    support::block_on(pop_consume::orderly_pop_keeps_each_queue_in_order::<
        rocketmq_tokio::TokioRuntime,
    >("tokio-pop-orderly"));
}

/// Apache RocketMQ 5.5's own push consumer in pop mode (`scripts/java-pop-peer`: client
/// rebalance off, so it follows the broker's assignment and pops) and ours, in one group on a
/// topic of ONE queue: both get a share of the 60 messages, together every one, none twice.
#[test]
fn tokio_pop_shares_a_group_with_javas_pop_consumer() {
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use crate::scenario::broker_scenario::{Topic, body_of};
    use rocketmq_tokio::{ConsumeOutcome, PopConsumer};

    const MESSAGES: usize = 60;
    support::block_on(async {
        let topic = Topic::create("tokio-pop-java", 1);
        let group = rocketmq_tests::unique("pop-java");
        // Ours first: it sets the group's request mode on the broker to POP.
        let ours: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = Arc::clone(&ours);
        let running = PopConsumer::builder(&group)
            .name_server(&topic.namesrv)
            .subscribe(&topic.name, "*")
            .batch_size(4)
            .max_in_flight_deliveries(2)
            .build()
            .expect("the pop consumer's configuration is valid")
            .start(move |messages| {
                let seen = Arc::clone(&seen);
                async move {
                    if let Ok(mut seen) = seen.lock() {
                        seen.extend(messages.iter().map(body_of));
                    }
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    ConsumeOutcome::Success
                }
            })
            .expect("the pop consumer starts");
        tokio::time::sleep(Duration::from_secs(3)).await;

        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/java-pop-peer");
        let mut java = Command::new(script)
            .args([
                topic.namesrv.as_str(),
                group.as_str(),
                topic.name.as_str(),
                "8",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {script}: {e}"));
        let stdout = java.stdout.take().expect("stdout was piped");
        let (tx, lines) = std::sync::mpsc::channel::<serde_json::Value>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                match serde_json::from_str(&line) {
                    Ok(value) => {
                        if tx.send(value).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!("java-pop-peer: not a JSON line ({e}): {line}"),
                }
            }
        });
        let started = lines
            .recv_timeout(Duration::from_secs(90))
            .expect("Java's pop consumer starts within 90 s");
        assert_eq!(started["event"], "started", "{started}");
        // Let it register and query its assignment before the messages come.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let sent = topic.send("pop-java", MESSAGES, None);

        let mut java_bodies = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = lines.recv_timeout(left) else {
                panic!("Java's pop consumer did not finish within 90 s");
            };
            match line["event"].as_str() {
                Some("message") => {
                    java_bodies.push(line["body"].as_str().unwrap_or_default().to_owned());
                }
                Some("done") => break,
                _ => {}
            }
        }
        let _ = java.wait();
        // Ours keeps popping until the two together have every message (bounded): shutting
        // down earlier would release what it popped last, which the Rust broker refuses to make
        // visible again (README, Compatibility, 10).
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            let have = ours.lock().map(|o| o.len()).unwrap_or_default() + java_bodies.len();
            if have >= sent.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let report = running.shutdown().await.expect("ours shuts down");
        assert_eq!(report.abandoned, 0);
        let ours = ours.lock().map(|o| o.clone()).unwrap_or_default();

        let mut times: BTreeMap<&str, usize> = BTreeMap::new();
        for body in ours.iter().chain(&java_bodies) {
            *times.entry(body.as_str()).or_default() += 1;
        }
        eprintln!(
            "pop, one queue, one group: ours {} messages, Java's {}",
            ours.len(),
            java_bodies.len()
        );
        let twice: Vec<_> = times.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "consumed more than once: {twice:?}");
        let missing: Vec<_> = sent
            .iter()
            .filter(|b| !times.contains_key(b.as_str()))
            .collect();
        assert!(missing.is_empty(), "never consumed: {missing:?}");
        assert!(
            !ours.is_empty() && !java_bodies.is_empty(),
            "both members got a share: ours {}, Java's {}",
            ours.len(),
            java_bodies.len()
        );
    });
}

/// `CHANGE_MESSAGE_INVISIBLETIME` on a popped message: Java 5.5 grants it with a new receipt
/// handle; the Rust broker 1.0 refuses it with `SYSTEM_ERROR` "append check point error, status:
/// WheelTimerMsgIllegal" (its checkpoints carry an absolute `TIMER_DELAY_MS` its timer rejects),
/// which is also why it never brings an unacked message back (README, Compatibility, 10). The
/// consumer reports the refusal as it came; the message stays invisible until its time ends.
#[test]
fn tokio_pop_change_invisibility_by_broker() {
    use std::time::Duration;

    use crate::scenario::broker_scenario::Topic;
    use rocketmq_tests::{BrokerImpl, broker_impl};
    use rocketmq_tokio::{FailureReason, SimpleConsumer, SimpleError};

    support::block_on(async {
        let topic = Topic::create("tokio-pop-change", 1);
        let consumer = SimpleConsumer::builder(rocketmq_tests::unique("pop-change"))
            .name_server(&topic.namesrv)
            .subscribe(&topic.name, "*")
            .build_simple()
            .expect("the simple consumer starts");
        tokio::time::sleep(Duration::from_secs(5)).await;
        let _ = topic.send("change", 1, None);
        let mut got = Vec::new();
        for _ in 0..4 {
            got.extend(
                consumer
                    .receive(1, Duration::from_secs(30))
                    .await
                    .expect("receive is answered"),
            );
            if !got.is_empty() {
                break;
            }
        }
        let message = got
            .first()
            .expect("the message is received within four long polls");
        let changed = consumer
            .change_invisible_duration(&message.receipt, Duration::from_secs(20))
            .await;
        match broker_impl() {
            BrokerImpl::Rust => match changed {
                Err(SimpleError::Failed(FailureReason::Refused(code, Some(remark)))) => {
                    assert_eq!(code, proto::ResponseCode::SYSTEM_ERROR, "{remark}");
                    assert!(remark.contains("WheelTimerMsgIllegal"), "{remark}");
                }
                other => panic!("the Rust broker 1.0 refused this before; now: {other:?}"),
            },
            _ => {
                let renewed = changed.expect("the broker changes the invisibility");
                assert_ne!(
                    renewed.handle, message.receipt.handle,
                    "a new receipt handle"
                );
                consumer.ack(&renewed).await.expect("the new receipt acks");
            }
        }
        consumer
            .shutdown()
            .await
            .expect("the simple consumer shuts down");
    });
}
