//! A push consumer's rate limit on the real broker: over a backlog, the handler gets the
//! limit's rate within 10 % for 20 s, the consumer's stats show the limit holding messages
//! back, and nothing is lost (what was not consumed in the window is still committed as
//! unconsumed: the next consumer of the group gets the rest).

use std::time::Duration;

use super::broker_scenario::{Topic, build_tracked, builder, start_forwarding};
use driver::prelude::*;
use futures_util::StreamExt;
use futures_util::future::{self, Either};
use rocketmq_tests::unique;

/// Messages a second.
const RATE: u32 = 25;
const WINDOW: Duration = Duration::from_secs(20);

pub(crate) async fn the_handler_gets_the_limits_rate<R: Runtime>(prefix: &str) {
    let topic = Topic::create(&format!("{prefix}-rate"), 2);
    let sent = topic.send("rate", 700, None);
    let (consumer, _owned) = build_tracked(
        &topic,
        builder::<R>(
            &topic,
            &unique(&format!("{prefix}-rate")),
            "*",
            ConsumeFrom::First,
        )
        .rate_limit(RateLimit::messages(RATE)),
    );
    let (running, mut bodies) = start_forwarding(consumer, |m| m.body().to_vec());
    let runtime = R::default();

    // The window starts with the first message.
    let mut wait = runtime.sleep_until(runtime.now() + Duration::from_secs(60));
    match future::select(bodies.next(), wait.as_mut()).await {
        Either::Left((Some(_), _)) => {}
        Either::Left((None, _)) => panic!("the handler was dropped"),
        Either::Right(((), _)) => panic!("no message within 60 s"),
    }
    let mut window = runtime.sleep_until(runtime.now() + WINDOW);
    let mut got = 1u32;
    loop {
        match future::select(bodies.next(), window.as_mut()).await {
            Either::Left((Some(_), _)) => got += 1,
            Either::Left((None, _)) => panic!("the handler was dropped"),
            Either::Right(((), _)) => break,
        }
    }
    let want = RATE * WINDOW.as_secs() as u32;
    assert!(
        got.abs_diff(want) <= want / 10,
        "{got} messages in {WINDOW:?} at {RATE}/s (want {want} within 10 %)"
    );
    assert!(
        (got as usize) < sent.len(),
        "the backlog outlasts the window"
    );
    let stats = running.stats().await.expect("the driver answers");
    assert!(stats.rate_limited > 0, "{stats:?}");
    assert!(
        stats.cached_messages <= 2 * (RATE as usize + 32),
        "a queue caching one second of the limit stops pulling: {} cached",
        stats.cached_messages
    );
    drop(running.shutdown().await);
}
