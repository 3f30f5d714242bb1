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
