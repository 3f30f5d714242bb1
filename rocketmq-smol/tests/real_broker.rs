//! The smol adapter against the real local cluster, all in one test binary: each module is one
//! scenario (its doc says what it pins), run on smol (`async_std_real_broker`: driven from
//! async-std's executor). Needs `scripts/broker start` and `NAMESRV_ADDR`; the tests fail, never
//! skip, without them.
//!
//! The scenarios are generic over the runtime and shared with `rocketmq-tokio`; they live in
//! `rocketmq-driver/tests/support/` and are included once here, as [`scenario`]. The broker
//! restart scenario stops the shared broker, so it runs in a test binary of its own
//! (`broker_restart.rs`).
//!
//! libtest runs the tests of one binary in parallel; every scenario names its topics and groups
//! with `rocketmq_tests::unique`, so they do not meet on the broker.

/// The runtime-generic scenarios of `rocketmq-driver/tests/support/`.
#[path = "../../rocketmq-driver/tests/support"]
mod scenario {
    pub(crate) mod broadcasting;
    pub(crate) mod broker_scenario;
    pub(crate) mod consume_from_timestamp;
    pub(crate) mod group_split;
    pub(crate) mod handler_panics;
    pub(crate) mod handover;
    pub(crate) mod lite_pull;
    pub(crate) mod metrics;
    pub(crate) mod namespaces;
    pub(crate) mod orderly;
    pub(crate) mod pause_resume;
    pub(crate) mod pop_consume;
    pub(crate) mod producer_order;
    pub(crate) mod push_seek;
    pub(crate) mod rate_limit;
    pub(crate) mod real_broker;
    pub(crate) mod rebalance_hooks;
    pub(crate) mod reconsume;
    pub(crate) mod resume_committed;
    pub(crate) mod secured;
    pub(crate) mod sql92_filter;
    pub(crate) mod stats;
    pub(crate) mod subscribe_while_running;
    pub(crate) mod tag_filter;
    pub(crate) mod tls;
}

#[path = "real_broker/async_std_real_broker.rs"]
mod async_std_real_broker;
#[path = "real_broker/broadcasting.rs"]
mod broadcasting;
#[path = "real_broker/handler_panics.rs"]
mod handler_panics;
#[path = "real_broker/handover.rs"]
mod handover;
#[path = "real_broker/lite_pull.rs"]
mod lite_pull;
#[path = "real_broker/metrics.rs"]
mod metrics;
#[path = "real_broker/namespaces.rs"]
mod namespaces;
#[path = "real_broker/orderly.rs"]
mod orderly;
#[path = "real_broker/pause_resume.rs"]
mod pause_resume;
#[path = "real_broker/pop_consume.rs"]
mod pop_consume;
#[path = "real_broker/producer_real_broker.rs"]
mod producer_real_broker;
#[path = "real_broker/push_consume_consume_from_timestamp.rs"]
mod push_consume_consume_from_timestamp;
#[path = "real_broker/push_consume_group_split.rs"]
mod push_consume_group_split;
#[path = "real_broker/push_consume_real_broker.rs"]
mod push_consume_real_broker;
#[path = "real_broker/push_consume_resume_committed.rs"]
mod push_consume_resume_committed;
#[path = "real_broker/push_consume_sql92_filter.rs"]
mod push_consume_sql92_filter;
#[path = "real_broker/push_consume_tag_filter.rs"]
mod push_consume_tag_filter;
#[path = "real_broker/push_seek.rs"]
mod push_seek;
#[path = "real_broker/rate_limit.rs"]
mod rate_limit;
#[path = "real_broker/rebalance_hooks.rs"]
mod rebalance_hooks;
#[path = "real_broker/reconsume.rs"]
mod reconsume;
#[path = "real_broker/secured.rs"]
mod secured;
#[path = "real_broker/stats.rs"]
mod stats;
#[path = "real_broker/subscribe_while_running.rs"]
mod subscribe_while_running;
#[path = "real_broker/tls.rs"]
mod tls;
