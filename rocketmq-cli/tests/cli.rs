//! The `rmq` binary run as a user runs it, one scenario per module, all in one test binary:
//! `decode_cli` on the captures in `rocketmq-proto/tests/data` (no broker needed), the others
//! against the real local broker (`scripts/broker start`, `NAMESRV_ADDR`; they fail, never skip,
//! without it), `secured_cluster` against the cluster with ACL `scripts/test` starts beside it, or,
//! `consume_unreachable_cluster_fails`, against none; `consumer_status_members` also runs Apache's
//! Java consumer (`scripts/java-peer`); `pop_consume` needs a 5.x broker (the java5 matrix runs
//! it; the 4.9 run skips it).

mod support;

#[path = "cli/consume_killed_costs_little.rs"]
mod consume_killed_costs_little;
#[path = "cli/consume_orderly_broadcast.rs"]
mod consume_orderly_broadcast;
#[path = "cli/consume_rate_limit.rs"]
mod consume_rate_limit;
#[path = "cli/consume_stops_on_signals.rs"]
mod consume_stops_on_signals;
#[path = "cli/consume_trace.rs"]
mod consume_trace;
#[path = "cli/consume_unreachable_cluster_fails.rs"]
mod consume_unreachable_cluster_fails;
#[path = "cli/consumer_status_members.rs"]
mod consumer_status_members;
#[path = "cli/decode_cli.rs"]
mod decode_cli;
#[path = "cli/lag_progress.rs"]
mod lag_progress;
#[path = "cli/pop_consume.rs"]
mod pop_consume;
#[path = "cli/produce_consume_real_broker.rs"]
mod produce_consume_real_broker;
#[path = "cli/produce_sharded_consume_smol.rs"]
mod produce_sharded_consume_smol;
#[path = "cli/query_messages.rs"]
mod query_messages;
#[path = "cli/reset_offset_running_consumer.rs"]
mod reset_offset_running_consumer;
#[path = "cli/secured_cluster.rs"]
mod secured_cluster;
#[path = "cli/tls_cluster.rs"]
mod tls_cluster;
